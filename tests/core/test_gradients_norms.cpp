// Gradient checks of the ops that came with the op seam (add, concat, global_avg_pool, gelu, layer_norm,
// batch_norm): each CPU kernel called through its dpt_op_call as the graph executor calls it, forward
// against a naive double-precision reference and backward against central finite differences; batch_norm's
// two phases, running statistics, evaluation, local vs global normalisation and empty slices; and the whole
// Network on DAGs: a residual block with batch norms, tensors read by several ops (the executor's gradient
// accumulation), and the sizes of the buffers the executor hands the kernels. The ops of version 0.1 are
// checked in test_gradients.cpp, by the same method.
//
// Method (as test_gradients.cpp). For an op y = f(x0, x1, ...; p) and fixed random weights r, the scalar
// L = sum_i r_i y_i (summed in double) has dL/dy = r, so backward(dy = r) must return dL/dx_k and dL/dp.
// Each is compared, for EVERY element of EVERY input and EVERY parameter, with the central difference
// (L(v + h) - L(v - h)) / ((v + h) - (v - h)), the denominator taken from the two fp32 values actually fed
// to forward. An op with batch statistics runs as the executor runs one replica that is the whole batch:
// forward STATISTICS, the local sums copied to the global half, forward APPLY; backward STATISTICS, backward
// APPLY. L sums over the WHOLE batch and every forward recomputes the statistics, so the differences see
// that the mean and variance depend on every x: they check the full batch-norm gradient, not just the
// per-element part. The running statistics do not enter a training forward; each evaluation of L gets a
// fresh copy of them all the same.
//
// Tolerances (the worst error seen is printed by every check):
//  * Ops: |analytic - fd| <= 1e-3 * max(1, |fd|), as in test_gradients.cpp. add, concat and
//    global_avg_pool are linear (no truncation error; what is left is the fp32 rounding of the touched
//    outputs, ~1e-7 in L over 2h = 2e-2: ~1e-5; seen: <= 3e-6). gelu is smooth: the truncation error of
//    the central difference is h^2/6 * |f'''|, and |f'''| <= 0.78 for both forms (its maximum, near
//    |x| = 0.74), so <= 1.3e-5 at h = 1e-2, plus rounding as above (seen: 1.3e-5, the truncation bound).
//  * layer_norm and batch_norm (training) are not linear in x: xhat = (x - mean) / sqrt(var + eps) with the
//    mean and variance of the row (layer_norm) or of the channel over the batch (batch_norm), so there is a
//    truncation error h^2/6 * |L'''| with L''' = O(1/sigma^3) (sigma = 0.3 .. 1.2 here). The fp32 error:
//    the kernels compute in double and round each y once (at most ulp(y)/2, ~3.5e-8 |y| rms), and
//    perturbing one x moves every y of its row or channel, N of them (layer_norm: d = 5..6; batch_norm: the
//    batch's n * h * w = 24, or n = 6), so the rounding noise of L(v + h) - L(v - h) is
//    ~3.5e-8 * sqrt(2 N E[r^2 y^2]) ~ 1.5e-7, i.e. ~7e-5 * (1e-3 / h) after dividing by 2h. Measured, the
//    worst over both ops and all elements: h = 3e-4: 5e-4, 1e-3: 1.1e-4, 3e-3: 4.2e-5, 1e-2: 7.1e-5 --
//    1/h (rounding) below 3e-3, truncation showing above. So these use h = 3e-3 and the same
//    1e-3 * max(1, |fd|), a 20x margin, while dropping the mean term or the xhat * mean(dy * xhat) term
//    from batch_norm's dx gives errors of 0.09 .. 0.53 (checked by breaking the kernel once). Weight and
//    bias enter linearly (no truncation).
//  * batch_norm's running statistics: the update formula in double, one fp32 rounding of the result and the
//    kernel's variance as E[x^2] - mean^2 in double: 1e-6 relative (seen: 4e-8). Forward references: 1e-5
//    (fp32 outputs; seen: 6e-8).
//  * Two replicas vs one batch (sync) and one slice vs a replica (local): the same double sums added in
//    another order, one fp32 rounding: 1e-5 relative, as kSumTolerance in test_gradients.cpp (seen: 7e-8).
//  * Network: |analytic - fd| <= 2e-3 * max(0.1, |fd|) with h = 1e-3, as in test_gradients.cpp: the loss
//    passes through every op in fp32 (~1e-7 relative on logits of size ~1), over 2h = 2e-3 ~1e-4 absolute.
//    Seen: 7e-4 of the scale on the residual networks, 2.7e-4 on the shared-tensor one; it is rounding,
//    not truncation: it scales as 1/h (h = 3e-4: 1.9e-3, 1e-3: 7e-4, 3e-3: 2.6e-4 where no relu is
//    crossed). A larger h would need relu margins that no seed below 2000 gives. Relu kinks are kept out
//    of reach: a seed is chosen whose relu inputs all stay >= 0.02 away from 0, and every perturbed
//    evaluation checks that no relu input changed sign (a crossing fails the test as a setup error rather
//    than pass or fail on a difference across a kink).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/arena.hpp"
#include "core/error.hpp"
#include "graph/init_parameters.hpp"
#include "graph/model_spec.hpp"
#include "graph/network.hpp"
#include "graph/op_def.hpp"
#include "graph/pass_info.hpp"
#include "interface/op_call.h"
#include "interface/op_math.hpp"

#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

// cmocka.h 1.1.5 has no extern "C" guards of its own.
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"
#include "op_harness.hpp"

namespace {

using namespace op_harness;

using dpt::Activation;
using dpt::ModelSpec;
using dpt::OpAttrs;
using dpt::PassInfo;
using dpt::Shape;
using dpt_test::Comparison;
using dpt_test::TestRng;

constexpr double kRunningTolerance = 1e-6;

constexpr double kEps = 1e-5;  // batch_norm and layer_norm eps

OpAttrs batch_norm_attrs(double momentum = 0.1) {
  return reals({kEps, momentum});
}

// ---------------------------------------------------------------------------------------------------------
// add, concat, global_avg_pool

// add reads the model's input and a second tensor of its shape (a relu of it, never run here: only its
// shape is used).
void test_add(void **) {
  ModelSpec m(Shape{2, 3, 4});
  const size_t other = m.add_activation(Activation::kRelu);
  m.add(dpt::op_def("add"), {other, 0}, {});
  assert_true(m.output() == (Shape{2, 3, 4}));
  OpCase c;
  c.name = "add [2,3,4]";
  c.model = m;
  c.n = 3;
  c.x = random_inputs(m, c.n, 101);
  c.reference = [](const OpCase &k) {
    std::vector<double> y(k.x[0].size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = double(k.x[0][i]) + double(k.x[1][i]);
    return y;
  };
  check_op(c);
}

std::vector<double> concat_reference(const OpCase &k) {
  const dpt::Node &node = k.model.nodes().back();
  std::vector<double> y;
  for (size_t s = 0; s < k.n; ++s)
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const size_t size = k.model.tensors()[node.inputs[i]].shape.size();
      for (size_t e = 0; e < size; ++e) y.push_back(k.x[i][s * size + e]);
    }
  return y;
}

// concat of 2 or 3 tensors [c_i, 3, 2] with different channel counts, read out of order (the model's input
// in the middle): a mix-up of offsets or sizes shows.
void check_concat(size_t count) {
  ModelSpec m(Shape{1, 3, 2});
  const size_t two = m.add(dpt::op_def("conv2d"), {0}, ints({2, 1, 1, 0, 0}));
  const size_t three = m.add(dpt::op_def("conv2d"), {0}, ints({3, 1, 1, 0, 0}));
  const std::vector<size_t> read =
      count == 2 ? std::vector<size_t>{three, 0} : std::vector<size_t>{two, 0, three};
  m.add(dpt::op_def("concat"), read, {});
  assert_true(m.output() == (count == 2 ? Shape{4, 3, 2} : Shape{6, 3, 2}));
  OpCase c;
  c.name = "concat of " + std::to_string(count) + " [c,3,2]";
  c.model = m;
  c.n = 3;
  c.x = random_inputs(m, c.n, 110 + count);
  c.reference = concat_reference;
  check_op(c);
}
void test_concat2(void **) {
  check_concat(2);
}
void test_concat3(void **) {
  check_concat(3);
}

void test_global_avg_pool(void **) {
  ModelSpec m(Shape{3, 4, 5});
  m.add(dpt::op_def("global_avg_pool"), {0}, {});
  assert_true(m.output() == (Shape{3}));
  OpCase c;
  c.name = "global_avg_pool [3,4,5]";
  c.model = m;
  c.n = 2;
  c.x = random_inputs(m, c.n, 120);
  c.reference = [](const OpCase &k) {
    std::vector<double> y(k.n * 3, 0.0);
    for (size_t plane = 0; plane < y.size(); ++plane) {
      for (size_t i = 0; i < 20; ++i) y[plane] += k.x[0][plane * 20 + i];
      y[plane] /= 20.0;
    }
    return y;
  };
  check_op(c);
}

// ---------------------------------------------------------------------------------------------------------
// gelu, layer_norm

void check_gelu(bool tanh_form) {
  ModelSpec m(Shape{3, 2, 4});
  m.add(dpt::op_def("gelu"), {0}, ints({tanh_form ? 1 : 0}));
  OpCase c;
  c.name = tanh_form ? "gelu (tanh)" : "gelu (erf)";
  c.model = m;
  c.n = 3;
  c.x = random_inputs(m, c.n, 130 + tanh_form, -4.0f, 4.0f);  // both tails and the curved middle
  c.reference = [tanh_form](const OpCase &k) {
    std::vector<double> y(k.x[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      const double v = k.x[0][i];
      y[i] = tanh_form
                 ? 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)))
                 : v * 0.5 * std::erfc(-v / std::sqrt(2.0));  // x Phi(x)
    }
    return y;
  };
  check_op(c);
}
void test_gelu_erf(void **) {
  check_gelu(false);
}
void test_gelu_tanh(void **) {
  check_gelu(true);
}

// op_math.hpp's float exp and tanh (the tanh GELU's), against double on a dense grid: e^x relative error
// below 2e-7 over [-87, 0], tanh absolute error below 2e-7 over [-20, 20] (measured: 8.3e-8, 8.9e-8), and
// exact at the ends.
void test_fast_exp_accuracy(void **) {
  double worst_exp = 0, worst_tanh = 0;
  for (int i = 0; i <= 870000; ++i) {
    const float x = -float(i) * 1e-4f;
    const double want = std::exp(double(x));
    worst_exp = std::max(worst_exp, std::fabs(double(dpt::op_math::exp_nonpositive(x)) - want) / want);
  }
  for (int i = -200000; i <= 200000; ++i) {
    const float u = float(i) * 1e-4f;
    worst_tanh = std::max(worst_tanh, std::fabs(double(dpt::op_math::tanh_float(u)) - std::tanh(double(u))));
  }
  print_message("exp_nonpositive: worst relative error %.3g; tanh_float: worst absolute error %.3g\n",
                worst_exp, worst_tanh);
  assert_true(worst_exp < 2e-7);
  assert_true(worst_tanh < 2e-7);
  assert_true(dpt::op_math::exp_nonpositive(0.0f) == 1.0f);
  assert_true(dpt::op_math::exp_nonpositive(-1000.0f) > 0.0f);
  assert_true(dpt::op_math::tanh_float(0.0f) == 0.0f && dpt::op_math::tanh_float(30.0f) == 1.0f);
  assert_true(dpt::op_math::tanh_float(-30.0f) == -1.0f);
}

// Each row of d (the last dimension) normalised by its own mean and (biased) variance, two-pass in double.
std::vector<double> layer_norm_reference(const OpCase &k) {
  const Shape &shape = k.model.input();
  const size_t d = shape[shape.rank() - 1], rows = k.x[0].size() / d;
  const float *w = k.params.data(), *b = k.params.data() + d;
  std::vector<double> y(k.x[0].size());
  for (size_t r = 0; r < rows; ++r) {
    const float *x = &k.x[0][r * d];
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; i < d; ++i) mean += x[i];
    mean /= double(d);
    for (size_t i = 0; i < d; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= double(d);
    for (size_t i = 0; i < d; ++i) y[r * d + i] = (x[i] - mean) / std::sqrt(var + kEps) * w[i] + b[i];
  }
  return y;
}

void check_layer_norm(const Shape &shape, uint64_t seed) {
  ModelSpec m(shape);
  m.add(dpt::op_def("layer_norm"), {0}, reals({kEps}));
  const dpt::Node &node = m.nodes()[0];
  const size_t d = shape[shape.rank() - 1];
  assert_int_equal(node.layout.params.size(), 2);
  assert_true(node.layout.params[0].shape == (Shape{d}) && node.layout.params[1].shape == (Shape{d}));
  assert_int_equal(node.layout.saved_bytes_per_sample, 2 * (shape.size() / d) * sizeof(float));
  OpCase c;
  c.name = "layer_norm " + shape.text();
  c.model = m;
  c.n = 2;
  c.h = 3e-3;  // not linear in x (see the header)
  TestRng rng(seed);
  c.x.push_back(rng.vector(c.n * shape.size(), -1.0f, 1.0f));
  // Rows with an offset (the mean matters) and different spreads (sigma 0.3 .. 1.2).
  for (size_t r = 0; r < c.x[0].size() / d; ++r) {
    const float offset = rng.uniform(-2.0f, 2.0f), scale = rng.uniform(0.5f, 2.0f);
    for (size_t i = 0; i < d; ++i) c.x[0][r * d + i] = offset + scale * c.x[0][r * d + i];
  }
  for (size_t i = 0; i < d; ++i) c.params.push_back(rng.uniform(0.5f, 1.5f) * (i % 2 ? -1.0f : 1.0f));
  for (size_t i = 0; i < d; ++i) c.params.push_back(rng.uniform(-0.5f, 0.5f));
  c.reference = layer_norm_reference;
  check_op(c);
}
void test_layer_norm_rank2(void **) {
  check_layer_norm(Shape{3, 5}, 140);  // [seq, d]
}
void test_layer_norm_rank1(void **) {
  check_layer_norm(Shape{6}, 141);
}

// ---------------------------------------------------------------------------------------------------------
// batch_norm

struct Moments {
  std::vector<double> mean, var;  // per channel; var biased
  size_t count = 0;
};

// Mean and biased variance per channel of x [n, c, pixels], two-pass in double.
Moments moments(const float *x, size_t n, size_t channels, size_t pixels) {
  Moments m;
  m.count = n * pixels;
  m.mean.assign(channels, 0.0);
  m.var.assign(channels, 0.0);
  for (size_t ch = 0; ch < channels; ++ch) {
    for (size_t s = 0; s < n; ++s)
      for (size_t p = 0; p < pixels; ++p) m.mean[ch] += x[(s * channels + ch) * pixels + p];
    m.mean[ch] /= double(m.count);
    for (size_t s = 0; s < n; ++s)
      for (size_t p = 0; p < pixels; ++p) {
        const double e = x[(s * channels + ch) * pixels + p] - m.mean[ch];
        m.var[ch] += e * e;
      }
    m.var[ch] /= double(m.count);
  }
  return m;
}

// y = (x - mean) / sqrt(var + eps) * weight + bias per channel, in double.
std::vector<double> normalise(const float *x, size_t n, size_t channels, size_t pixels,
                              const std::vector<double> &mean, const std::vector<double> &var,
                              const std::vector<float> &params) {
  std::vector<double> y(n * channels * pixels);
  for (size_t s = 0; s < n; ++s)
    for (size_t ch = 0; ch < channels; ++ch)
      for (size_t p = 0; p < pixels; ++p) {
        const size_t i = (s * channels + ch) * pixels + p;
        y[i] = (x[i] - mean[ch]) / std::sqrt(var[ch] + kEps) * params[ch] + params[channels + ch];
      }
  return y;
}

struct BatchNormCase {
  ModelSpec model{Shape{1}};
  size_t channels = 0, pixels = 0;
  std::vector<float> params, buffers;  // weight, bias; running mean, running var
};

// A batch_norm on shape with generic weights and biases and running statistics that are not the defaults.
BatchNormCase batch_norm_case(const Shape &shape, double momentum, uint64_t seed) {
  BatchNormCase b;
  b.model = ModelSpec(shape);
  b.model.add(dpt::op_def("batch_norm"), {0}, batch_norm_attrs(momentum));
  const dpt::Node &node = b.model.nodes()[0];
  b.channels = shape[0];
  b.pixels = shape.size() / b.channels;
  assert_int_equal(node.layout.params.size(), 2);
  assert_int_equal(node.layout.buffers.size(), 2);
  assert_int_equal(node.layout.statistics, 2 * b.channels + 1);
  assert_int_equal(node.layout.saved_bytes, (2 * b.channels + 1) * sizeof(double));
  assert_int_equal(b.model.buffer_count(), 2 * b.channels);
  TestRng rng(seed);
  for (size_t ch = 0; ch < b.channels; ++ch)
    b.params.push_back(rng.uniform(0.5f, 1.5f) * (ch % 2 ? -1.0f : 1.0f));
  for (size_t ch = 0; ch < b.channels; ++ch) b.params.push_back(rng.uniform(-0.5f, 0.5f));
  for (size_t ch = 0; ch < b.channels; ++ch) b.buffers.push_back(rng.uniform(-1.0f, 1.0f));
  for (size_t ch = 0; ch < b.channels; ++ch) b.buffers.push_back(rng.uniform(0.5f, 2.0f));
  return b;
}

// x [n, c, pixels] with a different offset (-2 .. 3) and spread (sigma ~0.3 .. 1.2) per channel, so that
// both the mean and the variance terms matter; shift moves every channel (another replica's slice).
std::vector<float> batch_norm_input(const BatchNormCase &b, size_t n, uint64_t seed, float shift = 0.0f) {
  TestRng rng(seed);
  std::vector<float> offset, scale;
  for (size_t ch = 0; ch < b.channels; ++ch) {
    offset.push_back(rng.uniform(-2.0f, 3.0f) + shift);
    scale.push_back(rng.uniform(0.5f, 2.0f));
  }
  std::vector<float> x(n * b.channels * b.pixels);
  for (size_t s = 0; s < n; ++s)
    for (size_t ch = 0; ch < b.channels; ++ch)
      for (size_t p = 0; p < b.pixels; ++p)
        x[(s * b.channels + ch) * b.pixels + p] = offset[ch] + scale[ch] * rng.uniform(-1.0f, 1.0f);
  return x;
}

// Training: the full gradient (through the batch's mean and variance) against finite differences of L over
// the whole batch, run as the executor runs one replica; sync and local normalisation agree there.
void check_batch_norm_training(const Shape &shape, size_t n, bool sync) {
  BatchNormCase b = batch_norm_case(shape, 0.1, 150 + shape.rank());
  OpCase c;
  c.name = "batch_norm " + shape.text() + " n=" + std::to_string(n) + (sync ? " sync" : " local");
  c.model = b.model;
  c.n = n;
  c.h = 3e-3;  // not linear in x (see the header)
  c.sync = sync;
  c.x.push_back(batch_norm_input(b, n, 160 + shape.rank()));
  c.params = b.params;
  c.buffers = b.buffers;
  c.reference = [&b](const OpCase &k) {
    const Moments mo = moments(k.x[0].data(), k.n, b.channels, b.pixels);
    return normalise(k.x[0].data(), k.n, b.channels, b.pixels, mo.mean, mo.var, k.params);
  };
  check_op(c);
}
void test_batch_norm_chw(void **) {
  check_batch_norm_training(Shape{3, 2, 4}, 3, true);
}
void test_batch_norm_chw_local(void **) {
  check_batch_norm_training(Shape{3, 2, 4}, 3, false);
}
void test_batch_norm_c(void **) {
  check_batch_norm_training(Shape{4}, 6, true);
}
void test_batch_norm_c_local(void **) {
  check_batch_norm_training(Shape{4}, 6, false);
}

// running = (1 - momentum) running + momentum * batch statistic, the variance unbiased (N / (N - 1)), N the
// batch's element count per channel; what forward STATISTICS wrote (the sums and the count) and saved
// (mean, 1/sqrt(var + eps), count); a second pass compounds; evaluation leaves them alone.
void check_running_statistics(const Shape &shape, size_t n, double momentum) {
  BatchNormCase b = batch_norm_case(shape, momentum, 170 + shape.rank());
  const std::vector<float> x = batch_norm_input(b, n, 180 + shape.rank());
  const size_t ch_count = b.channels;
  NodeHarness hx(b.model, 0, n, true, true, 1);
  const Moments mo = moments(x.data(), n, ch_count, b.pixels);
  const double count = double(mo.count);
  std::vector<double> want_mean(b.buffers.begin(), b.buffers.begin() + long(ch_count));
  std::vector<double> want_var(b.buffers.begin() + long(ch_count), b.buffers.end());
  std::vector<float> buffers = b.buffers;
  Comparison cs("batch_norm " + shape.text() + " statistics and saved", kRunningTolerance, 1.0);
  Comparison cr(
      "batch_norm " + shape.text() + " running statistics, momentum " + std::to_string(momentum).substr(0, 4),
      kRunningTolerance, 1.0);
  for (int pass = 1; pass <= 2; ++pass) {
    hx.forward(b.params, buffers, {x});
    for (size_t ch = 0; ch < ch_count; ++ch) {
      want_mean[ch] = (1.0 - momentum) * double(float(want_mean[ch])) + momentum * mo.mean[ch];
      want_var[ch] =
          (1.0 - momentum) * double(float(want_var[ch])) + momentum * mo.var[ch] * count / (count - 1.0);
      cr.add(buffers[ch], want_mean[ch], at("running_mean", ch));
      cr.add(buffers[ch_count + ch], want_var[ch], at("running_var", ch));
      // The sums of this slice (local) and of the batch (global, the same here), per op_call.h's layout.
      for (const double *set : {hx.local(), hx.global()}) {
        cs.add(set[ch] / count, mo.mean[ch], at("sum/N", ch));
        cs.add(set[ch_count + ch] / count, mo.var[ch] + mo.mean[ch] * mo.mean[ch], at("sum_sq/N", ch));
      }
      cs.add(hx.saved()[ch], mo.mean[ch], at("saved mean", ch));
      cs.add(hx.saved()[ch_count + ch] * std::sqrt(mo.var[ch] + kEps), 1.0, at("saved inv_std*std", ch));
    }
    assert_true(hx.local()[2 * ch_count] == count && hx.global()[2 * ch_count] == count);
    assert_true(hx.saved()[2 * ch_count] == count);
  }
  cr.finish();
  cs.finish();

  // Evaluation does not change them.
  NodeHarness he(b.model, 0, n, false, true, 1);
  const std::vector<float> before = buffers;
  he.forward(b.params, buffers, {x});
  assert_true(buffers == before);
}
void test_batch_norm_running_statistics(void **) {
  check_running_statistics(Shape{3, 2, 4}, 3, 0.1);
  check_running_statistics(Shape{4}, 5, 0.3);
  check_running_statistics(Shape{2, 3, 3}, 2, 1.0);  // momentum 1: the batch's statistics themselves
  check_running_statistics(Shape{2, 3, 3}, 2, 0.0);  // momentum 0: unchanged
}

// Evaluation: one phase-0 call normalising with the running statistics (nothing of the batch).
void check_evaluation(const Shape &shape, size_t n) {
  BatchNormCase b = batch_norm_case(shape, 0.1, 190 + shape.rank());
  const std::vector<float> x = batch_norm_input(b, n, 200 + shape.rank());
  NodeHarness he(b.model, 0, n, false, true, 1);
  assert_false(he.phased());
  std::vector<float> buffers = b.buffers;
  const std::vector<float> y = he.forward(b.params, buffers, {x});  // also: the statistics left alone
  const std::vector<double> mean(b.buffers.begin(), b.buffers.begin() + long(b.channels));
  const std::vector<double> var(b.buffers.begin() + long(b.channels), b.buffers.end());
  const std::vector<double> want = normalise(x.data(), n, b.channels, b.pixels, mean, var, b.params);
  Comparison cmp("batch_norm " + shape.text() + " evaluation vs running statistics", kForwardTolerance, 1.0);
  for (size_t i = 0; i < y.size(); ++i) cmp.add(y[i], want[i], at("y", i));
  cmp.finish();
  // Sample by sample: the same (evaluation does not depend on the rest of the batch).
  const size_t per = b.channels * b.pixels;
  NodeHarness one(b.model, 0, 1, false, true, 1);
  for (size_t s = 0; s < n; ++s) {
    const std::vector<float> xs(x.begin() + long(s * per), x.begin() + long((s + 1) * per));
    const std::vector<float> ys = one.forward(b.params, buffers, {xs});
    assert_memory_equal(ys.data(), y.data() + s * per, per * sizeof(float));
  }
}
void test_batch_norm_evaluation(void **) {
  check_evaluation(Shape{3, 2, 4}, 3);
  check_evaluation(Shape{4}, 5);
}

// Two replicas of one global batch, run as the executor runs them with a reducer: forward STATISTICS on
// each, the global half = the sum of both local sets, APPLY; backward STATISTICS, in sync mode the local
// sets summed in place, APPLY. Sync: each replica's outputs and input gradients are those rows of the whole
// batch computed at once, and their weight and bias gradients add up to the whole batch's. Local: each
// normalises with its own slice only (the global half holds other sums and must not matter) and its
// gradients are those of its slice alone; in both modes the running statistics follow the global batch.
void check_local_vs_global(const Shape &shape, size_t na, size_t nb) {
  BatchNormCase b = batch_norm_case(shape, 0.2, 210 + shape.rank());
  const size_t per = b.channels * b.pixels, S = 2 * b.channels + 1, nt = na + nb, np = b.params.size();
  // Replica B's slice comes from another distribution, so its sums differ from A's.
  const std::vector<float> xa = batch_norm_input(b, na, 220 + shape.rank());
  const std::vector<float> xb = batch_norm_input(b, nb, 230 + shape.rank(), 1.5f);
  std::vector<float> x = xa;
  x.insert(x.end(), xb.begin(), xb.end());
  TestRng rng(240);
  const std::vector<float> dy = rng.vector(nt * per, -1.0f, 1.0f);
  const std::vector<float> dya(dy.begin(), dy.begin() + long(na * per)),
      dyb(dy.begin() + long(na * per), dy.end());

  // The whole batch on one replica (the reference of the sync mode).
  NodeHarness whole(b.model, 0, nt, true, true, 1);
  std::vector<float> buffers_whole = b.buffers, y_whole(nt * per), dx_whole(nt * per), g_whole(np, 0.0f);
  const NodeHarness::Args aw =
      whole.args(b.params.data(), buffers_whole.data(), {x.data()}, y_whole.data(), nt);
  whole.run_forward(aw);
  whole.run_backward(aw, dy.data(), {dx_whole.data()}, whole.grads_into(g_whole.data()));

  std::vector<float> running[2];
  for (bool sync : {true, false}) {
    const std::string mode = sync ? " sync" : " local";
    NodeHarness ha(b.model, 0, na, true, sync, 1), hb(b.model, 0, nb, true, sync, 1);
    std::vector<float> buf_a = b.buffers, buf_b = b.buffers, ya(na * per, NAN), yb(nb * per, NAN);
    std::vector<float> dxa(na * per, 1e6f), dxb(nb * per, 1e6f), ga(np, 0.0f), gb(np, 0.0f);
    const NodeHarness::Args a = ha.args(b.params.data(), buf_a.data(), {xa.data()}, ya.data(), na);
    const NodeHarness::Args bb = hb.args(b.params.data(), buf_b.data(), {xb.data()}, yb.data(), nb);
    ha.forward_call(DPT_OP_PHASE_STATISTICS, a);
    hb.forward_call(DPT_OP_PHASE_STATISTICS, bb);
    for (size_t i = 0; i < S; ++i) ha.global()[i] = hb.global()[i] = ha.local()[i] + hb.local()[i];
    ha.forward_call(DPT_OP_PHASE_APPLY, a);
    hb.forward_call(DPT_OP_PHASE_APPLY, bb);
    ha.backward_call(DPT_OP_PHASE_STATISTICS, a, dya.data(), {dxa.data()}, ha.grads_into(ga.data()));
    hb.backward_call(DPT_OP_PHASE_STATISTICS, bb, dyb.data(), {dxb.data()}, hb.grads_into(gb.data()));
    if (sync)
      for (size_t i = 0; i < S; ++i) ha.local()[i] = hb.local()[i] = ha.local()[i] + hb.local()[i];
    ha.backward_call(DPT_OP_PHASE_APPLY, a, dya.data(), {dxa.data()}, ha.grads_into(ga.data()));
    hb.backward_call(DPT_OP_PHASE_APPLY, bb, dyb.data(), {dxb.data()}, hb.grads_into(gb.data()));

    // The running statistics: the same on both replicas, bit for bit, and those of the whole batch.
    assert_true(buf_a == buf_b);
    running[sync ? 0 : 1] = buf_a;
    Comparison cr("batch_norm " + shape.text() + mode + " running statistics = whole batch's",
                  kRunningTolerance, 1.0);
    for (size_t i = 0; i < buf_a.size(); ++i) cr.add(buf_a[i], buffers_whole[i], at("buffer", i));
    cr.finish();

    Comparison cy("batch_norm " + shape.text() + mode + " two replicas: y", kSumTolerance, 1.0);
    Comparison cd("batch_norm " + shape.text() + mode + " two replicas: dx, dparams", kSumTolerance, 1.0);
    if (sync) {
      for (size_t i = 0; i < na * per; ++i) cy.add(ya[i], y_whole[i], at("y", i));
      for (size_t i = 0; i < nb * per; ++i) cy.add(yb[i], y_whole[na * per + i], at("y", na * per + i));
      // And the reference with the batch's statistics (not the slice's).
      const Moments mo = moments(x.data(), nt, b.channels, b.pixels);
      const std::vector<double> want =
          normalise(xa.data(), na, b.channels, b.pixels, mo.mean, mo.var, b.params);
      for (size_t i = 0; i < na * per; ++i) cy.add(ya[i], want[i], at("y vs reference", i));
      for (size_t i = 0; i < na * per; ++i) cd.add(dxa[i], dx_whole[i], at("dx", i));
      for (size_t i = 0; i < nb * per; ++i) cd.add(dxb[i], dx_whole[na * per + i], at("dx", na * per + i));
      for (size_t k = 0; k < np; ++k) cd.add(double(ga[k]) + double(gb[k]), g_whole[k], at("dA+dB", k));
    } else {
      // Each replica alone, as one replica that is the whole batch: the same, and the slice's reference.
      for (int r = 0; r < 2; ++r) {
        const size_t ns = r == 0 ? na : nb;
        const std::vector<float> &xs = r == 0 ? xa : xb, &dys = r == 0 ? dya : dyb;
        const std::vector<float> &ys = r == 0 ? ya : yb, &dxs = r == 0 ? dxa : dxb, &gs = r == 0 ? ga : gb;
        NodeHarness alone(b.model, 0, ns, true, true, 1);
        std::vector<float> buf = b.buffers, y1(ns * per), dx1(ns * per), g1(np, 0.0f);
        const NodeHarness::Args a1 = alone.args(b.params.data(), buf.data(), {xs.data()}, y1.data(), ns);
        alone.run_forward(a1);
        alone.run_backward(a1, dys.data(), {dx1.data()}, alone.grads_into(g1.data()));
        const Moments mo = moments(xs.data(), ns, b.channels, b.pixels);
        const std::vector<double> want =
            normalise(xs.data(), ns, b.channels, b.pixels, mo.mean, mo.var, b.params);
        for (size_t i = 0; i < ns * per; ++i) {
          cy.add(ys[i], y1[i], at("y vs alone", i));
          cy.add(ys[i], want[i], at("y vs reference", i));
          cd.add(dxs[i], dx1[i], at("dx vs alone", i));
        }
        for (size_t k = 0; k < np; ++k) cd.add(gs[k], g1[k], at("dparams vs alone", k));
      }
      // The global half held other sums: had they been used, y would differ by far more than the tolerance.
      double largest = 0.0;
      for (size_t i = 0; i < na * per; ++i)
        largest = std::max(largest, std::fabs(double(ya[i]) - y_whole[i]));
      assert_true(largest > 0.1);
    }
    cy.finish();
    cd.finish();
  }
  assert_true(running[0] == running[1]);
}
void test_batch_norm_local_vs_global(void **) {
  check_local_vs_global(Shape{3, 2, 4}, 2, 3);
  check_local_vs_global(Shape{4}, 3, 4);
}

// An empty slice (n = 0) still runs both phases (op_call.h): STATISTICS writes zeros and a zero count,
// APPLY writes no output but updates the running statistics from the global batch (another replica's
// slice), backward STATISTICS writes zeros and adds nothing, APPLY writes no dx.
void test_batch_norm_empty_slice(void **) {
  for (bool sync : {true, false}) {
    BatchNormCase b = batch_norm_case(Shape{3, 2, 2}, 0.25, 250);
    const size_t per = b.channels * b.pixels, S = 2 * b.channels + 1, nb = 3, np = b.params.size();
    const std::vector<float> xb = batch_norm_input(b, nb, 260);
    NodeHarness other(b.model, 0, nb, true, sync, 1);
    std::vector<float> buf_other = b.buffers;
    other.forward(b.params, buf_other, {xb});  // the other replica is the whole batch

    NodeHarness empty(b.model, 0, 0, true, sync, 1);
    std::vector<float> buf = b.buffers, y(per, -7.0f), dx(per, -7.0f), g(np, -7.0f), dy(per, 0.5f);
    const Inputs none = {std::vector<float>(per, NAN)};
    const NodeHarness::Args a = empty.args(b.params.data(), buf.data(), none, y.data(), 0);
    std::fill(empty.local(), empty.local() + 2 * S, guard_double());
    empty.forward_call(DPT_OP_PHASE_STATISTICS, a);
    for (size_t i = 0; i < S; ++i) assert_true(empty.local()[i] == 0.0);
    for (size_t i = 0; i < S; ++i) empty.global()[i] = empty.local()[i] + other.local()[i];
    empty.forward_call(DPT_OP_PHASE_APPLY, a);
    for (float v : y) assert_true(v == -7.0f);
    Comparison cr(std::string("batch_norm empty slice running statistics") + (sync ? " (sync)" : " (local)"),
                  kRunningTolerance, 1.0);
    for (size_t i = 0; i < buf.size(); ++i) cr.add(buf[i], buf_other[i], at("buffer", i));
    cr.finish();
    empty.backward_call(DPT_OP_PHASE_STATISTICS, a, dy.data(), {dx.data()}, empty.grads_into(g.data()));
    for (size_t i = 0; i < S; ++i) assert_true(empty.local()[i] == 0.0);
    if (sync)
      for (size_t i = 0; i < S; ++i) empty.local()[i] = 1.0 + double(i);  // the other replica's sums
    empty.backward_call(DPT_OP_PHASE_APPLY, a, dy.data(), {dx.data()}, empty.grads_into(g.data()));
    for (float v : dx) assert_true(v == -7.0f);
    for (float v : g) assert_true(v == -7.0f);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The whole network on DAGs

// stem conv2d (bias) -> t -> conv2d 3x3 (no bias) -> batch_norm -> relu -> conv2d 3x3 (no bias) ->
// batch_norm -> add(t, or a 1x1 conv2d projection of t) -> relu -> global_avg_pool -> dense. t (the block
// input) is read by two ops, so its gradient is the sum of the block's and the skip's: the executor's
// accumulation path, checked through the stem's parameter gradients.
ModelSpec residual_spec(bool projection) {
  ModelSpec m(Shape{2, 4, 4});
  const size_t width = 4;
  const size_t stem = m.add_conv2d(projection ? 3 : width, 3, 1, 1, true);
  m.add_conv2d(width, 3, 1, 1, false);
  m.add(dpt::op_def("batch_norm"), {m.output_tensor()}, batch_norm_attrs());
  m.add_activation(Activation::kRelu);
  m.add_conv2d(width, 3, 1, 1, false);
  const size_t main = m.add(dpt::op_def("batch_norm"), {m.output_tensor()}, batch_norm_attrs());
  const size_t skip =
      projection ? m.add(dpt::op_def("conv2d"), {stem}, ints({int64_t(width), 1, 1, 0, 0})) : stem;
  m.add(dpt::op_def("add"), {main, skip}, {});
  m.add_activation(Activation::kRelu);
  m.add(dpt::op_def("global_avg_pool"), {m.output_tensor()}, {});
  m.add_dense(3);
  return m;
}

// dense -> t1 -> gelu (tanh) -> t2; add(t1, t2) -> t3; concat(t1, t3, t2) -> t4; add(t4, t4) -> dense:
// t1 is read by three ops, t2 by two, t4 twice by one op: every later contribution goes through the
// executor's spare slots and is added in.
ModelSpec shared_spec() {
  ModelSpec m(Shape{6});
  const size_t t1 = m.add_dense(5);
  const size_t t2 = m.add(dpt::op_def("gelu"), {t1}, ints({1}));
  const size_t t3 = m.add(dpt::op_def("add"), {t1, t2}, {});
  const size_t t4 = m.add(dpt::op_def("concat"), {t1, t3, t2}, {});
  m.add(dpt::op_def("add"), {t4, t4}, {});
  m.add_dense(3);
  return m;
}

// The prefix of spec up to node last (the same tensor ids, parameters and buffers): its output is that
// node's output, to look at an inner tensor through Network::logits().
ModelSpec prefix_of(const ModelSpec &spec, size_t last) {
  ModelSpec p(spec.input());
  for (size_t j = 0; j <= last; ++j) {
    const dpt::Node &node = spec.nodes()[j];
    p.add(*node.op, node.inputs, node.attrs, node.name);
  }
  return p;
}

class NetworkFixture {
 public:
  NetworkFixture(const ModelSpec &spec, size_t n, uint64_t seed)
      : spec_(spec), n_(n), arena_("test", 0), kernels_(arena_) {
    // A probe network per relu: its output is the relu's input.
    for (size_t j = 0; j < spec.nodes().size(); ++j)
      if (std::string(spec.nodes()[j].op->name) == "relu")
        probes_.push_back(prefix_of(spec, spec.nodes()[j].inputs[0] - 1));
    net_ = std::make_unique<dpt::Network>(spec_, kernels_);
    net_->reserve(n);
    for (const ModelSpec &p : probes_) {
      probe_nets_.push_back(std::make_unique<dpt::Network>(p, kernels_));
      probe_nets_.back()->reserve(n);
    }
    set_seed(seed);
  }

  // Inputs, labels and parameters from seed: weights by the trainer's init, batch-norm weights and every
  // bias generic (not 1 and 0), buffers at their defaults.
  void set_seed(uint64_t seed) {
    seed_ = seed;
    TestRng rng(seed * 7919);
    x = rng.vector(n_ * spec_.input().size(), -1.0f, 1.0f);
    labels.clear();
    for (size_t s = 0; s < n_; ++s) labels.push_back(int32_t(rng.below(spec_.output().size())));
    params.assign(spec_.parameter_count(), 0.0f);
    dpt::init_parameters(spec_, params.data(), seed, dpt::InitScheme::kUniformFanIn, 0.01f);
    for (const dpt::Node &node : spec_.nodes()) {
      size_t offset = node.param_offset;
      for (const dpt::ParamInfo &p : node.layout.params) {
        if (p.init == dpt::ParamInit::kOne)
          for (size_t i = 0; i < p.size(); ++i) params[offset + i] = rng.uniform(0.7f, 1.3f);
        else if (p.init == dpt::ParamInit::kZero)
          for (size_t i = 0; i < p.size(); ++i) params[offset + i] = rng.uniform(-0.2f, 0.2f);
        offset += p.size();
      }
    }
    buffers.assign(spec_.buffer_count(), NAN);
    dpt::init_buffers(spec_, buffers.data());
  }

  PassInfo info(bool training = true, bool sync = true) const {
    PassInfo i;
    i.n = n_;
    i.seed = seed_;
    i.training = training;
    i.sync_statistics = sync;
    return i;
  }
  // The summed loss of a training pass, with a fresh copy of the buffers (a training forward updates them).
  double loss(bool sync = true) {
    std::vector<float> b = buffers;
    std::copy(x.begin(), x.end(), net_->input());
    return net_->forward(params.data(), b.data(), labels.data(), info(true, sync)).loss_sum;
  }
  // Forward and backward of a training pass into grads (added into); the pass's buffers come back.
  std::vector<float> gradients(std::vector<float> &grads, bool sync = true) {
    std::vector<float> b = buffers;
    std::copy(x.begin(), x.end(), net_->input());
    const dpt::LossStats stats = net_->forward(params.data(), b.data(), labels.data(), info(true, sync));
    assert_true(std::isfinite(stats.loss_sum) && stats.loss_sum > 0.0);
    net_->backward(params.data(), grads.data(), info(true, sync));
    return b;
  }
  // Every relu input of the training pass at the current parameters.
  std::vector<float> relu_inputs() {
    std::vector<float> all;
    for (size_t k = 0; k < probe_nets_.size(); ++k) {
      std::vector<float> b = buffers;
      std::copy(x.begin(), x.end(), probe_nets_[k]->input());
      probe_nets_[k]->forward(params.data(), b.data(), nullptr, info());
      const float *z = probe_nets_[k]->logits();
      all.insert(all.end(), z, z + n_ * probes_[k].output().size());
    }
    return all;
  }
  double relu_margin() {
    double m = INFINITY;
    for (float v : relu_inputs()) m = std::min(m, double(std::fabs(v)));
    return m;
  }
  bool same_relu_signs(const std::vector<float> &base) {
    const std::vector<float> now = relu_inputs();
    for (size_t i = 0; i < now.size(); ++i)
      if ((now[i] > 0.0f) != (base[i] > 0.0f)) return false;
    return true;
  }
  uint64_t seed() const { return seed_; }
  dpt::Network &net() { return *net_; }

  std::vector<float> x, params, buffers;
  std::vector<int32_t> labels;

 private:
  const ModelSpec &spec_;
  size_t n_;
  uint64_t seed_ = 0;
  dpt::MemoryArena arena_;
  dpt::CpuKernels kernels_;
  std::unique_ptr<dpt::Network> net_;
  std::vector<ModelSpec> probes_;
  std::vector<std::unique_ptr<dpt::Network>> probe_nets_;
};

// Whole-network dparams vs finite differences of the summed loss; the relus' inputs stay >= margin from 0
// at the chosen seed and keep their signs at every perturbed point.
void check_network(const std::string &name, const ModelSpec &spec, size_t n, double margin) {
  const double h = 1e-3;
  NetworkFixture f(spec, n, 1);
  uint64_t seed = 1;
  while (f.relu_margin() < margin) {
    if (++seed == 2000) fail_msg("test setup: no seed below 2000 keeps the relu inputs %g from 0", margin);
    f.set_seed(seed);
  }
  const std::vector<float> signs = f.relu_inputs();

  std::vector<float> grads(f.params.size(), 0.0f);
  const std::vector<float> after = f.gradients(grads);
  // A perturbation that moves a relu input across 0 makes that difference meaningless: that parameter is
  // not compared, and the test fails as a setup error (a larger margin is needed) once the others are.
  bool crossed = false;
  auto loss = [&] {
    const double l = f.loss();
    crossed = crossed || !f.same_relu_signs(signs);
    return l;
  };
  Comparison cmp(name + " dparams vs fd", 2e-3, 0.1);
  size_t nonzero = 0, crossings = 0;
  for (size_t i = 0; i < f.params.size(); ++i) {
    crossed = false;
    const double fd = central_difference(f.params, i, h, loss);
    nonzero += std::fabs(fd) > 1e-4;
    if (crossed) {
      if (crossings++ < 8)
        print_error("%s: perturbing parameter %zu by %g moves a relu input across 0\n", name.c_str(), i, h);
      continue;
    }
    cmp.add(grads[i], fd, at("grad", i));
  }
  print_message("%s: %zu of %zu parameter gradients nonzero (seed %llu, relu margin %.3g)\n", name.c_str(),
                nonzero, f.params.size(), (unsigned long long)f.seed(), f.relu_margin());
  cmp.finish();
  if (crossings != 0)
    fail_msg("test setup: %s: %zu parameters' perturbations move a relu input across 0", name.c_str(),
             crossings);
  assert_true(nonzero > f.params.size() * 3 / 4);

  // Backward accumulates: a second pass into the same buffer doubles it.
  std::vector<float> twice = grads;
  f.gradients(twice);
  Comparison ca(name + " dparams accumulate", kSumTolerance, 1.0);
  for (size_t i = 0; i < grads.size(); ++i) ca.add(twice[i], 2.0 * double(grads[i]), at("2*grad", i));
  ca.finish();

  if (spec.buffer_count() == 0) return;
  // One replica (no reducer): local and global normalisation are the same pass.
  std::vector<float> local(f.params.size(), 0.0f);
  const std::vector<float> after_local = f.gradients(local, false);
  assert_true(local == grads && after_local == after);
  // A training pass moved the running statistics away from their defaults (finite); evaluation does not.
  for (size_t i = 0; i < after.size(); ++i) assert_true(std::isfinite(after[i]) && after[i] != f.buffers[i]);
  std::vector<float> b = after;
  std::copy(f.x.begin(), f.x.end(), f.net().input());
  const double eval_loss =
      f.net().forward(f.params.data(), b.data(), f.labels.data(), f.info(false)).loss_sum;
  assert_true(std::isfinite(eval_loss) && b == after);
}

void test_network_residual_identity(void **) {
  check_network("residual network (identity skip)", residual_spec(false), 3, 0.02);
}
void test_network_residual_projection(void **) {
  check_network("residual network (1x1 projection skip)", residual_spec(true), 3, 0.02);
}
void test_network_shared_tensors(void **) {
  check_network("network with shared tensors", shared_spec(), 4, 0.0);
}

// The executor's side of the memory contract, which the op harness above cannot see: every device buffer
// it hands a kernel holds at least what the call declares (saved_bytes of saved, statistics_count doubles
// of statistics, scratch_bytes of scratch, n samples of each activation and gradient). The device memory
// remembers its live buffers, and the kernels check each call's pointers against them before running the
// CPU kernel. Parameters, gradients and buffers are the caller's (host vectors here) and not checked.
class TrackingMemory final : public dpt::DeviceMemory {
 public:
  explicit TrackingMemory(dpt::DeviceMemory &base) : base_(base) {}
  void *allocate(size_t bytes) override {
    void *p = base_.allocate(bytes);
    live_[p] = bytes;
    return p;
  }
  void release(void *p, size_t bytes) override {
    live_.erase(p);
    base_.release(p, bytes);
  }
  void zero(void *p, size_t bytes) override { base_.zero(p, bytes); }
  // Bytes from p to the end of the live buffer that holds it (0: none does).
  size_t room(const void *p) const {
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return 0;
    --it;
    const char *begin = static_cast<const char *>(it->first), *q = static_cast<const char *>(p);
    return q < begin + it->second ? size_t(begin + it->second - q) : 0;
  }

 private:
  dpt::DeviceMemory &base_;
  std::map<const void *, size_t, std::less<>> live_;
};

class CheckedKernels final : public dpt::DeviceKernels {
 public:
  explicit CheckedKernels(dpt::CpuKernels &cpu) : cpu_(cpu), memory_(cpu.memory()) {}
  dpt::DeviceMemory &memory() override { return memory_; }
  void check_supported(const char *op, dpt::DType dtype, dpt::DType matmul_dtype) const override {
    cpu_.check_supported(op, dtype, matmul_dtype);
  }
  size_t scratch_bytes(const dpt_op_call &call) const override { return cpu_.scratch_bytes(call); }
  void copy_to_device(float *device, const float *host, size_t count) override {
    cpu_.copy_to_device(device, host, count);
  }
  void copy_to_host(float *host, const float *device, size_t count) override {
    cpu_.copy_to_host(host, device, count);
  }
  void copy_device(float *dst, const float *src, size_t count) override { cpu_.copy_device(dst, src, count); }
  void synchronize() override { cpu_.synchronize(); }
  void copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) override {
    cpu_.copy_labels_to_device(device, host, count);
  }
  void forward(const dpt_op_call &call) override {
    check(call, false);
    cpu_.forward(call);
  }
  void backward(const dpt_op_call &call) override {
    check(call, true);
    cpu_.backward(call);
  }
  void accumulate(float *y, const float *x, size_t count) override { cpu_.accumulate(y, x, count); }
  dpt::LossStats loss(const float *logits, const int32_t *labels, size_t n, size_t classes,
                      float *dlogits) override {
    return cpu_.loss(logits, labels, n, classes, dlogits);
  }
  double l2_norm(const float *grads, size_t count) override { return cpu_.l2_norm(grads, count); }
  void l2_block_sums(const float *range, size_t begin, size_t end, double *sums) override {
    cpu_.l2_block_sums(range, begin, end, sums);
  }
  void scale(float *x, size_t count, float alpha) override { cpu_.scale(x, count, alpha); }
  void narrow(const float *x, void *out, size_t count, dpt::DType dtype) override {
    cpu_.narrow(x, out, count, dtype);
  }
  void widen(const void *in, float *x, size_t count, dpt::DType dtype) override {
    cpu_.widen(in, x, count, dtype);
  }
  void apply_update(const dpt::OptimizerConfig &config, uint64_t t, float lr, float grad_scale, float *params,
                    const float *grads, float *state, size_t count) override {
    cpu_.apply_update(config, t, lr, grad_scale, params, grads, state, count);
  }
  const std::vector<std::string> &violations() const { return violations_; }

 private:
  void need(const dpt_op_call &c, bool backward, const void *p, size_t bytes, const std::string &what) {
    if (bytes == 0) return;
    const size_t room = p != nullptr ? memory_.room(p) : 0;
    if (room >= bytes) return;
    violations_.push_back("node " + std::to_string(c.node) + " (" + c.op + ") " +
                          (backward ? "backward" : "forward") + " phase " + std::to_string(c.phase) +
                          " n=" + std::to_string(c.n) + ": " + what + " declares " + std::to_string(bytes) +
                          " bytes, its buffer holds " + std::to_string(room));
  }
  void check(const dpt_op_call &c, bool backward) {
    const size_t n = size_t(c.n);
    need(c, backward, c.saved, c.saved_bytes, "saved");
    need(c, backward, c.statistics, c.statistics_count * sizeof(double), "statistics");
    need(c, backward, c.scratch, c.scratch_bytes, "scratch");
    need(c, backward, c.output.data, n * size_t(dpt_tensor_sample_size(&c.output)) * sizeof(float), "output");
    for (int32_t i = 0; i < c.input_count; ++i) {
      const size_t bytes = n * size_t(dpt_tensor_sample_size(&c.inputs[i])) * sizeof(float);
      need(c, backward, c.inputs[i].data, bytes, at("input", size_t(i)));
      if (backward && c.input_grads[i] != nullptr)
        need(c, backward, c.input_grads[i], bytes, at("input_grad", size_t(i)));
    }
    if (backward)
      need(c, backward, c.output_grad, n * size_t(dpt_tensor_sample_size(&c.output)) * sizeof(float),
           "output_grad");
  }

  dpt::CpuKernels &cpu_;
  TrackingMemory memory_;
  std::vector<std::string> violations_;
};

// Training passes (full, then an empty slice: batch_norm still runs both phases) and an evaluation pass,
// at the first capacity and again after reserve() has grown it.
void check_call_bounds(const std::string &name, const ModelSpec &spec) {
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels cpu(arena);
  CheckedKernels kernels(cpu);
  {
    dpt::Network net(spec, kernels);
    TestRng rng(300);
    std::vector<float> params(spec.parameter_count()), buffers(spec.buffer_count()),
        grads(params.size(), 0.0f);
    dpt::init_parameters(spec, params.data(), 3, dpt::InitScheme::kUniformFanIn, 0.01f);
    dpt::init_buffers(spec, buffers.data());
    for (size_t capacity : {2, 5}) {
      net.reserve(capacity);
      const std::vector<float> x = rng.vector(capacity * spec.input().size(), -1.0f, 1.0f);
      std::copy(x.begin(), x.end(), net.input());
      const std::vector<int32_t> labels(capacity, 1);
      for (size_t n : {capacity, size_t(0)}) {
        PassInfo info;
        info.n = n;
        info.training = true;
        info.sync_statistics = true;
        net.forward(params.data(), buffers.data(), labels.data(), info);
        net.backward(params.data(), grads.data(), info);
      }
      PassInfo eval;
      eval.n = capacity;
      net.forward(params.data(), buffers.data(), labels.data(), eval);
    }
  }
  for (size_t i = 0; i < kernels.violations().size() && i < 8; ++i)
    print_error("%s: %s\n", name.c_str(), kernels.violations()[i].c_str());
  if (!kernels.violations().empty())
    fail_msg("%s: %zu kernel calls with buffers smaller than the call declares", name.c_str(),
             kernels.violations().size());
}

void test_network_call_bounds(void **) {
  check_call_bounds("residual network (identity skip)", residual_spec(false));
  check_call_bounds("residual network (1x1 projection skip)", residual_spec(true));
  check_call_bounds("network with shared tensors", shared_spec());
}

}  // namespace

int main() {
  dpt::blas::use_single_thread();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add),
      cmocka_unit_test(test_concat2),
      cmocka_unit_test(test_concat3),
      cmocka_unit_test(test_global_avg_pool),
      cmocka_unit_test(test_gelu_erf),
      cmocka_unit_test(test_gelu_tanh),
      cmocka_unit_test(test_fast_exp_accuracy),
      cmocka_unit_test(test_layer_norm_rank2),
      cmocka_unit_test(test_layer_norm_rank1),
      cmocka_unit_test(test_batch_norm_chw),
      cmocka_unit_test(test_batch_norm_chw_local),
      cmocka_unit_test(test_batch_norm_c),
      cmocka_unit_test(test_batch_norm_c_local),
      cmocka_unit_test(test_batch_norm_running_statistics),
      cmocka_unit_test(test_batch_norm_evaluation),
      cmocka_unit_test(test_batch_norm_local_vs_global),
      cmocka_unit_test(test_batch_norm_empty_slice),
      cmocka_unit_test(test_network_residual_identity),
      cmocka_unit_test(test_network_residual_projection),
      cmocka_unit_test(test_network_shared_tensors),
      cmocka_unit_test(test_network_call_bounds),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
