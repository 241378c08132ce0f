// Gradient checks of the C++ core: every layer's forward against a naive double-precision reference and its
// backward against central finite differences, the softmax cross-entropy loss, the whole Network, and the
// memory arena's accounting.
//
// Method. For a layer y = f(x; p) and fixed random weights r, the scalar L = sum_i r_i y_i (summed in double)
// has dL/dy = r, so backward(dy = r) must return dL/dx and dL/dp. Each is compared, for EVERY input element
// and EVERY parameter, with the central difference (L(v + h) - L(v - h)) / ((v + h) - (v - h)), where the
// denominator is the difference of the two perturbed fp32 values actually fed to forward (not 2h: rounding
// v +- h to fp32 changes the step by up to ulp(v), which is 5e-4 of h = 1e-3 at |v| = 8).
//
// Tolerances (why they are honest for fp32; the worst error seen is printed by every test):
//  * Layers: |analytic - fd| <= 1e-3 * max(1, |fd|). Dense, conv, pooling, dropout and relu (away from its
//    kink) are linear in each perturbed value, so the central difference has no truncation error, and for
//    sigmoid/tanh it is h^2/6 * |f'''| <= 2e-5 at h = 1e-2. What is left is fp32 rounding of the outputs that
//    the perturbation touches: each carries ~6e-8 * sqrt(k) relative error over k-term dot products, i.e.
//    ~1e-6 in L, divided by 2h = 2e-2 gives ~5e-5. Seen worst: a few 1e-5, so 1e-3 leaves a 10x+ margin,
//    while any real backward bug (a wrong index, stride, scale or sign) gives errors of order |r| ~ 0.1..1.
//  * Network: |analytic - fd| <= 2e-3 * max(0.1, |fd|) with h = 1e-3: the loss passes through every layer
//    in fp32 (~1e-7 relative on logits of size ~1), divided by 2h = 2e-3 gives ~1e-4 absolute noise (seen:
//    2.5e-4 of the scale). So: 2e-3 relative for gradients above 0.1, 2e-4 absolute below. Relu and max-pool
//    kinks are kept out of reach of every step (smooth_around() below), so no truncation error there either.
//  * Accumulation and batch-vs-per-sample sums: 1e-5 relative (only the fp32 summation order differs).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "core/arena.hpp"
#include "core/error.hpp"
#include "graph/pass_info.hpp"
#include "graph/model_spec.hpp"
#include "graph/network.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"

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

using dpt::LayerKind;
using dpt::LayerSpec;
using dpt::ModelSpec;
using dpt::PassInfo;
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
// Naive double-precision reference forwards (independent of the library's im2col/GEMM code).

using Reference = std::function<std::vector<double>(const LayerSpec &, size_t, const std::vector<float> &,
                                                    const std::vector<float> &)>;

std::vector<double> dense_reference(const LayerSpec &s, size_t n, const std::vector<float> &x,
                                    const std::vector<float> &p) {
  const size_t in = s.in.size(), out = s.units;
  std::vector<double> y(n * out);
  for (size_t k = 0; k < n; ++k)
    for (size_t o = 0; o < out; ++o) {
      double sum = p[out * in + o];
      for (size_t i = 0; i < in; ++i) sum += double(p[o * in + i]) * double(x[k * in + i]);
      y[k * out + o] = sum;
    }
  return y;
}

std::vector<double> conv_reference(const LayerSpec &s, size_t n, const std::vector<float> &x,
                                   const std::vector<float> &p) {
  const size_t oc = s.units, ic = s.in.c, k = s.kernel;
  std::vector<double> y(n * s.out.size());
  for (size_t b = 0; b < n; ++b)
    for (size_t o = 0; o < oc; ++o)
      for (size_t oy = 0; oy < s.out.h; ++oy)
        for (size_t ox = 0; ox < s.out.w; ++ox) {
          double sum = p[oc * ic * k * k + o];
          for (size_t c = 0; c < ic; ++c)
            for (size_t ki = 0; ki < k; ++ki)
              for (size_t kj = 0; kj < k; ++kj) {
                const long iy = long(oy * s.stride + ki) - long(s.padding);
                const long ix = long(ox * s.stride + kj) - long(s.padding);
                if (iy < 0 || ix < 0 || iy >= long(s.in.h) || ix >= long(s.in.w)) continue;
                sum += double(p[((o * ic + c) * k + ki) * k + kj]) *
                       double(x[((b * ic + c) * s.in.h + size_t(iy)) * s.in.w + size_t(ix)]);
              }
          y[((b * oc + o) * s.out.h + oy) * s.out.w + ox] = sum;
        }
  return y;
}

std::vector<double> pool_reference(const LayerSpec &s, size_t n, const std::vector<float> &x,
                                   const std::vector<float> &) {
  std::vector<double> y(n * s.out.size());
  const size_t k = s.kernel;
  for (size_t plane = 0; plane < n * s.in.c; ++plane)
    for (size_t oy = 0; oy < s.out.h; ++oy)
      for (size_t ox = 0; ox < s.out.w; ++ox) {
        double sum = 0.0, best = -INFINITY;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const double v = x[(plane * s.in.h + oy * s.stride + i) * s.in.w + ox * s.stride + j];
            sum += v;
            best = std::max(best, v);
          }
        y[(plane * s.out.h + oy) * s.out.w + ox] = s.kind == LayerKind::kMaxPool ? best : sum / double(k * k);
      }
  return y;
}

std::vector<double> activation_reference(const LayerSpec &s, size_t n, const std::vector<float> &x,
                                         const std::vector<float> &) {
  std::vector<double> y(n * s.out.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = x[i];
    y[i] = s.kind == LayerKind::kRelu      ? std::max(v, 0.0)
           : s.kind == LayerKind::kSigmoid ? 1.0 / (1.0 + std::exp(-v))
                                           : std::tanh(v);
  }
  return y;
}

// ---------------------------------------------------------------------------------------------------------
// The layer harness: owns the layer, its saved/scratch buffers and the loss weights r.

class LayerHarness {
 public:
  LayerHarness(const LayerSpec &spec, size_t n, const PassInfo &info, uint64_t seed)
      : spec_(spec), n_(n), info_(info), layer_(dpt::make_layer(spec)) {
    info_.n = n;
    saved_.assign(n * layer_->saved_floats_per_sample(), 0.0f);
    scratch_.assign(layer_->scratch_floats(), 0.0f);
    TestRng rng(seed);
    r_ = rng.vector(n * spec.out.size(), -1.0f, 1.0f);
  }

  const dpt::Layer &layer() const { return *layer_; }
  const std::vector<float> &r() const { return r_; }
  size_t in_count() const { return n_ * spec_.in.size(); }
  size_t out_count() const { return n_ * spec_.out.size(); }

  std::vector<float> forward(const std::vector<float> &p, const std::vector<float> &x) {
    std::vector<float> y(out_count(), NAN);
    layer_->forward(p.data(), x.data(), y.data(), saved_.data(), scratch_.data(), info_);
    return y;
  }

  double loss(const std::vector<float> &p, const std::vector<float> &x) {
    const std::vector<float> y = forward(p, x);
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += double(r_[i]) * double(y[i]);
    return sum;
  }

  // Forward at (p, x), then backward with dy = r; dparams accumulates into dp, dx may be null.
  void backward(const std::vector<float> &p, const std::vector<float> &x, float *dx, float *dp) {
    const std::vector<float> y = forward(p, x);
    layer_->backward(p.data(), x.data(), y.data(), r_.data(), dx, dp, saved_.data(), scratch_.data(), info_);
  }

 private:
  LayerSpec spec_;
  size_t n_;
  PassInfo info_;
  std::unique_ptr<dpt::Layer> layer_;
  std::vector<float> saved_, scratch_, r_;
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
  LayerSpec spec;
  size_t n = 2;
  std::vector<float> x, params;
  PassInfo info{};
  double h = 1e-2;
  Reference reference;  // may be empty (dropout)
};

// Runs every check on one layer: forward vs reference, dx and dparams vs finite differences, dx fully
// overwritten, dparams accumulated, dx = nullptr accepted.
void check_layer(LayerCase c) {
  const LayerSpec &s = c.spec;
  assert_int_equal(c.x.size(), c.n * s.in.size());
  assert_int_equal(c.params.size(), s.parameters());
  LayerHarness hx(s, c.n, c.info, 0xC0FFEEu + c.x.size());
  assert_false(hx.layer().is_view());

  if (c.reference) {
    const std::vector<double> want = c.reference(s, c.n, c.x, c.params);
    const std::vector<float> got = hx.forward(c.params, c.x);
    Comparison cmp(c.name + " forward", kForwardTolerance, 1.0);
    for (size_t i = 0; i < got.size(); ++i) cmp.add(got[i], want[i], at("y", i));
    cmp.finish();
  }

  // Analytic gradients. dx starts as garbage: backward must write every element, not add to it.
  std::vector<float> dx(hx.in_count(), 1.0e6f);
  std::vector<float> dp(s.parameters(), 0.0f);
  float sentinel = 12345.0f;  // dparams of a parameter-less layer: must stay untouched
  hx.backward(c.params, c.x, dx.data(), s.parameters() ? dp.data() : &sentinel);
  assert_true(sentinel == 12345.0f);

  Comparison cx(c.name + " dx vs finite differences", kLayerTolerance, 1.0);
  for (size_t i = 0; i < c.x.size(); ++i)
    cx.add(dx[i], central_difference(c.x, i, c.h, [&] { return hx.loss(c.params, c.x); }), at("dx", i));
  cx.finish();

  if (s.parameters() == 0) {
    hx.backward(c.params, c.x, nullptr, &sentinel);  // dx is optional
    assert_true(sentinel == 12345.0f);
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
}

LayerSpec first_layer(const ModelSpec &m) {
  assert_int_equal(m.layers().size(), 1);
  return m.layers()[0];
}

// ---------------------------------------------------------------------------------------------------------
// Layers

void test_dense(void **) {
  ModelSpec m(Shape{2, 2, 3});  // a non-flat input: dense reads it as 12 features
  m.add_dense(4);
  LayerCase c;
  c.name = "dense 12->4";
  c.spec = first_layer(m);
  c.n = 3;
  TestRng rng(1);
  c.x = rng.vector(c.n * 12, -1.0f, 1.0f);
  c.params = rng.vector(c.spec.parameters(), -0.5f, 0.5f);  // biases nonzero too
  c.reference = dense_reference;
  check_layer(c);
}

void check_conv(size_t stride, size_t padding) {
  ModelSpec m(Shape{2, 5, 6});  // not square, so h/w mix-ups show
  m.add_conv2d(3, 3, stride, padding);
  LayerCase c;
  c.name = "conv2d 3x3 s" + std::to_string(stride) + " p" + std::to_string(padding);
  c.spec = first_layer(m);
  c.n = 2;
  TestRng rng(10 + stride * 2 + padding);
  c.x = rng.vector(c.n * c.spec.in.size(), -1.0f, 1.0f);
  c.params = rng.vector(c.spec.parameters(), -0.5f, 0.5f);
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

void check_pool(LayerKind kind, size_t window, size_t stride) {
  ModelSpec m(Shape{2, 6, 7});
  m.add_pool(kind, window, stride);
  LayerCase c;
  c.name = std::string(kind == LayerKind::kMaxPool ? "maxpool " : "avgpool ") + std::to_string(window) + "s" +
           std::to_string(stride);
  c.spec = first_layer(m);
  c.n = 2;
  const size_t count = c.n * c.spec.in.size();
  TestRng rng(20 + window * 3 + stride);
  if (kind == LayerKind::kMaxPool) {
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
  check_pool(LayerKind::kAvgPool, 2, 2);
}  // 7 wide: last column unused
void test_avgpool_3s1(void **) {
  check_pool(LayerKind::kAvgPool, 3, 1);
}  // overlapping windows
void test_maxpool_2s2(void **) {
  check_pool(LayerKind::kMaxPool, 2, 2);
}
void test_maxpool_3s2(void **) {
  check_pool(LayerKind::kMaxPool, 3, 2);
}  // overlapping windows

void check_activation(LayerKind kind, const char *name) {
  ModelSpec m(Shape{3, 2, 4});
  m.add_activation(kind);
  LayerCase c;
  c.name = name;
  c.spec = first_layer(m);
  c.n = 3;
  TestRng rng(30 + size_t(kind));
  c.x.resize(c.n * c.spec.in.size());
  for (auto &v : c.x) {
    // Both signs; kept >= 0.05 away from 0 so that a perturbation of 1e-2 never crosses relu's kink.
    const float magnitude = rng.uniform(0.05f, 2.5f);
    v = rng.uniform() < 0.5 ? -magnitude : magnitude;
  }
  c.reference = activation_reference;
  check_layer(c);
}

void test_relu(void **) {
  check_activation(LayerKind::kRelu, "relu");
}
void test_sigmoid(void **) {
  check_activation(LayerKind::kSigmoid, "sigmoid");
}
void test_tanh(void **) {
  check_activation(LayerKind::kTanh, "tanh");
}

// Flatten is a view: the network aliases its output to its input, so its gradient is the identity by
// construction. What is checked here is that contract: the shape, is_view(), and that forward/backward
// touch nothing.
void test_flatten(void **) {
  ModelSpec m(Shape{2, 3, 4});
  m.add_flatten();
  const LayerSpec s = first_layer(m);
  assert_true(s.out == (Shape{24, 1, 1}));
  assert_int_equal(s.parameters(), 0);
  auto layer = dpt::make_layer(s);
  assert_true(layer->is_view());
  assert_int_equal(layer->saved_floats_per_sample(), 0);
  std::vector<float> x(48, 1.5f), y(48, -2.0f), dx(48, 3.0f), dy(48, 4.0f);
  PassInfo info{2, 0, 1, 0, 0, true};
  layer->forward(nullptr, x.data(), y.data(), nullptr, nullptr, info);
  layer->backward(nullptr, x.data(), y.data(), dy.data(), dx.data(), nullptr, nullptr, nullptr, info);
  for (size_t i = 0; i < 48; ++i) {
    assert_true(x[i] == 1.5f && y[i] == -2.0f && dx[i] == 3.0f && dy[i] == 4.0f);
  }
}

PassInfo dropout_info(size_t n, uint64_t first_sample, uint64_t step) {
  PassInfo info;
  info.n = n;
  info.first_sample = first_sample;
  info.seed = 42;
  info.step = step;
  info.layer_index = 1;
  info.training = true;
  return info;
}

void test_dropout_gradients(void **) {
  ModelSpec m(Shape{2, 3, 3});
  m.add_dropout(0.3f);
  LayerCase c;
  c.name = "dropout 0.3 (training)";
  c.spec = first_layer(m);
  c.n = 3;
  c.info = dropout_info(c.n, 5, 3);
  TestRng rng(40);
  c.x = rng.vector(c.n * c.spec.in.size(), -1.0f, 1.0f);
  check_layer(c);  // the mask is a pure function of (seed, step, layer, sample, element), so FD works
}

// The mask contract: values are 0 or 1/(1 - rate); the drop fraction is the rate; a sample's mask depends on
// its global position (first_sample + s), not on the slice it is in; steps differ; evaluation is identity.
void test_dropout_mask(void **) {
  const float rate = 0.3f;
  ModelSpec m(Shape{1, 20, 20});
  m.add_dropout(rate);
  const LayerSpec s = first_layer(m);
  auto layer = dpt::make_layer(s);
  const size_t per = s.out.size(), n = 8;
  std::vector<float> x(n * per), y(n * per), saved(n * per);
  TestRng rng(41);
  for (auto &v : x) v = rng.uniform(0.5f, 1.5f);  // never 0, so a zero output means dropped
  layer->forward(nullptr, x.data(), y.data(), saved.data(), nullptr, dropout_info(n, 0, 9));
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
  std::vector<float> y2(5 * per), saved2(5 * per);
  layer->forward(nullptr, x.data() + 3 * per, y2.data(), saved2.data(), nullptr, dropout_info(5, 3, 9));
  assert_memory_equal(y2.data(), y.data() + 3 * per, 5 * per * sizeof(float));

  // Another step, another mask.
  std::vector<float> y3(n * per), saved3(n * per);
  layer->forward(nullptr, x.data(), y3.data(), saved3.data(), nullptr, dropout_info(n, 0, 10));
  size_t differ = 0;
  for (size_t i = 0; i < n * per; ++i) differ += (y3[i] == 0.0f) != (y[i] == 0.0f);
  assert_true(differ > n * per / 10);  // two independent masks differ in ~42% of places

  // Evaluation: the identity.
  PassInfo eval = dropout_info(n, 0, 9);
  eval.training = false;
  layer->forward(nullptr, x.data(), y3.data(), saved3.data(), nullptr, eval);
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
  const dpt::LossStats stats = dpt::softmax_cross_entropy(z.data(), labels.data(), n, classes, d.data());
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
  const dpt::LossStats plain = dpt::softmax_cross_entropy(z.data(), labels.data(), n, classes, nullptr);
  assert_true(plain.loss_sum == stats.loss_sum);
  assert_int_equal(plain.correct, stats.correct);

  // dlogits vs finite differences of loss_sum (summed over samples, not divided by n).
  auto loss = [&] {
    return dpt::softmax_cross_entropy(z.data(), labels.data(), n, classes, nullptr).loss_sum;
  };
  Comparison cg("softmax cross-entropy dlogits vs fd", kLayerTolerance, 1.0);
  for (size_t i = 0; i < z.size(); ++i) cg.add(d[i], central_difference(z, i, 1e-3, loss), at("dz", i));
  cg.finish();

  // Large logits: no overflow, finite values equal to the (max-shifted) reference.
  std::vector<float> big(z);
  for (auto &v : big) v += 1000.0f;
  std::vector<float> dbig(n * classes, NAN);
  const dpt::LossStats sb = dpt::softmax_cross_entropy(big.data(), labels.data(), n, classes, dbig.data());
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

ModelSpec network_spec(bool with_dropout) {
  ModelSpec m(Shape{2, 6, 6});
  m.add_conv2d(3, 3, 1, 1);
  m.add_activation(LayerKind::kRelu);
  m.add_pool(LayerKind::kMaxPool, 2, 2);
  m.add_flatten();
  m.add_dense(8);
  m.add_activation(LayerKind::kTanh);
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
  const LayerSpec &conv = spec.layers()[0], &pool = spec.layers()[2];
  auto layer = dpt::make_layer(conv);
  std::vector<float> z(c.n * conv.out.size()), scratch(layer->scratch_floats());
  PassInfo info{c.n, 0, c.seed, 0, 0, true};
  layer->forward(c.params.data(), c.x.data(), z.data(), nullptr, scratch.data(), info);
  double xmax = 1.0;
  for (float v : c.x) xmax = std::max(xmax, double(std::fabs(v)));
  const double margin = 2.0 * h * xmax;
  for (float v : z)
    if (std::fabs(v) < margin) return false;
  const size_t k = pool.kernel;
  for (size_t plane = 0; plane < c.n * pool.in.c; ++plane)
    for (size_t oy = 0; oy < pool.out.h; ++oy)
      for (size_t ox = 0; ox < pool.out.w; ++ox) {
        double first = 0.0, second = 0.0;  // the two largest relu outputs of the window
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const double v = std::max(
                0.0,
                double(z[(plane * pool.in.h + oy * pool.stride + i) * pool.in.w + ox * pool.stride + j]));
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

void check_network_gradients(bool with_dropout) {
  const double h = 1e-3;
  const ModelSpec spec = network_spec(with_dropout);
  NetworkCase c = make_network_case(spec, 3, h);
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  dpt::Network net(spec, kernels);
  net.reserve(c.n);
  std::copy(c.x.begin(), c.x.end(), net.input());
  const PassInfo info{c.n, 0, c.seed, 0, 0, true};

  // Biases start at zero; make them nonzero so that their gradients are checked at a generic point.
  TestRng rng(c.seed);
  size_t offset = 0;
  for (const auto &l : spec.layers()) {
    for (size_t i = l.weights(); i < l.parameters(); ++i) c.params[offset + i] = rng.uniform(-0.01f, 0.01f);
    offset += l.parameters();
  }
  assert_int_equal(offset, c.params.size());
  assert_true(smooth_around(spec, c, h));

  std::vector<float> grads(c.params.size(), 0.0f);
  const dpt::LossStats stats = net.forward(c.params.data(), c.labels.data(), info);
  net.backward(c.params.data(), grads.data(), info);
  assert_true(std::isfinite(stats.loss_sum) && stats.loss_sum > 0.0);

  auto loss = [&] { return net.forward(c.params.data(), c.labels.data(), info).loss_sum; };
  Comparison cmp(std::string("network") + (with_dropout ? " with dropout" : "") + " dparams vs fd", 2e-3,
                 0.1);
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
  net.forward(c.params.data(), c.labels.data(), info);
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
  const PassInfo info{n, 0, c.seed, 4, 0, true};
  const double batch_loss = net.forward(c.params.data(), c.labels.data(), info).loss_sum;
  net.backward(c.params.data(), batch_grads.data(), info);

  std::vector<double> sum_grads(c.params.size(), 0.0);
  double sum_loss = 0.0;
  for (size_t s = 0; s < n; ++s) {
    std::vector<float> g(c.params.size(), 0.0f);
    std::copy(c.x.begin() + long(s * in), c.x.begin() + long((s + 1) * in), net.input());
    const PassInfo one{1, s, c.seed, 4, 0, true};
    sum_loss += net.forward(c.params.data(), &c.labels[s], one).loss_sum;
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
      cmocka_unit_test(test_conv2d_s1_p0),
      cmocka_unit_test(test_conv2d_s1_p1),
      cmocka_unit_test(test_conv2d_s2_p0),
      cmocka_unit_test(test_conv2d_s2_p1),
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
      cmocka_unit_test(test_batch_is_sum_of_samples),
      cmocka_unit_test(test_batch_is_sum_of_samples_dropout),
      cmocka_unit_test(test_arena_limit),
      cmocka_unit_test(test_network_out_of_memory),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
