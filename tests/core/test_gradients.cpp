// Gradient checks of the C++ core: every op's CPU kernel (called through its dpt_op_call, as the graph
// executor calls it) against a naive double-precision reference forward and its backward against central
// finite differences, the softmax cross-entropy loss, the whole Network, and the memory arena's accounting.
// The ops that came with the op seam (add, concat, global_avg_pool, gelu, layer_norm, batch_norm with its
// two phases) and the Network on DAGs (residual blocks, shared tensors) are in test_gradients_norms.cpp.
//
// Method. For an op y = f(x; p) and fixed random weights r, the scalar L = sum_i r_i y_i (summed in double)
// has dL/dy = r, so backward(dy = r) must return dL/dx and dL/dp. Each is compared, for EVERY input element
// and EVERY parameter, with the central difference (L(v + h) - L(v - h)) / ((v + h) - (v - h)), where the
// denominator is the difference of the two perturbed fp32 values actually fed to forward (not 2h: rounding
// v +- h to fp32 changes the step by up to ulp(v), which is 5e-4 of h = 1e-3 at |v| = 8).
//
// Tolerances (why they are honest for fp32; the worst error seen is printed by every test):
//  * Ops: |analytic - fd| <= 1e-3 * max(1, |fd|). Dense, conv, pooling, dropout and relu (away from its
//    kink) are linear in each perturbed value, so the central difference has no truncation error, and for
//    sigmoid/tanh it is h^2/6 * |f'''| <= 2e-5 at h = 1e-2. What is left is fp32 rounding of the outputs that
//    the perturbation touches: each carries ~6e-8 * sqrt(k) relative error over k-term dot products, i.e.
//    ~1e-6 in L, divided by 2h = 2e-2 gives ~5e-5. Seen worst: a few 1e-5, so 1e-3 leaves a 10x+ margin,
//    while any real backward bug (a wrong index, stride, scale or sign) gives errors of order |r| ~ 0.1..1.
//  * Network: |analytic - fd| <= 2e-3 * max(0.1, |fd|) with h = 1e-3: the loss passes through every op
//    in fp32 (~1e-7 relative on logits of size ~1), divided by 2h = 2e-3 gives ~1e-4 absolute noise (seen:
//    2.5e-4 of the scale). So: 2e-3 relative for gradients above 0.1, 2e-4 absolute below. Relu and max-pool
//    kinks are kept out of reach of every step (smooth_around() below), so no truncation error there either.
//  * Accumulation and batch-vs-per-sample sums: 1e-5 relative (only the fp32 summation order differs).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/conv2d_winograd.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/arena.hpp"
#include "core/error.hpp"
#include "graph/init_parameters.hpp"
#include "graph/model_spec.hpp"
#include "graph/network.hpp"
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

namespace {

using dpt::Activation;
using dpt::ModelSpec;
using dpt::PassInfo;
using dpt::PoolKind;
using dpt::Shape;
using dpt_test::Comparison;
using dpt_test::TestRng;

constexpr double kLayerTolerance = 1e-3;
constexpr double kForwardTolerance = 1e-5;
constexpr double kSumTolerance = 1e-5;

std::string at(const char *what, size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}

// ---------------------------------------------------------------------------------------------------------
// A test-local view of one node, so that the references read like the math: the op's name, its input and
// output shapes, and its attributes by meaning (op_call.h's table).

struct OpView {
  std::string kind;  // the op's name: "dense", "conv2d", "max_pool2d", ...
  Shape in, out;
  size_t units = 0;                            // dense units, conv2d output channels
  size_t kernel = 0, stride = 0, padding = 0;  // conv2d; pools: window and stride
  bool bias = false;
  double rate = 0.0;  // dropout
  size_t parameters = 0;
};

OpView view_of(const ModelSpec &m, size_t index) {
  const dpt::Node &node = m.nodes().at(index);
  OpView v;
  v.kind = node.op->name;
  v.in = m.tensors()[node.inputs.at(0)].shape;
  v.out = m.tensors()[node.output].shape;
  v.parameters = node.parameters();
  const int64_t *a = node.attrs.ints;
  if (v.kind == "dense") {
    v.units = size_t(a[0]);
    v.bias = a[1] != 0;
  } else if (v.kind == "conv2d") {
    v.units = size_t(a[0]);
    v.kernel = size_t(a[1]);
    v.stride = size_t(a[2]);
    v.padding = size_t(a[3]);
    v.bias = a[4] != 0;
  } else if (v.kind == "avg_pool2d" || v.kind == "max_pool2d") {
    v.kernel = size_t(a[0]);
    v.stride = size_t(a[1]);
  } else if (v.kind == "dropout") {
    v.rate = node.attrs.reals[0];
  }
  return v;
}

// The one node of a model built for one op's test.
OpView only_node(const ModelSpec &m) {
  assert_int_equal(m.nodes().size(), 1);
  return view_of(m, 0);
}

// ---------------------------------------------------------------------------------------------------------
// Naive double-precision reference forwards (independent of the kernels' im2col/GEMM code). Parameters in
// the flat order of the node: weights, then the bias when there is one.

using Reference = std::function<std::vector<double>(const OpView &, size_t, const std::vector<float> &,
                                                    const std::vector<float> &)>;

std::vector<double> dense_reference(const OpView &s, size_t n, const std::vector<float> &x,
                                    const std::vector<float> &p) {
  const size_t in = s.in.size(), out = s.units;
  std::vector<double> y(n * out);
  for (size_t k = 0; k < n; ++k)
    for (size_t o = 0; o < out; ++o) {
      double sum = s.bias ? p[out * in + o] : 0.0;
      for (size_t i = 0; i < in; ++i) sum += double(p[o * in + i]) * double(x[k * in + i]);
      y[k * out + o] = sum;
    }
  return y;
}

std::vector<double> conv_reference(const OpView &s, size_t n, const std::vector<float> &x,
                                   const std::vector<float> &p) {
  const size_t oc = s.units, ic = s.in[0], ih = s.in[1], iw = s.in[2], k = s.kernel;
  const size_t oh = s.out[1], ow = s.out[2];
  std::vector<double> y(n * s.out.size());
  for (size_t b = 0; b < n; ++b)
    for (size_t o = 0; o < oc; ++o)
      for (size_t oy = 0; oy < oh; ++oy)
        for (size_t ox = 0; ox < ow; ++ox) {
          double sum = s.bias ? p[oc * ic * k * k + o] : 0.0;
          for (size_t c = 0; c < ic; ++c)
            for (size_t ki = 0; ki < k; ++ki)
              for (size_t kj = 0; kj < k; ++kj) {
                const long iy = long(oy * s.stride + ki) - long(s.padding);
                const long ix = long(ox * s.stride + kj) - long(s.padding);
                if (iy < 0 || ix < 0 || iy >= long(ih) || ix >= long(iw)) continue;
                sum += double(p[((o * ic + c) * k + ki) * k + kj]) *
                       double(x[((b * ic + c) * ih + size_t(iy)) * iw + size_t(ix)]);
              }
          y[((b * oc + o) * oh + oy) * ow + ox] = sum;
        }
  return y;
}

std::vector<double> pool_reference(const OpView &s, size_t n, const std::vector<float> &x,
                                   const std::vector<float> &) {
  std::vector<double> y(n * s.out.size());
  const size_t k = s.kernel, ih = s.in[1], iw = s.in[2], oh = s.out[1], ow = s.out[2];
  for (size_t plane = 0; plane < n * s.in[0]; ++plane)
    for (size_t oy = 0; oy < oh; ++oy)
      for (size_t ox = 0; ox < ow; ++ox) {
        double sum = 0.0, best = -INFINITY;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const double v = x[(plane * ih + oy * s.stride + i) * iw + ox * s.stride + j];
            sum += v;
            best = std::max(best, v);
          }
        y[(plane * oh + oy) * ow + ox] = s.kind == "max_pool2d" ? best : sum / double(k * k);
      }
  return y;
}

std::vector<double> activation_reference(const OpView &s, size_t n, const std::vector<float> &x,
                                         const std::vector<float> &) {
  std::vector<double> y(n * s.out.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = x[i];
    y[i] = s.kind == "relu"      ? std::max(v, 0.0)
           : s.kind == "sigmoid" ? 1.0 / (1.0 + std::exp(-v))
                                 : std::tanh(v);
  }
  return y;
}

// ---------------------------------------------------------------------------------------------------------
// The op harness: one node of a model as the graph executor hands it to a kernel. It builds the node's
// dpt_op_call (shapes from the node and the model's tensors, attributes copied, host vectors as memory),
// owns saved (sized from layout.saved_bytes_per_sample) and scratch (from the kernel's scratch_bytes), and
// calls dpt::cpu::find_op(node.op->name)->forward/backward directly. saved and scratch are followed by
// guard words: a kernel that writes past the sizes it declared fails the test.

constexpr uint32_t kGuard = 0x7fc0beefu;  // a NaN pattern
constexpr size_t kGuardWords = 16;

class OpHarness {
 public:
  OpHarness(const ModelSpec &spec, size_t index, size_t n, const PassInfo &info, uint64_t seed)
      : node_(spec.nodes().at(index)), n_(n), info_(info) {
    kernel_ = dpt::cpu::find_op(node_.op->name);
    if (kernel_ == nullptr) fail_msg("the CPU backend has no kernel for op '%s'", node_.op->name);
    info_.n = n;
    const std::vector<dpt::TensorInfo> &tensors = spec.tensors();
    in_shape_ = tensors[node_.inputs.at(0)].shape;
    out_shape_ = tensors[node_.output].shape;
    assert_true(out_shape_ == node_.layout.output);
    dpt_op_call &c = call_;
    c.op = node_.op->name;
    std::copy(std::begin(node_.attrs.ints), std::end(node_.attrs.ints), c.ints);
    std::copy(std::begin(node_.attrs.reals), std::end(node_.attrs.reals), c.reals);
    c.input_count = int32_t(node_.inputs.size());
    for (size_t i = 0; i < node_.inputs.size(); ++i) c.inputs[i] = op_tensor(tensors[node_.inputs[i]].shape);
    c.output = op_tensor(out_shape_);
    c.param_count = int32_t(node_.layout.params.size());
    for (size_t p = 0; p < node_.layout.params.size(); ++p)
      c.params[p] = op_tensor(node_.layout.params[p].shape);
    c.buffer_count = int32_t(node_.layout.buffers.size());
    for (size_t b = 0; b < node_.layout.buffers.size(); ++b)
      c.buffers[b] = op_tensor(node_.layout.buffers[b].shape);
    c.node = index;
    // The slots past param_count point at NaNs, their gradients at a sentinel: a kernel that reads a
    // parameter the node does not have (a bias of a conv2d without one) shows in the forward check, one
    // that writes a gradient it does not have fails check_untouched().
    for (size_t p = node_.layout.params.size(); p < DPT_OP_MAX_PARAMS; ++p) {
      c.params[p] = op_tensor(Shape{absent_param_.size()});
      c.params[p].data = absent_param_.data();
    }
    saved_bytes_ = n * node_.layout.saved_bytes_per_sample;
    saved_.assign((saved_bytes_ + 3) / 4 + kGuardWords, kGuard);
    scratch_bytes_ = kernel_->scratch_bytes != nullptr ? kernel_->scratch_bytes(c) : 0;
    scratch_.assign((scratch_bytes_ + 3) / 4 + kGuardWords, kGuard);
    TestRng rng(seed);
    r_ = rng.vector(n * out_shape_.size(), -1.0f, 1.0f);
  }

  const dpt::Node &node() const { return node_; }
  const std::vector<float> &r() const { return r_; }
  size_t in_count() const { return n_ * in_shape_.size(); }
  size_t out_count() const { return n_ * out_shape_.size(); }
  size_t param_tensors() const { return node_.layout.params.size(); }
  // Offset of parameter tensor p in the node's flat parameters.
  size_t param_offset(size_t p) const {
    size_t o = 0;
    for (size_t k = 0; k < p; ++k) o += node_.layout.params[k].size();
    return o;
  }
  void set_node_key(uint64_t node) { call_.node = node; }

  std::vector<float> forward(const float *p, const std::vector<float> &x) {
    y_.assign(out_count(), NAN);
    forward_into(p, x.data(), y_.data(), n_);
    return y_;
  }

  double loss(const std::vector<float> &p, const std::vector<float> &x) {
    const std::vector<float> y = forward(p.data(), x);
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += double(r_[i]) * double(y[i]);
    return sum;
  }

  // Forward at (p, x), then backward with dy = r. grads[k]: the gradient of parameter tensor k (added
  // into; nullptr: not wanted); dx may be nullptr.
  void backward(const float *p, const std::vector<float> &x, float *dx, const std::vector<float *> &grads) {
    forward(p, x);
    backward_from(p, x.data(), y_.data(), r_.data(), dx, grads, n_);
  }
  // The same with all parameter gradients into one flat buffer (nullptr: none wanted).
  void backward(const std::vector<float> &p, const std::vector<float> &x, float *dx, float *dp) {
    std::vector<float *> grads(param_tensors(), nullptr);
    if (dp != nullptr)
      for (size_t k = 0; k < grads.size(); ++k) grads[k] = dp + param_offset(k);
    backward(p.data(), x, dx, grads);
  }

  // The raw passes at any n (n = 0 included), on the harness's saved and scratch.
  void forward_into(const float *p, const float *x, float *y, size_t n) {
    dpt_op_call c = call_;
    fill(c, p, n);
    c.inputs[0].data = const_cast<float *>(x);
    c.output.data = y;
    kernel_->forward(c);
    check_guards();
  }
  void backward_from(const float *p, const float *x, const float *y, const float *dy, float *dx,
                     const std::vector<float *> &grads, size_t n) {
    dpt_op_call c = call_;
    fill(c, p, n);
    c.inputs[0].data = const_cast<float *>(x);
    c.output.data = const_cast<float *>(y);
    c.output_grad = dy;
    c.input_grads[0] = dx;
    for (size_t k = 0; k < grads.size(); ++k) c.param_grads[k] = grads[k];
    for (size_t k = param_tensors(); k < DPT_OP_MAX_PARAMS; ++k) c.param_grads[k] = absent_grad_.data();
    kernel_->backward(c);
    check_guards();
    check_untouched();
  }

 private:
  void fill(dpt_op_call &c, const float *p, size_t n) {
    c.n = int64_t(n);
    for (size_t k = 0; k < param_tensors(); ++k) c.params[k].data = const_cast<float *>(p + param_offset(k));
    c.saved = saved_.data();
    c.scratch = scratch_.data();
    c.scratch_bytes = scratch_bytes_;
    c.training = info_.training ? 1 : 0;
    c.seed = info_.seed;
    c.step = info_.step;
    c.first_sample = info_.first_sample;
  }
  // The words after the declared sizes of saved and scratch are as they were.
  void check_guards() const {
    for (size_t i = (saved_bytes_ + 3) / 4; i < saved_.size(); ++i)
      if (saved_[i] != kGuard)
        fail_msg("%s wrote past its %zu saved bytes (word %zu)", node_.op->name, saved_bytes_, i);
    for (size_t i = (scratch_bytes_ + 3) / 4; i < scratch_.size(); ++i)
      if (scratch_[i] != kGuard)
        fail_msg("%s wrote past its %zu scratch bytes (word %zu)", node_.op->name, scratch_bytes_, i);
  }
  void check_untouched() const {
    for (float v : absent_grad_)
      if (v != 12345.0f) fail_msg("%s wrote the gradient of a parameter it does not have", node_.op->name);
  }

  const dpt::Node &node_;
  size_t n_;
  PassInfo info_;
  const dpt::cpu::OpKernel *kernel_ = nullptr;
  Shape in_shape_, out_shape_;
  dpt_op_call call_{};
  size_t saved_bytes_ = 0, scratch_bytes_ = 0;
  std::vector<uint32_t> saved_, scratch_;
  std::vector<float> r_, y_;
  std::vector<float> absent_param_ = std::vector<float>(64, NAN);
  std::vector<float> absent_grad_ = std::vector<float>(64, 12345.0f);
};

// Central difference of L with respect to v[i]; v is restored.
template <typename Loss>
double central_difference(std::vector<float> &v, size_t i, double h, Loss &&loss) {
  const float original = v[i];
  const float plus = float(double(original) + h), minus = float(double(original) - h);
  v[i] = plus;
  const double lp = loss();
  v[i] = minus;
  const double lm = loss();
  v[i] = original;
  return (lp - lm) / (double(plus) - double(minus));
}

struct LayerCase {
  std::string name;
  ModelSpec model{Shape{1}};  // one node
  size_t n = 2;
  std::vector<float> x, params;
  PassInfo info{};
  double h = 1e-2;
  Reference reference;  // may be empty (dropout)
};

// Runs every check on one op: forward vs reference, dx and dparams vs finite differences, dx fully
// overwritten, dparams accumulated, dx = nullptr accepted, each parameter's gradient alone, inputs left as
// they were, n = 0 a no-op.
void check_layer(LayerCase c) {
  const OpView s = only_node(c.model);
  assert_int_equal(c.x.size(), c.n * s.in.size());
  assert_int_equal(c.params.size(), s.parameters);
  assert_int_equal(c.model.parameter_count(), s.parameters);
  OpHarness hx(c.model, 0, c.n, c.info, 0xC0FFEEu + c.x.size());
  assert_false(hx.node().layout.view);

  if (c.reference) {
    const std::vector<double> want = c.reference(s, c.n, c.x, c.params);
    const std::vector<float> got = hx.forward(c.params.data(), c.x);
    assert_int_equal(got.size(), want.size());
    Comparison cmp(c.name + " forward", kForwardTolerance, 1.0);
    for (size_t i = 0; i < got.size(); ++i) cmp.add(got[i], want[i], at("y", i));
    cmp.finish();
  }

  // Analytic gradients. dx starts as garbage: backward must write every element, not add to it.
  std::vector<float> dx(hx.in_count(), 1.0e6f);
  std::vector<float> dp(s.parameters, 0.0f);
  const std::vector<float> x0 = c.x, p0 = c.params, r0 = hx.r();
  hx.backward(c.params, c.x, dx.data(), s.parameters ? dp.data() : nullptr);
  // Backward reads x, the parameters and dy only.
  assert_true(c.x == x0 && c.params == p0 && hx.r() == r0);

  Comparison cx(c.name + " dx vs finite differences", kLayerTolerance, 1.0);
  for (size_t i = 0; i < c.x.size(); ++i)
    cx.add(dx[i], central_difference(c.x, i, c.h, [&] { return hx.loss(c.params, c.x); }), at("dx", i));
  cx.finish();

  // n = 0: a no-op, whatever the buffers hold.
  {
    std::vector<float> y(hx.out_count(), -7.0f), d(hx.in_count(), -7.0f), g(s.parameters, -7.0f);
    std::vector<float *> grads(hx.param_tensors(), nullptr);
    for (size_t k = 0; k < grads.size(); ++k) grads[k] = g.data() + hx.param_offset(k);
    hx.forward_into(c.params.data(), c.x.data(), y.data(), 0);
    hx.backward_from(c.params.data(), c.x.data(), y.data(), hx.r().data(), d.data(), grads, 0);
    for (float v : y) assert_true(v == -7.0f);
    for (float v : d) assert_true(v == -7.0f);
    for (float v : g) assert_true(v == -7.0f);
  }

  if (s.parameters == 0) {
    hx.backward(c.params, c.x, nullptr, nullptr);  // dx is optional
    return;
  }
  Comparison cp(c.name + " dparams vs finite differences", kLayerTolerance, 1.0);
  for (size_t i = 0; i < c.params.size(); ++i)
    cp.add(dp[i], central_difference(c.params, i, c.h, [&] { return hx.loss(c.params, c.x); }), at("dp", i));
  cp.finish();

  // Accumulation: a second backward into the same buffer doubles it; into a buffer holding c, gives c + dp.
  std::vector<float> twice(dp.size(), 0.0f);
  hx.backward(c.params, c.x, dx.data(), twice.data());
  hx.backward(c.params, c.x, dx.data(), twice.data());
  TestRng rng(77);
  const std::vector<float> offset = rng.vector(dp.size(), -1.0f, 1.0f);
  std::vector<float> shifted = offset;
  hx.backward(c.params, c.x, dx.data(), shifted.data());
  Comparison ca(c.name + " dparams accumulate", kSumTolerance, 1.0);
  for (size_t i = 0; i < dp.size(); ++i) {
    ca.add(twice[i], 2.0 * double(dp[i]), at("2*dp", i));
    ca.add(shifted[i], double(offset[i]) + double(dp[i]), at("c+dp", i));
  }
  ca.finish();

  // dx = nullptr: the parameter gradient is still produced, and is the same.
  std::vector<float> without_dx(dp.size(), 0.0f);
  hx.backward(c.params, c.x, nullptr, without_dx.data());
  Comparison cn(c.name + " dparams with dx = nullptr", kSumTolerance, 1.0);
  for (size_t i = 0; i < dp.size(); ++i) cn.add(without_dx[i], dp[i], at("dp", i));
  cn.finish();

  // One parameter tensor's gradient at a time (the others nullptr): the same values, the others untouched
  // (their slots are not passed at all, so nothing can be written there).
  Comparison co(c.name + " each parameter's gradient alone", kSumTolerance, 1.0);
  for (size_t k = 0; k < hx.param_tensors(); ++k) {
    std::vector<float> alone(dp.size(), 0.0f);
    std::vector<float *> grads(hx.param_tensors(), nullptr);
    grads[k] = alone.data() + hx.param_offset(k);
    hx.backward(c.params.data(), c.x, nullptr, grads);
    const size_t lo = hx.param_offset(k), hi = lo + hx.node().layout.params[k].size();
    for (size_t i = 0; i < dp.size(); ++i)
      co.add(alone[i], i >= lo && i < hi ? double(dp[i]) : 0.0, at("dp", i));
  }
  co.finish();
}

// ---------------------------------------------------------------------------------------------------------
// Ops

void check_dense(bool bias) {
  ModelSpec m(Shape{2, 2, 3});  // a non-flat input: dense reads it as 12 features
  m.add_dense(4, bias);
  const OpView s = only_node(m);
  assert_true(s.out == (Shape{4}));  // rank 1
  assert_int_equal(m.nodes()[0].layout.params.size(), bias ? 2 : 1);
  assert_int_equal(s.parameters, 4 * 12 + (bias ? 4 : 0));
  LayerCase c;
  c.name = std::string("dense 12->4") + (bias ? "" : " no bias");
  c.model = m;
  c.n = 3;
  TestRng rng(bias ? 1 : 2);
  c.x = rng.vector(c.n * 12, -1.0f, 1.0f);
  c.params = rng.vector(s.parameters, -0.5f, 0.5f);  // biases nonzero too
  c.reference = dense_reference;
  check_layer(c);
}

void test_dense(void **) {
  check_dense(true);
}
void test_dense_no_bias(void **) {
  check_dense(false);
}

// The CPU kernel runs planes of fewer than 64 output pixels in groups of samples (one GEMM over a group's
// columns): the 5x6 default is one group of n = 2; see test_conv2d_ungrouped and test_conv2d_ragged_groups.
// From 16 input and output channels, 3x3 stride 1 padding 1 runs as Winograd F(2x2, 3x3)
// (test_conv2d_winograd*).
void check_conv(size_t stride, size_t padding, bool bias = true, size_t h = 5, size_t w = 6, size_t n = 2,
                size_t in_c = 2, size_t out_c = 3) {
  ModelSpec m(Shape{in_c, h, w});  // not square, so h/w mix-ups show
  m.add_conv2d(out_c, 3, stride, padding, bias);
  const OpView s = only_node(m);
  assert_int_equal(s.out.rank(), 3);
  assert_int_equal(s.out[0], out_c);
  assert_int_equal(s.out[1], (h + 2 * padding - 3) / stride + 1);
  assert_int_equal(s.out[2], (w + 2 * padding - 3) / stride + 1);
  assert_int_equal(m.nodes()[0].layout.params.size(), bias ? 2 : 1);
  assert_int_equal(s.parameters, out_c * in_c * 3 * 3 + (bias ? out_c : 0));
  LayerCase c;
  c.name = "conv2d " + std::to_string(in_c) + "->" + std::to_string(out_c) + " 3x3 s" +
           std::to_string(stride) + " p" + std::to_string(padding) + (bias ? "" : " no bias") + " " +
           std::to_string(h) + "x" + std::to_string(w) + " n=" + std::to_string(n);
  c.model = m;
  c.n = n;
  TestRng rng(10 + stride * 2 + padding + (bias ? 0 : 100));
  c.x = rng.vector(c.n * s.in.size(), -1.0f, 1.0f);
  c.params = rng.vector(s.parameters, -0.5f, 0.5f);
  c.reference = conv_reference;
  check_layer(c);
}

void test_conv2d_s1_p0(void **) {
  check_conv(1, 0);
}
void test_conv2d_s1_p1(void **) {
  check_conv(1, 1);
}
// Stride 2 without padding leaves the last input column outside every window: its dx must be 0.
void test_conv2d_s2_p0(void **) {
  check_conv(2, 0);
}
void test_conv2d_s2_p1(void **) {
  check_conv(2, 1);
}
// Without a bias the node has one parameter tensor (param_count 1): the kernel must neither read a bias
// (the harness points the absent slot at NaNs) nor write its gradient.
void test_conv2d_no_bias_s1_p1(void **) {
  check_conv(1, 1, false);
}
void test_conv2d_no_bias_s2_p0(void **) {
  check_conv(2, 0, false);
}
// 9x8 output pixels (>= 64): one sample per GEMM, written straight into the output.
void test_conv2d_ungrouped(void **) {
  check_conv(1, 1, true, 9, 8, 3);
}
// 7x7 output pixels: groups of 11 samples, so n = 13 is a full group and a group of 2.
void test_conv2d_ragged_groups(void **) {
  check_conv(1, 1, true, 7, 7, 13);
}

// Which convolutions take the Winograd path: 3x3, stride 1, padding 1, >= 16 channels in and out, float32 or
// bf16.
void test_conv2d_winograd_applies(void **) {
  const auto call = [](int64_t in_c, int64_t out_c, int64_t k, int64_t stride, int64_t padding,
                       int32_t dtype) {
    dpt_op_call c{};
    c.inputs[0].dims[0] = in_c;
    c.ints[0] = out_c;
    c.ints[1] = k;
    c.ints[2] = stride;
    c.ints[3] = padding;
    c.matmul_dtype = dtype;
    return c;
  };
  // DPTRAIN_CONV_KERNEL=im2col keeps every convolution off it.
  const char *pinned = std::getenv("DPTRAIN_CONV_KERNEL");
  const bool on = pinned == nullptr || std::strcmp(pinned, "im2col") != 0;
  assert_int_equal(dpt::cpu::winograd::applies(call(16, 16, 3, 1, 1, DPT_DTYPE_F32)), on);
  assert_int_equal(dpt::cpu::winograd::applies(call(512, 512, 3, 1, 1, DPT_DTYPE_F32)), on);
  assert_false(dpt::cpu::winograd::applies(call(15, 16, 3, 1, 1, DPT_DTYPE_F32)));
  assert_false(dpt::cpu::winograd::applies(call(16, 15, 3, 1, 1, DPT_DTYPE_F32)));
  assert_false(dpt::cpu::winograd::applies(call(64, 64, 3, 2, 1, DPT_DTYPE_F32)));
  assert_false(dpt::cpu::winograd::applies(call(64, 64, 3, 1, 0, DPT_DTYPE_F32)));
  assert_false(dpt::cpu::winograd::applies(call(64, 64, 5, 1, 1, DPT_DTYPE_F32)));
  // bf16: the point GEMMs on bfloat16 inputs (test_precision); fp16 keeps im2col (float16's range).
  assert_int_equal(dpt::cpu::winograd::applies(call(64, 64, 3, 1, 1, DPT_DTYPE_BF16)), on);
  assert_false(dpt::cpu::winograd::applies(call(64, 64, 3, 1, 1, DPT_DTYPE_F16)));
}

// Winograd F(2x2, 3x3), every value against the double reference and finite differences: odd sizes (tiles
// past the bottom and right edges), channel counts that differ, with and without a bias; and 15 input
// channels, the same checks on the im2col side of the threshold.
void test_conv2d_winograd(void **) {
  check_conv(1, 1, true, 5, 6, 2, 16, 17);
  check_conv(1, 1, false, 7, 5, 2, 17, 16);
  check_conv(1, 1, true, 4, 4, 3, 15, 16);
}

// The gradients of a 3x3, stride 1, padding 1 convolution with output gradient dy, in double: dx [n, c, h, w]
// and dW [out_c, c, 3, 3] (the bias's is the same sum on either path).
void conv_gradient_reference(const OpView &s, size_t n, const std::vector<float> &x,
                             const std::vector<float> &p, const float *dy, std::vector<double> &dx,
                             std::vector<double> &dw) {
  const size_t c = s.in[0], h = s.in[1], w = s.in[2], oc = s.out[0];
  dx.assign(n * c * h * w, 0.0);
  dw.assign(oc * c * 9, 0.0);
  for (size_t b = 0; b < n; ++b)
    for (size_t o = 0; o < oc; ++o)
      for (size_t y = 0; y < h; ++y)
        for (size_t xo = 0; xo < w; ++xo) {
          const double g = dy[((b * oc + o) * h + y) * w + xo];
          for (size_t ci = 0; ci < c; ++ci)
            for (size_t ki = 0; ki < 3; ++ki)
              for (size_t kj = 0; kj < 3; ++kj) {
                const std::ptrdiff_t iy = std::ptrdiff_t(y + ki) - 1, ix = std::ptrdiff_t(xo + kj) - 1;
                if (iy < 0 || ix < 0 || iy >= std::ptrdiff_t(h) || ix >= std::ptrdiff_t(w)) continue;
                const size_t xi = ((b * c + ci) * h + size_t(iy)) * w + size_t(ix),
                             wi = ((o * c + ci) * 3 + ki) * 3 + kj;
                dx[xi] += g * double(p[wi]);
                dw[wi] += g * double(x[xi]);
              }
        }
}

// Winograd over several groups of samples (about 512 tiles a GEMM: a 12x10 plane has 30 tiles, so groups of
// 18): n = 19 is a full group and a group of one. Every value of y, dx and dW against the double reference
// (dW sums 19 x 120 products per weight in fp32, hence its looser tolerance); 15 channels (im2col) as the
// witness of what plain fp32 summation gives on the same sums.
void check_conv_gradients(size_t channels, double dw_tolerance) {
  const size_t n = 19;
  ModelSpec m(Shape{channels, 12, 10});
  m.add_conv2d(16, 3, 1, 1, false);
  const OpView s = only_node(m);
  TestRng rng(31);
  const std::vector<float> x = rng.vector(n * s.in.size(), -1.0f, 1.0f);
  const std::vector<float> p = rng.vector(s.parameters, -0.5f, 0.5f);
  OpHarness harness(m, 0, n, PassInfo{}, 5);
  const std::string name = "conv2d " + std::to_string(channels) + "->16 12x10 n=19 ";
  const std::vector<double> want = conv_reference(s, n, x, p);
  const std::vector<float> got = harness.forward(p.data(), x);
  Comparison cf(name + "forward", kForwardTolerance, 1.0);
  for (size_t i = 0; i < got.size(); ++i) cf.add(got[i], want[i], at("y", i));
  cf.finish();

  std::vector<float> dx(harness.in_count(), 1.0e6f), dp(s.parameters, 0.0f);
  harness.backward(p, x, dx.data(), dp.data());
  std::vector<double> want_dx, want_dw;
  conv_gradient_reference(s, n, x, p, harness.r().data(), want_dx, want_dw);
  Comparison cx(name + "dx vs double", kForwardTolerance, 1.0);
  for (size_t i = 0; i < dx.size(); ++i) cx.add(dx[i], want_dx[i], at("dx", i));
  cx.finish();
  Comparison cw(name + "dW vs double", dw_tolerance, 1.0);
  for (size_t i = 0; i < dp.size(); ++i) cw.add(dp[i], want_dw[i], at("dW", i));
  cw.finish();
}

// Worst dW errors seen: 9.7e-6 (im2col), 2.4e-5 (Winograd: each dU sum is then combined by G^T . G).
void test_conv2d_winograd_groups(void **) {
  check_conv_gradients(15, 5e-5);
  check_conv_gradients(16, 5e-5);
}

void check_pool(PoolKind kind, size_t window, size_t stride) {
  ModelSpec m(Shape{2, 6, 7});
  m.add_pool(kind, window, stride);
  const OpView s = only_node(m);
  assert_string_equal(s.kind.c_str(), kind == PoolKind::kMax ? "max_pool2d" : "avg_pool2d");
  LayerCase c;
  c.name = std::string(kind == PoolKind::kMax ? "maxpool " : "avgpool ") + std::to_string(window) + "s" +
           std::to_string(stride);
  c.model = m;
  c.n = 2;
  const size_t count = c.n * s.in.size();
  TestRng rng(20 + window * 3 + stride);
  if (kind == PoolKind::kMax) {
    assert_int_equal(m.nodes()[0].layout.saved_bytes_per_sample, s.out.size() * sizeof(int32_t));
    // Distinct values 0.1 apart in random order: every window's maximum beats the runner-up by >= 0.1, so
    // the argmax cannot change under a perturbation of h = 1e-2.
    std::vector<size_t> order(count);
    std::iota(order.begin(), order.end(), size_t(0));
    for (size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    c.x.resize(count);
    for (size_t i = 0; i < count; ++i) c.x[i] = 0.1f * (float(order[i]) - float(count) / 2.0f);
  } else {
    c.x = rng.vector(count, -1.0f, 1.0f);
  }
  c.reference = pool_reference;
  check_layer(c);
}

void test_avgpool_2s2(void **) {
  check_pool(PoolKind::kAvg, 2, 2);
}  // 7 wide: last column unused
void test_avgpool_3s1(void **) {
  check_pool(PoolKind::kAvg, 3, 1);
}  // overlapping windows
void test_maxpool_2s2(void **) {
  check_pool(PoolKind::kMax, 2, 2);
}
void test_maxpool_3s2(void **) {
  check_pool(PoolKind::kMax, 3, 2);
}  // overlapping windows

void check_activation(Activation kind, const char *name) {
  ModelSpec m(Shape{3, 2, 4});
  m.add_activation(kind);
  const OpView s = only_node(m);
  assert_string_equal(s.kind.c_str(), name);
  assert_true(s.out == s.in);
  LayerCase c;
  c.name = name;
  c.model = m;
  c.n = 3;
  TestRng rng(30 + size_t(kind));
  c.x.resize(c.n * s.in.size());
  for (auto &v : c.x) {
    // Both signs; kept >= 0.05 away from 0 so that a perturbation of 1e-2 never crosses relu's kink.
    const float magnitude = rng.uniform(0.05f, 2.5f);
    v = rng.uniform() < 0.5 ? -magnitude : magnitude;
  }
  c.reference = activation_reference;
  check_layer(c);
}

void test_relu(void **) {
  check_activation(Activation::kRelu, "relu");
}
void test_sigmoid(void **) {
  check_activation(Activation::kSigmoid, "sigmoid");
}
void test_tanh(void **) {
  check_activation(Activation::kTanh, "tanh");
}

// Flatten is a view: the executor aliases its output to its input and never calls a kernel, so its
// gradient is the identity by construction (the network checks below run through one). What is checked
// here is that contract: the shape (rank 1), no parameters, nothing saved, the view flag, no CPU kernel,
// and a CPU device accepting the op all the same.
void test_flatten(void **) {
  ModelSpec m(Shape{2, 3, 4});
  m.add_flatten();
  const OpView s = only_node(m);
  const dpt::Node &node = m.nodes()[0];
  assert_string_equal(s.kind.c_str(), "flatten");
  assert_true(s.out == (Shape{24}));
  assert_int_equal(s.out.rank(), 1);
  assert_int_equal(s.parameters, 0);
  assert_int_equal(node.layout.buffers.size(), 0);
  assert_true(node.layout.view);
  assert_int_equal(node.layout.saved_bytes_per_sample, 0);
  assert_null(dpt::cpu::find_op("flatten"));
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  kernels.check_supported("flatten", dpt::DType::kF32, dpt::DType::kF32);  // does not throw
}

PassInfo dropout_info(size_t n, uint64_t first_sample, uint64_t step) {
  PassInfo info;
  info.n = n;
  info.first_sample = first_sample;
  info.seed = 42;
  info.step = step;
  info.training = true;
  return info;
}

void test_dropout_gradients(void **) {
  ModelSpec m(Shape{2, 3, 3});
  m.add_dropout(0.3f);
  const OpView s = only_node(m);
  assert_true(std::fabs(s.rate - 0.3) < 1e-7);
  LayerCase c;
  c.name = "dropout 0.3 (training)";
  c.model = m;
  c.n = 3;
  c.info = dropout_info(c.n, 5, 3);
  TestRng rng(40);
  c.x = rng.vector(c.n * s.in.size(), -1.0f, 1.0f);
  check_layer(c);  // the mask is a pure function of (seed, step, node, sample, element), so FD works
}

// The mask contract: values are 0 or 1/(1 - rate); the drop fraction is the rate; a sample's mask depends on
// its global position (first_sample + s), not on the slice it is in; steps differ, and so do nodes;
// evaluation is identity.
void test_dropout_mask(void **) {
  const float rate = 0.3f;
  ModelSpec m(Shape{1, 20, 20});
  m.add_dropout(rate);
  const OpView s = only_node(m);
  const size_t per = s.out.size(), n = 8;
  assert_int_equal(m.nodes()[0].layout.saved_bytes_per_sample, per * sizeof(float));
  std::vector<float> x(n * per);
  TestRng rng(41);
  for (auto &v : x) v = rng.uniform(0.5f, 1.5f);  // never 0, so a zero output means dropped
  OpHarness h(m, 0, n, dropout_info(n, 0, 9), 1);
  h.set_node_key(1);
  const std::vector<float> y = h.forward(nullptr, x);
  const float keep = 1.0f / (1.0f - rate);
  size_t dropped = 0;
  for (size_t i = 0; i < n * per; ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
    } else if (y[i] != x[i] * keep) {
      fail_msg("dropout y[%zu] = %.9g, expected 0 or %.9g", i, double(y[i]), double(x[i] * keep));
    }
  }
  // 3200 Bernoulli(0.3) draws: mean 960, standard deviation 26; allow 5 sigma.
  print_message("dropout: %zu of %zu dropped (rate %.2f)\n", dropped, n * per, double(rate));
  assert_in_range(dropped, 960 - 130, 960 + 130);

  // Samples 3..7 computed as their own slice (first_sample = 3) get the same masks.
  OpHarness h5(m, 0, 5, dropout_info(5, 3, 9), 1);
  h5.set_node_key(1);
  const std::vector<float> x5(x.begin() + long(3 * per), x.end());
  const std::vector<float> y2 = h5.forward(nullptr, x5);
  assert_memory_equal(y2.data(), y.data() + 3 * per, 5 * per * sizeof(float));

  // Another step, another mask; another node, another mask (two independent masks differ in ~42% of
  // places).
  auto differ = [&](const std::vector<float> &other) {
    size_t d = 0;
    for (size_t i = 0; i < n * per; ++i) d += (other[i] == 0.0f) != (y[i] == 0.0f);
    return d;
  };
  OpHarness h10(m, 0, n, dropout_info(n, 0, 10), 1);
  h10.set_node_key(1);
  assert_true(differ(h10.forward(nullptr, x)) > n * per / 10);
  OpHarness other_node(m, 0, n, dropout_info(n, 0, 9), 1);
  other_node.set_node_key(2);
  assert_true(differ(other_node.forward(nullptr, x)) > n * per / 10);

  // Evaluation: the identity.
  PassInfo eval = dropout_info(n, 0, 9);
  eval.training = false;
  OpHarness he(m, 0, n, eval, 1);
  const std::vector<float> y3 = he.forward(nullptr, x);
  assert_memory_equal(y3.data(), x.data(), n * per * sizeof(float));
}

// ---------------------------------------------------------------------------------------------------------
// Softmax cross-entropy

double reference_cross_entropy(const float *z, size_t classes, int32_t label) {
  double zmax = -INFINITY;
  for (size_t c = 0; c < classes; ++c) zmax = std::max(zmax, double(z[c]));
  double sum = 0.0;
  for (size_t c = 0; c < classes; ++c) sum += std::exp(double(z[c]) - zmax);
  return zmax + std::log(sum) - double(z[label]);
}

// softmax(z) - onehot(label), in double.
std::vector<double> reference_dlogits(const float *z, size_t classes, int32_t label) {
  double zmax = -INFINITY;
  for (size_t c = 0; c < classes; ++c) zmax = std::max(zmax, double(z[c]));
  double sum = 0.0;
  for (size_t c = 0; c < classes; ++c) sum += std::exp(double(z[c]) - zmax);
  std::vector<double> d(classes);
  for (size_t c = 0; c < classes; ++c) d[c] = std::exp(double(z[c]) - zmax) / sum - (int32_t(c) == label);
  return d;
}

void test_softmax_cross_entropy(void **) {
  const size_t n = 3, classes = 5;
  TestRng rng(50);
  std::vector<float> z = rng.vector(n * classes, -3.0f, 3.0f);
  const std::vector<int32_t> labels = {2, 0, 4};
  z[0 * classes + 3] = 5.0f;  // sample 0 predicts 3 (wrong), sample 1 predicts 0 (right)
  z[1 * classes + 0] = 5.0f;
  z[2 * classes + 1] = 5.0f;  // sample 2 predicts 1 (wrong)

  std::vector<float> d(n * classes, NAN);
  const dpt::cpu::LossStats stats =
      dpt::cpu::softmax_cross_entropy(z.data(), labels.data(), n, classes, d.data());
  double want = 0.0;
  for (size_t s = 0; s < n; ++s) want += reference_cross_entropy(&z[s * classes], classes, labels[s]);
  Comparison cl("softmax cross-entropy loss_sum", 1e-12, 1.0);
  cl.add(stats.loss_sum, want, "loss_sum");
  cl.finish();
  assert_int_equal(stats.correct, 1);

  // dlogits against the closed form softmax - onehot (fp32 output: 1e-6 absolute).
  Comparison cr("softmax cross-entropy dlogits vs closed form", 1e-6, 1.0);
  for (size_t s = 0; s < n; ++s) {
    const std::vector<double> want_d = reference_dlogits(&z[s * classes], classes, labels[s]);
    for (size_t c = 0; c < classes; ++c) cr.add(d[s * classes + c], want_d[c], at("dz", s * classes + c));
  }
  cr.finish();

  // No gradient requested: same statistics.
  const dpt::cpu::LossStats plain =
      dpt::cpu::softmax_cross_entropy(z.data(), labels.data(), n, classes, nullptr);
  assert_true(plain.loss_sum == stats.loss_sum);
  assert_int_equal(plain.correct, stats.correct);

  // dlogits vs finite differences of loss_sum (summed over samples, not divided by n).
  auto loss = [&] {
    return dpt::cpu::softmax_cross_entropy(z.data(), labels.data(), n, classes, nullptr).loss_sum;
  };
  Comparison cg("softmax cross-entropy dlogits vs fd", kLayerTolerance, 1.0);
  for (size_t i = 0; i < z.size(); ++i) cg.add(d[i], central_difference(z, i, 1e-3, loss), at("dz", i));
  cg.finish();

  // Large logits: no overflow, finite values equal to the (max-shifted) reference.
  std::vector<float> big(z);
  for (auto &v : big) v += 1000.0f;
  std::vector<float> dbig(n * classes, NAN);
  const dpt::cpu::LossStats sb =
      dpt::cpu::softmax_cross_entropy(big.data(), labels.data(), n, classes, dbig.data());
  double want_big = 0.0;
  for (size_t s = 0; s < n; ++s) want_big += reference_cross_entropy(&big[s * classes], classes, labels[s]);
  Comparison cb("softmax cross-entropy at logits ~1000", 1e-6, 1.0);
  cb.add(sb.loss_sum, want_big, "loss_sum");
  for (size_t s = 0; s < n; ++s) {
    const std::vector<double> want_d = reference_dlogits(&big[s * classes], classes, labels[s]);
    for (size_t c = 0; c < classes; ++c) cb.add(dbig[s * classes + c], want_d[c], at("dz", s * classes + c));
  }
  cb.finish();
  assert_int_equal(sb.correct, 1);
}

// ---------------------------------------------------------------------------------------------------------
// The whole network

ModelSpec network_spec(bool with_dropout, bool bias = true) {
  ModelSpec m(Shape{2, 6, 6});
  m.add_conv2d(3, 3, 1, 1, bias);
  m.add_activation(Activation::kRelu);
  m.add_pool(PoolKind::kMax, 2, 2);
  m.add_flatten();
  m.add_dense(8, bias);
  m.add_activation(Activation::kTanh);
  if (with_dropout) m.add_dropout(0.25f);
  m.add_dense(4);
  return m;
}

struct NetworkCase {
  size_t n = 3;
  uint64_t seed = 0;
  std::vector<float> x, params;
  std::vector<int32_t> labels;
};

// True when no perturbation of one conv parameter by h can move a relu input across 0 or change a max-pool
// argmax (a conv parameter moves each conv output by at most h * max(1, max|x|)): then the loss is smooth
// along every finite-difference step and the check is meaningful.
bool smooth_around(const ModelSpec &spec, const NetworkCase &c, double h) {
  const OpView conv = view_of(spec, 0), pool = view_of(spec, 2);
  assert_string_equal(conv.kind.c_str(), "conv2d");
  assert_string_equal(pool.kind.c_str(), "max_pool2d");
  const dpt::Node &conv_node = spec.nodes()[0];
  OpHarness layer(spec, 0, c.n, PassInfo{c.n, 0, c.seed, 0, true, nullptr}, 1);
  const std::vector<float> z = layer.forward(c.params.data() + conv_node.param_offset, c.x);
  double xmax = 1.0;
  for (float v : c.x) xmax = std::max(xmax, double(std::fabs(v)));
  const double margin = 2.0 * h * xmax;
  for (float v : z)
    if (std::fabs(v) < margin) return false;
  const size_t k = pool.kernel, ih = pool.in[1], iw = pool.in[2];
  for (size_t plane = 0; plane < c.n * pool.in[0]; ++plane)
    for (size_t oy = 0; oy < pool.out[1]; ++oy)
      for (size_t ox = 0; ox < pool.out[2]; ++ox) {
        double first = 0.0, second = 0.0;  // the two largest relu outputs of the window
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const double v =
                std::max(0.0, double(z[(plane * ih + oy * pool.stride + i) * iw + ox * pool.stride + j]));
            if (v > first) {
              second = first;
              first = v;
            } else if (v > second) {
              second = v;
            }
          }
        if (first > 0.0 && first - second < 2.0 * margin) return false;
      }
  return true;
}

NetworkCase make_network_case(const ModelSpec &spec, size_t n, double h) {
  for (uint64_t seed = 1; seed < 1000; ++seed) {
    NetworkCase c;
    c.n = n;
    c.seed = seed;
    TestRng rng(seed * 7919);
    c.x = rng.vector(n * spec.input().size(), -1.0f, 1.0f);
    c.params.assign(spec.parameter_count(), 0.0f);
    dpt::init_parameters(spec, c.params.data(), seed, dpt::InitScheme::kUniformFanIn, 0.01f);
    for (size_t s = 0; s < n; ++s) c.labels.push_back(int32_t(rng.below(spec.output().size())));
    if (smooth_around(spec, c, h)) return c;
  }
  fail_msg("test setup: no seed below 1000 gives a loss that is smooth around the parameters");
  return {};
}

void check_network_gradients(bool with_dropout, bool bias = true) {
  const double h = 1e-3;
  const ModelSpec spec = network_spec(with_dropout, bias);
  NetworkCase c = make_network_case(spec, 3, h);
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  dpt::Network net(spec, kernels);
  net.reserve(c.n);
  std::copy(c.x.begin(), c.x.end(), net.input());
  const PassInfo info{c.n, 0, c.seed, 0, true, nullptr};

  // Biases start at zero; make them nonzero so that their gradients are checked at a generic point. The
  // nodes' parameters tile the flat vector in node order.
  TestRng rng(c.seed);
  size_t offset = 0, biases = 0;
  for (const dpt::Node &node : spec.nodes()) {
    assert_int_equal(node.param_offset, offset);
    for (const dpt::ParamInfo &p : node.layout.params) {
      if (p.init != dpt::ParamInit::kFanIn) {
        for (size_t i = 0; i < p.size(); ++i) c.params[offset + i] = rng.uniform(-0.01f, 0.01f);
        ++biases;
      }
      offset += p.size();
    }
  }
  assert_int_equal(offset, c.params.size());
  assert_int_equal(biases, bias ? 3 : 1);
  assert_true(smooth_around(spec, c, h));

  std::vector<float> grads(c.params.size(), 0.0f);
  const dpt::LossStats stats = net.forward(c.params.data(), nullptr, c.labels.data(), info);
  net.backward(c.params.data(), grads.data(), info);
  assert_true(std::isfinite(stats.loss_sum) && stats.loss_sum > 0.0);

  auto loss = [&] { return net.forward(c.params.data(), nullptr, c.labels.data(), info).loss_sum; };
  Comparison cmp(std::string("network") + (with_dropout ? " with dropout" : "") + (bias ? "" : " no bias") +
                     " dparams vs fd",
                 2e-3, 0.1);
  size_t nonzero = 0;
  for (size_t i = 0; i < c.params.size(); ++i) {
    const double fd = central_difference(c.params, i, h, loss);
    cmp.add(grads[i], fd, at("grad", i));
    nonzero += std::fabs(fd) > 1e-4;
  }
  cmp.finish();
  // The check means something only if most gradients are nonzero (relu and max-pool zero out a share).
  print_message("network: %zu of %zu parameter gradients nonzero (seed %llu)\n", nonzero, c.params.size(),
                (unsigned long long)c.seed);
  assert_true(nonzero > c.params.size() / 2);

  // Backward accumulates: forward + backward again into the same buffer doubles it.
  std::vector<float> twice = grads;
  net.forward(c.params.data(), nullptr, c.labels.data(), info);
  net.backward(c.params.data(), twice.data(), info);
  Comparison ca("network dparams accumulate", kSumTolerance, 1.0);
  for (size_t i = 0; i < grads.size(); ++i) ca.add(twice[i], 2.0 * double(grads[i]), at("2*grad", i));
  ca.finish();
}

void test_network_gradients(void **) {
  check_network_gradients(false);
}
void test_network_gradients_dropout(void **) {
  check_network_gradients(true);
}
// conv2d and the first dense without biases: the flat vector holds one tensor fewer for each.
void test_network_gradients_no_bias(void **) {
  check_network_gradients(false, false);
}

// The gradient of a batch is the SUM of its samples' gradients (not the mean), and so is the loss; with
// dropout, a sample computed alone at first_sample = s gets the same mask as at position s of the batch.
void check_batch_is_sum_of_samples(bool with_dropout) {
  const ModelSpec spec = network_spec(with_dropout);
  const size_t n = 3;
  NetworkCase c = make_network_case(spec, n, 1e-3);
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  dpt::Network net(spec, kernels);
  net.reserve(n);
  const size_t in = spec.input().size();

  std::vector<float> batch_grads(c.params.size(), 0.0f);
  std::copy(c.x.begin(), c.x.end(), net.input());
  const PassInfo info{n, 0, c.seed, 4, true, nullptr};
  const double batch_loss = net.forward(c.params.data(), nullptr, c.labels.data(), info).loss_sum;
  net.backward(c.params.data(), batch_grads.data(), info);

  std::vector<double> sum_grads(c.params.size(), 0.0);
  double sum_loss = 0.0;
  for (size_t s = 0; s < n; ++s) {
    std::vector<float> g(c.params.size(), 0.0f);
    std::copy(c.x.begin() + long(s * in), c.x.begin() + long((s + 1) * in), net.input());
    const PassInfo one{1, s, c.seed, 4, true, nullptr};
    sum_loss += net.forward(c.params.data(), nullptr, &c.labels[s], one).loss_sum;
    net.backward(c.params.data(), g.data(), one);
    for (size_t i = 0; i < g.size(); ++i) sum_grads[i] += g[i];
  }
  Comparison cmp(std::string("batch = sum of samples") + (with_dropout ? " (dropout)" : ""), kSumTolerance,
                 1.0);
  cmp.add(batch_loss, sum_loss, "loss_sum");
  double largest = 0.0;
  for (size_t i = 0; i < sum_grads.size(); ++i) {
    cmp.add(batch_grads[i], sum_grads[i], at("grad", i));
    largest = std::max(largest, std::fabs(sum_grads[i]));
  }
  cmp.finish();
  assert_true(largest > 0.05);  // a mean instead of a sum would be off by 3x, far beyond the tolerance
}

void test_batch_is_sum_of_samples(void **) {
  check_batch_is_sum_of_samples(false);
}
void test_batch_is_sum_of_samples_dropout(void **) {
  check_batch_is_sum_of_samples(true);
}

// ---------------------------------------------------------------------------------------------------------
// Memory arena

void test_arena_limit(void **) {
  dpt::MemoryArena arena("cpu:7", 1000);
  assert_int_equal(arena.limit(), 1000);
  assert_int_equal(arena.in_use(), 0);
  const std::string message =
      dpt_test::expect_error([&] { dpt::DeviceBuffer big(arena, 500); }, DPT_ERROR_OUT_OF_MEMORY,
                             "2000-byte buffer in a 1000-byte arena");
  print_message("arena message: %s\n", message.c_str());
  assert_non_null(std::strstr(message.c_str(), "cpu:7"));
  assert_int_equal(arena.in_use(), 0);  // the failed request is not charged
  {
    dpt::DeviceBuffer a(arena, 100);
    assert_int_equal(arena.in_use(), 400);
    assert_int_equal(a.size(), 100);
    assert_non_null(a.data());
    assert_int_equal(reinterpret_cast<uintptr_t>(a.data()) % 64, 0);
    dpt::DeviceBuffer b(arena, 100);
    assert_int_equal(arena.in_use(), 800);
    dpt_test::expect_error([&] { dpt::DeviceBuffer c(arena, 100); }, DPT_ERROR_OUT_OF_MEMORY,
                           "third 400-byte buffer");
    assert_int_equal(arena.in_use(), 800);
    dpt::DeviceBuffer moved(std::move(a));  // a move transfers the charge, it does not add or drop one
    assert_int_equal(arena.in_use(), 800);
    b = std::move(moved);  // b's old storage is released
    assert_int_equal(arena.in_use(), 400);
    dpt::DeviceBuffer exact(arena, 150);  // 600 bytes: exactly at the limit is allowed
    assert_int_equal(arena.in_use(), 1000);
  }
  assert_int_equal(arena.in_use(), 0);

  dpt::MemoryArena unlimited("cpu:0", 0);
  {
    dpt::DeviceBuffer huge(unlimited, size_t(1) << 20);
    assert_int_equal(unlimited.in_use(), 4u << 20);
  }
  assert_int_equal(unlimited.in_use(), 0);
}

// A network whose buffers exceed the arena fails with OUT_OF_MEMORY naming the device, and the arena is back
// at zero once the network is gone.
void test_network_out_of_memory(void **) {
  const ModelSpec spec = network_spec(false);
  // The constructor allocates the conv im2col scratch: 2 * (2*3*3) * (6*6) floats = 5184 bytes.
  dpt::MemoryArena small("cpu:3", 4096);
  dpt::CpuKernels small_kernels(small);
  const std::string message = dpt_test::expect_error([&] { dpt::Network net(spec, small_kernels); },
                                                     DPT_ERROR_OUT_OF_MEMORY, "network in a 4096-byte arena");
  assert_non_null(std::strstr(message.c_str(), "cpu:3"));
  assert_int_equal(small.in_use(), 0);

  dpt::MemoryArena medium("cpu:4", 64 * 1024);
  {
    dpt::CpuKernels medium_kernels(medium);
    dpt::Network net(spec, medium_kernels);
    net.reserve(2);
    const uint64_t after_two = medium.in_use();
    assert_true(after_two > 5184);
    dpt_test::expect_error([&] { net.reserve(1000); }, DPT_ERROR_OUT_OF_MEMORY, "reserve(1000) in 64 KiB");
    assert_true(medium.in_use() <= 64 * 1024);
  }
  assert_int_equal(medium.in_use(), 0);
}

}  // namespace

int main() {
  dpt::blas::use_single_thread();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dense),
      cmocka_unit_test(test_dense_no_bias),
      cmocka_unit_test(test_conv2d_s1_p0),
      cmocka_unit_test(test_conv2d_s1_p1),
      cmocka_unit_test(test_conv2d_s2_p0),
      cmocka_unit_test(test_conv2d_s2_p1),
      cmocka_unit_test(test_conv2d_no_bias_s1_p1),
      cmocka_unit_test(test_conv2d_no_bias_s2_p0),
      cmocka_unit_test(test_conv2d_ungrouped),
      cmocka_unit_test(test_conv2d_ragged_groups),
      cmocka_unit_test(test_conv2d_winograd_applies),
      cmocka_unit_test(test_conv2d_winograd),
      cmocka_unit_test(test_conv2d_winograd_groups),
      cmocka_unit_test(test_avgpool_2s2),
      cmocka_unit_test(test_avgpool_3s1),
      cmocka_unit_test(test_maxpool_2s2),
      cmocka_unit_test(test_maxpool_3s2),
      cmocka_unit_test(test_relu),
      cmocka_unit_test(test_sigmoid),
      cmocka_unit_test(test_tanh),
      cmocka_unit_test(test_flatten),
      cmocka_unit_test(test_dropout_gradients),
      cmocka_unit_test(test_dropout_mask),
      cmocka_unit_test(test_softmax_cross_entropy),
      cmocka_unit_test(test_network_gradients),
      cmocka_unit_test(test_network_gradients_dropout),
      cmocka_unit_test(test_network_gradients_no_bias),
      cmocka_unit_test(test_batch_is_sum_of_samples),
      cmocka_unit_test(test_batch_is_sum_of_samples_dropout),
      cmocka_unit_test(test_arena_limit),
      cmocka_unit_test(test_network_out_of_memory),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
