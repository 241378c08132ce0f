// The op harness of the gradient tests: one node of a model called through its CPU kernel exactly as the
// graph executor calls it, and check_op, which runs every check on one op (forward vs a double-precision
// reference, backward vs central finite differences, write/accumulate rules, n = 0). Shared by
// test_gradients_norms.cpp and test_gradients_attention.cpp; the method and its tolerances are explained at
// the top of test_gradients_norms.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/error.hpp"
#include "graph/model_spec.hpp"
#include "graph/op_def.hpp"
#include "graph/pass_info.hpp"
#include "interface/op_call.h"

#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

// cmocka.h 1.1.5 has no extern "C" guards of its own.
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace op_harness {

using dpt::ModelSpec;
using dpt::OpAttrs;
using dpt::Shape;
using dpt_test::Comparison;
using dpt_test::TestRng;

constexpr double kLayerTolerance = 1e-3;
constexpr double kForwardTolerance = 1e-5;
constexpr double kSumTolerance = 1e-5;

inline std::string at(const char *what, size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}
inline std::string at(const char *what, size_t k, size_t i) {
  return std::string(what) + std::to_string(k) + "[" + std::to_string(i) + "]";
}

inline OpAttrs ints(std::initializer_list<int64_t> values) {
  OpAttrs a;
  size_t i = 0;
  for (int64_t v : values) a.ints[i++] = v;
  return a;
}
inline OpAttrs reals(std::initializer_list<double> values) {
  OpAttrs a;
  size_t i = 0;
  for (double v : values) a.reals[i++] = v;
  return a;
}

using Inputs = std::vector<std::vector<float>>;  // per input of a node: n samples each

// ---------------------------------------------------------------------------------------------------------
// The op harness: one node of a model as the graph executor hands it to a kernel, for any number of inputs,
// with parameters, buffers and statistics. It builds the node's dpt_op_call (shapes from the model's
// tensors, attributes copied, host vectors as memory), owns saved (sized as the executor sizes it: n times
// the per-sample part plus the per-pass part), scratch and the two sets of statistics, and calls
// dpt::cpu::find_op(name)->forward/backward directly. saved, scratch and statistics are followed by guard
// words, the slots past param_count / buffer_count point at NaNs and the gradient slots past param_count at
// a sentinel: a kernel that writes past what it declared, reads a tensor the node does not have or writes
// a gradient it does not have fails the test.

constexpr uint32_t kGuard = 0x7fc0beefu;              // a NaN pattern
constexpr uint64_t kGuard64 = 0x7ff8dead0000beefULL;  // a NaN pattern
constexpr size_t kGuardWords = 16;

inline bool is_guard(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == kGuard64;
}
inline double guard_double() {
  double v;
  std::memcpy(&v, &kGuard64, sizeof v);
  return v;
}

class NodeHarness {
 public:
  // Pointers of one call: the node's parameters and buffers (flat, in its order), its inputs, its output.
  struct Args {
    const float *p = nullptr;
    float *buffers = nullptr;
    std::vector<const float *> x;
    float *y = nullptr;
    size_t n = 0;
  };

  NodeHarness(const ModelSpec &spec, size_t index, size_t n, bool training, bool sync, uint64_t seed)
      : node_(spec.nodes().at(index)), n_(n), training_(training), sync_(sync) {
    kernel_ = dpt::cpu::find_op(node_.op->name);
    if (kernel_ == nullptr) fail_msg("the CPU backend has no kernel for op '%s'", node_.op->name);
    const std::vector<dpt::TensorInfo> &tensors = spec.tensors();
    for (size_t t : node_.inputs) in_shapes_.push_back(tensors[t].shape);
    out_shape_ = tensors[node_.output].shape;
    assert_true(out_shape_ == node_.layout.output);
    dpt_op_call &c = call_;
    c.op = node_.op->name;
    std::copy(std::begin(node_.attrs.ints), std::end(node_.attrs.ints), c.ints);
    std::copy(std::begin(node_.attrs.reals), std::end(node_.attrs.reals), c.reals);
    c.input_count = int32_t(node_.inputs.size());
    for (size_t i = 0; i < in_shapes_.size(); ++i) c.inputs[i] = op_tensor(in_shapes_[i]);
    c.output = op_tensor(out_shape_);
    c.param_count = int32_t(node_.layout.params.size());
    for (size_t p = 0; p < node_.layout.params.size(); ++p)
      c.params[p] = op_tensor(node_.layout.params[p].shape);
    c.buffer_count = int32_t(node_.layout.buffers.size());
    for (size_t b = 0; b < node_.layout.buffers.size(); ++b)
      c.buffers[b] = op_tensor(node_.layout.buffers[b].shape);
    for (size_t p = node_.layout.params.size(); p < DPT_OP_MAX_PARAMS; ++p) {
      c.params[p] = op_tensor(Shape{absent_.size()});
      c.params[p].data = absent_.data();
    }
    for (size_t b = node_.layout.buffers.size(); b < DPT_OP_MAX_PARAMS; ++b) {
      c.buffers[b] = op_tensor(Shape{absent_.size()});
      c.buffers[b].data = absent_.data();
    }
    c.node = index;
    c.sync_statistics = sync ? 1 : 0;
    c.training = training ? 1 : 0;
    c.seed = 42;
    saved_bytes_ = n * node_.layout.saved_bytes_per_sample + node_.layout.saved_bytes;
    saved_.assign((saved_bytes_ + 7) / 8 + kGuardWords, kGuard64);
    scratch_bytes_ = kernel_->scratch_bytes != nullptr ? kernel_->scratch_bytes(c) : 0;
    scratch_.assign((scratch_bytes_ + 3) / 4 + kGuardWords, kGuard);
    statistics_count_ = 2 * node_.layout.statistics;
    statistics_.assign(statistics_count_ + kGuardWords, guard_double());
    TestRng rng(seed);
    r_ = rng.vector(out_count(), -1.0f, 1.0f);
  }

  const dpt::Node &node() const { return node_; }
  size_t n() const { return n_; }
  size_t inputs() const { return in_shapes_.size(); }
  size_t in_count(size_t i) const { return n_ * in_shapes_[i].size(); }
  size_t out_count() const { return n_ * out_shape_.size(); }
  size_t param_tensors() const { return node_.layout.params.size(); }
  size_t param_offset(size_t p) const {
    size_t o = 0;
    for (size_t k = 0; k < p; ++k) o += node_.layout.params[k].size();
    return o;
  }
  const std::vector<float> &r() const { return r_; }
  bool phased() const { return training_ && node_.layout.statistics > 0; }
  size_t set_size() const { return node_.layout.statistics; }  // doubles of one set of statistics
  double *local() { return statistics_.data(); }
  double *global() { return statistics_.data() + set_size(); }
  // What forward saved for backward (batch_norm: mean, 1/sqrt(var + eps), count as doubles).
  const double *saved() const { return saved_.data(); }

  Args args(const float *p, float *buffers, std::vector<const float *> x, float *y, size_t n) const {
    Args a;
    a.p = p;
    a.buffers = buffers;
    a.x = std::move(x);
    a.y = y;
    a.n = n;
    return a;
  }
  Args args(const float *p, float *buffers, const Inputs &x, float *y, size_t n) const {
    std::vector<const float *> v;
    for (const std::vector<float> &e : x) v.push_back(e.data());
    return args(p, buffers, v, y, n);
  }
  Args args(const float *, float *, Inputs &&, float *, size_t) const = delete;  // would dangle

  // One kernel call.
  void forward_call(int32_t phase, const Args &a) {
    dpt_op_call c = call_;
    fill(c, a, phase);
    kernel_->forward(c);
    check_guards();
  }
  void backward_call(int32_t phase, const Args &a, const float *dy, const std::vector<float *> &dx,
                     const std::vector<float *> &grads) {
    dpt_op_call c = call_;
    fill(c, a, phase);
    c.output_grad = dy;
    for (size_t i = 0; i < inputs(); ++i) c.input_grads[i] = i < dx.size() ? dx[i] : nullptr;
    for (size_t k = 0; k < param_tensors(); ++k) c.param_grads[k] = k < grads.size() ? grads[k] : nullptr;
    for (size_t k = param_tensors(); k < DPT_OP_MAX_PARAMS; ++k) c.param_grads[k] = absent_grad_.data();
    kernel_->backward(c);
    check_guards();
    for (float v : absent_grad_)
      if (v != 12345.0f) fail_msg("%s wrote the gradient of a parameter it does not have", node_.op->name);
  }

  // The executor's forward of one replica that is the whole batch: one call, or for a training pass of an
  // op with statistics the two phases with the local sums copied to the global half in between. The
  // STATISTICS phase must write the whole local set (it starts as NaN guards) and nothing of the global
  // one; a single-phase call must not touch the statistics at all.
  void run_forward(const Args &a) {
    if (!phased()) {
      forward_call(DPT_OP_PHASE_SINGLE, a);
      for (size_t i = 0; i < statistics_count_; ++i)
        if (!is_guard(statistics_[i]))
          fail_msg("%s: a single-phase forward wrote statistics", node_.op->name);
      return;
    }
    std::fill(statistics_.begin(), statistics_.begin() + long(statistics_count_), guard_double());
    forward_call(DPT_OP_PHASE_STATISTICS, a);
    check_statistics_phase("forward");
    std::copy(local(), local() + set_size(), global());
    forward_call(DPT_OP_PHASE_APPLY, a);
  }
  // The executor's backward after run_forward(): one call, or the two phases (one replica: nothing is
  // reduced in between).
  void run_backward(const Args &a, const float *dy, const std::vector<float *> &dx,
                    const std::vector<float *> &grads) {
    if (!phased()) return backward_call(DPT_OP_PHASE_SINGLE, a, dy, dx, grads);
    const std::vector<double> global_before(global(), global() + set_size());
    std::fill(local(), local() + set_size(), guard_double());
    backward_call(DPT_OP_PHASE_STATISTICS, a, dy, dx, grads);
    check_statistics_phase("backward");
    if (!std::equal(global(), global() + set_size(), global_before.begin(),
                    [](double u, double v) { return std::memcmp(&u, &v, sizeof u) == 0; }))
      fail_msg("%s: backward STATISTICS changed the global statistics", node_.op->name);
    backward_call(DPT_OP_PHASE_APPLY, a, dy, dx, grads);
  }

  // Forward of the whole slice at (p, buffers, x); buffers is updated as a training pass updates it.
  std::vector<float> forward(const std::vector<float> &p, std::vector<float> &buffers, const Inputs &x) {
    y_.assign(out_count(), NAN);
    run_forward(args(p.data(), buffers.data(), x, y_.data(), n_));
    return y_;
  }
  // L at (p, x), with a copy of the buffers (a training forward updates them).
  double loss(const std::vector<float> &p, std::vector<float> buffers, const Inputs &x) {
    const std::vector<float> y = forward(p, buffers, x);
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += double(r_[i]) * double(y[i]);
    return sum;
  }
  // Forward at (p, x) (with a copy of the buffers), then backward with dy = r. dx[i] / grads[k]: nullptr or
  // absent when not wanted; grads are added into.
  void backward(const std::vector<float> &p, std::vector<float> buffers, const Inputs &x,
                const std::vector<float *> &dx, const std::vector<float *> &grads) {
    forward(p, buffers, x);
    run_backward(args(p.data(), buffers.data(), x, y_.data(), n_), r_.data(), dx, grads);
  }
  // All parameter gradients into one flat buffer (nullptr: none wanted).
  std::vector<float *> grads_into(float *dp) const {
    std::vector<float *> grads(param_tensors(), nullptr);
    if (dp != nullptr)
      for (size_t k = 0; k < grads.size(); ++k) grads[k] = dp + param_offset(k);
    return grads;
  }

 private:
  void fill(dpt_op_call &c, const Args &a, int32_t phase) {
    c.n = int64_t(a.n);
    for (size_t i = 0; i < inputs(); ++i) c.inputs[i].data = const_cast<float *>(a.x.at(i));
    c.output.data = a.y;
    for (size_t k = 0; k < param_tensors(); ++k)
      c.params[k].data = const_cast<float *>(a.p + param_offset(k));
    float *b = a.buffers;
    for (size_t k = 0; k < node_.layout.buffers.size(); ++k) {
      c.buffers[k].data = b;
      b += node_.layout.buffers[k].size();
    }
    c.saved = saved_.data();
    c.saved_bytes = a.n * node_.layout.saved_bytes_per_sample + node_.layout.saved_bytes;
    c.scratch = scratch_.data();
    c.scratch_bytes = scratch_bytes_;
    c.statistics = statistics_.data();
    c.statistics_count = statistics_count_;
    c.phase = phase;
  }
  void check_guards() const {
    for (size_t i = (saved_bytes_ + 7) / 8; i < saved_.size(); ++i)
      if (saved_[i] != kGuard64)
        fail_msg("%s wrote past its %zu saved bytes (word %zu)", node_.op->name, saved_bytes_, i);
    for (size_t i = (scratch_bytes_ + 3) / 4; i < scratch_.size(); ++i)
      if (scratch_[i] != kGuard)
        fail_msg("%s wrote past its %zu scratch bytes (word %zu)", node_.op->name, scratch_bytes_, i);
    for (size_t i = statistics_count_; i < statistics_.size(); ++i)
      if (!is_guard(statistics_[i]))
        fail_msg("%s wrote past its %zu statistics (double %zu)", node_.op->name, statistics_count_, i);
    for (float v : absent_)
      if (!std::isnan(v)) fail_msg("%s wrote into a parameter or buffer it does not have", node_.op->name);
  }
  void check_statistics_phase(const char *pass) const {
    for (size_t i = 0; i < set_size(); ++i)
      if (!std::isfinite(statistics_[i]))
        fail_msg("%s: %s STATISTICS left statistics[%zu] = %g", node_.op->name, pass, i, statistics_[i]);
    if (std::string(pass) == "forward")
      for (size_t i = set_size(); i < statistics_count_; ++i)
        if (!is_guard(statistics_[i]))
          fail_msg("%s: forward STATISTICS wrote the global statistics[%zu]", node_.op->name, i);
  }

  const dpt::Node &node_;
  size_t n_;
  bool training_, sync_;
  const dpt::cpu::OpKernel *kernel_ = nullptr;
  std::vector<Shape> in_shapes_;
  Shape out_shape_;
  dpt_op_call call_{};
  size_t saved_bytes_ = 0, scratch_bytes_ = 0, statistics_count_ = 0;
  std::vector<double> saved_;  // doubles: batch_norm saves doubles
  std::vector<uint32_t> scratch_;
  std::vector<double> statistics_;
  std::vector<float> r_, y_;
  std::vector<float> absent_ = std::vector<float>(64, NAN);
  std::vector<float> absent_grad_ = std::vector<float>(64, 12345.0f);
};

// Central difference of L with respect to v[i]; v is restored.
template <typename Loss>
inline double central_difference(std::vector<float> &v, size_t i, double h, Loss &&loss) {
  const float original = v[i];
  const float plus = float(double(original) + h), minus = float(double(original) - h);
  v[i] = plus;
  const double lp = loss();
  v[i] = minus;
  const double lm = loss();
  v[i] = original;
  return (lp - lm) / (double(plus) - double(minus));
}

inline std::vector<float *> pointers(std::vector<std::vector<float>> &v) {
  std::vector<float *> p;
  for (std::vector<float> &e : v) p.push_back(e.data());
  return p;
}

struct OpCase {
  std::string name;
  ModelSpec model{Shape{1}};  // the op under test is the LAST node; it may read any of the model's tensors
  size_t n = 2;
  Inputs x;                    // per input of the node
  std::vector<float> params;   // the node's, flat
  std::vector<float> buffers;  // the node's, flat
  bool training = true, sync = true;
  double h = 1e-2;
  std::function<std::vector<double>(const OpCase &)> reference;
};

// Every check on one op: forward vs reference; dx of every input and dparams vs finite differences; every
// dx fully overwritten; inputs, parameters and dy left as they were; n = 0 a no-op (ops without statistics:
// batch_norm's empty slice has its own test); each input's gradient alone (the others nullptr) and none at
// all; dparams accumulated, also with dx = nullptr, and each parameter's gradient alone.
inline void check_op(OpCase c) {
  const size_t index = c.model.nodes().size() - 1;
  const dpt::Node &node = c.model.nodes()[index];
  const size_t parameters = node.parameters();
  assert_int_equal(c.x.size(), node.inputs.size());
  for (size_t i = 0; i < c.x.size(); ++i)
    assert_int_equal(c.x[i].size(), c.n * c.model.tensors()[node.inputs[i]].shape.size());
  assert_int_equal(c.params.size(), parameters);
  assert_int_equal(c.buffers.size(), node.buffer_floats());
  assert_false(node.layout.view);
  NodeHarness hx(c.model, index, c.n, c.training, c.sync, 0xC0FFEEu + c.n * 131 + c.x[0].size());
  const size_t inputs = hx.inputs();

  if (c.reference) {
    const std::vector<double> want = c.reference(c);
    std::vector<float> buffers = c.buffers;
    const std::vector<float> got = hx.forward(c.params, buffers, c.x);
    assert_int_equal(got.size(), want.size());
    Comparison cmp(c.name + " forward", kForwardTolerance, 1.0);
    for (size_t i = 0; i < got.size(); ++i) cmp.add(got[i], want[i], at("y", i));
    cmp.finish();
  }

  // Analytic gradients. dx starts as garbage: backward must write every element, not add to it.
  std::vector<std::vector<float>> dx(inputs);
  for (size_t i = 0; i < inputs; ++i) dx[i].assign(hx.in_count(i), 1.0e6f);
  std::vector<float> dp(parameters, 0.0f);
  const Inputs x0 = c.x;
  const std::vector<float> p0 = c.params, b0 = c.buffers, r0 = hx.r();
  hx.backward(c.params, c.buffers, c.x, pointers(dx), hx.grads_into(parameters ? dp.data() : nullptr));
  assert_true(c.x == x0 && c.params == p0 && c.buffers == b0 && hx.r() == r0);

  auto loss = [&] { return hx.loss(c.params, c.buffers, c.x); };
  Comparison cx(c.name + " dx vs finite differences", kLayerTolerance, 1.0);
  for (size_t i = 0; i < inputs; ++i)
    for (size_t k = 0; k < c.x[i].size(); ++k)
      cx.add(dx[i][k], central_difference(c.x[i], k, c.h, loss), at("dx", i, k));
  cx.finish();

  if (parameters > 0) {
    Comparison cp(c.name + " dparams vs finite differences", kLayerTolerance, 1.0);
    for (size_t k = 0; k < parameters; ++k)
      cp.add(dp[k], central_difference(c.params, k, c.h, loss), at("dp", k));
    cp.finish();
  }

  // n = 0: a no-op, whatever the buffers hold.
  if (!hx.phased()) {
    std::vector<float> y(hx.out_count(), -7.0f), g(parameters, -7.0f), b = c.buffers;
    std::vector<std::vector<float>> d(inputs);
    for (size_t i = 0; i < inputs; ++i) d[i].assign(hx.in_count(i), -7.0f);
    const NodeHarness::Args a = hx.args(c.params.data(), b.data(), c.x, y.data(), 0);
    hx.run_forward(a);
    hx.run_backward(a, hx.r().data(), pointers(d), hx.grads_into(parameters ? g.data() : nullptr));
    for (float v : y) assert_true(v == -7.0f);
    for (const std::vector<float> &e : d)
      for (float v : e) assert_true(v == -7.0f);
    for (float v : g) assert_true(v == -7.0f);
    assert_true(b == c.buffers);
  }

  // Each input's gradient alone (the others nullptr): the same values; none at all: accepted.
  Comparison ci(c.name + " each input's gradient alone", kSumTolerance, 1.0);
  for (size_t i = 0; i < inputs; ++i) {
    std::vector<float *> only(inputs, nullptr);
    std::vector<float> alone(hx.in_count(i), 1.0e6f);
    only[i] = alone.data();
    hx.backward(c.params, c.buffers, c.x, only, {});
    for (size_t k = 0; k < alone.size(); ++k) ci.add(alone[k], dx[i][k], at("dx", i, k));
  }
  ci.finish();
  hx.backward(c.params, c.buffers, c.x, std::vector<float *>(inputs, nullptr), {});
  if (parameters == 0) return;

  // Accumulation: a second backward into the same buffer doubles it; into a buffer holding o, gives o + dp.
  std::vector<float> twice(parameters, 0.0f);
  hx.backward(c.params, c.buffers, c.x, pointers(dx), hx.grads_into(twice.data()));
  hx.backward(c.params, c.buffers, c.x, pointers(dx), hx.grads_into(twice.data()));
  TestRng rng(77);
  const std::vector<float> offset = rng.vector(parameters, -1.0f, 1.0f);
  std::vector<float> shifted = offset;
  hx.backward(c.params, c.buffers, c.x, pointers(dx), hx.grads_into(shifted.data()));
  Comparison ca(c.name + " dparams accumulate", kSumTolerance, 1.0);
  for (size_t k = 0; k < parameters; ++k) {
    ca.add(twice[k], 2.0 * double(dp[k]), at("2*dp", k));
    ca.add(shifted[k], double(offset[k]) + double(dp[k]), at("o+dp", k));
  }
  ca.finish();

  // dx = nullptr for every input: the parameter gradient is still produced, and is the same.
  std::vector<float> without_dx(parameters, 0.0f);
  hx.backward(c.params, c.buffers, c.x, std::vector<float *>(inputs, nullptr),
              hx.grads_into(without_dx.data()));
  Comparison cn(c.name + " dparams with dx = nullptr", kSumTolerance, 1.0);
  for (size_t k = 0; k < parameters; ++k) cn.add(without_dx[k], dp[k], at("dp", k));
  cn.finish();

  // One parameter tensor's gradient at a time: the same values, the others untouched.
  Comparison co(c.name + " each parameter's gradient alone", kSumTolerance, 1.0);
  for (size_t t = 0; t < hx.param_tensors(); ++t) {
    std::vector<float> alone(parameters, 0.0f);
    std::vector<float *> grads(hx.param_tensors(), nullptr);
    grads[t] = alone.data() + hx.param_offset(t);
    hx.backward(c.params, c.buffers, c.x, pointers(dx), grads);
    const size_t lo = hx.param_offset(t), hi = lo + node.layout.params[t].size();
    for (size_t k = 0; k < parameters; ++k)
      co.add(alone[k], k >= lo && k < hi ? double(dp[k]) : 0.0, at("dp", k));
  }
  co.finish();
}

// Random inputs for every input tensor of the last node of m, n samples each, uniform in [lo, hi).
inline Inputs random_inputs(const ModelSpec &m, size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  TestRng rng(seed);
  Inputs x;
  for (size_t t : m.nodes().back().inputs) x.push_back(rng.vector(n * m.tensors()[t].shape.size(), lo, hi));
  return x;
}

}  // namespace op_harness
