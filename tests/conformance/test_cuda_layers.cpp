// The CUDA module's layer kernels against the core's own CPU layers (src/nn, made with make_layer from a
// ModelSpec): dense (cuBLAS), bias add and gradient, conv2d (cuDNN, algorithms found by timing and, in
// deterministic mode, by heuristics), average and max pooling and ReLU/sigmoid/tanh (cuDNN). Random inputs
// from fixed seeds; the CPU semantics are the contract: NCHW, parameters as weights then biases, parameter
// gradients added (+=) to non-zero starting values, input gradients written.
//
// Tolerances. For a result that is a sum of products, |GPU - CPU| <= rel * A + abs, where A is the same
// result computed by the CPU layer from the absolute values of every input (sum |a| |b|, plus |start| for an
// accumulated gradient): the classic bound of a floating-point dot product is a multiple of A, not of the
// result, which may cancel to near zero.
//  * dense, bias, average pooling: rel 2e-6. FP32 in any summation order (cuBLAS may split k) is within
//    ~1e-7 A of the exact result: the final rounding of the output (<= 6e-8 |y| <= 6e-8 A) plus eps / sqrt(k)
//    of accumulated rounding; measured for the CPU layer against double on LeNet's 800 x 128 dense layer:
//    8.9e-8 A at worst. 2e-6 leaves a 10x margin for the sum of both sides' errors, yet fails TF32 (products
//    of 10-bit mantissas: 5e-5 A at worst in the same emulated measurement), so these cases also prove that
//    TF32 is off by default. With DPT_BACKEND_ALLOW_TF32: rel 4e-3 (each product within 2^-10 of exact).
//  * conv2d: rel 1e-4 and abs 1e-5 * max A. cuDNN may choose FFT or Winograd algorithms, whose transforms
//    spread rounding errors over a tile (errors relative to the tile's magnitude, ~1e-5 in FP32); a wrong
//    index, stride or layout gives errors of order A.
//  * max pooling forward: exact (a selection); backward: rel 2e-6 (overlapping windows add gradients in
//    another order). Ties: the CPU gives a window's gradient to its first maximum in row-major order; the
//    tie case checks that cuDNN's deterministic max pooling does the same.
//  * conv2d bias gradient: rel 2e-6 (a plain sum, as bias_grad).
//  * ReLU: exact. Sigmoid and tanh: abs 1e-6 + rel 1e-5 (cuDNN's exp/tanh are within a few ulp of glibc's;
//    the derivative y (1 - y) or 1 - y^2 amplifies an ulp of y near saturation to ~1e-7 absolute).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_harness.hpp"
#include "graph/pass_info.hpp"
#include "graph/model_spec.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

using cuda_test::check;
using cuda_test::expect_close;
using cuda_test::Gpu;
using cuda_test::uniform;
using dpt::LayerKind;
using dpt::LayerSpec;
using dpt::ModelSpec;
using dpt::Shape;

// One forward and backward pass of the CPU layer: y, dx (written) and dparams (start + gradient).
struct CpuPass {
  std::vector<float> y, dx, dparams;
};

CpuPass cpu_pass(const LayerSpec &spec, size_t n, const std::vector<float> &params,
                 const std::vector<float> &x, const std::vector<float> &dy,
                 const std::vector<float> &dparams_start) {
  const std::unique_ptr<dpt::Layer> layer = dpt::make_layer(spec);
  std::vector<float> saved(layer->saved_floats_per_sample() * n), scratch(layer->scratch_floats());
  dpt::PassInfo info;
  info.n = n;
  info.training = true;
  CpuPass r;
  r.y.assign(n * spec.out.size(), 0.0f);
  r.dx.assign(n * spec.in.size(), 0.0f);
  r.dparams = dparams_start;
  layer->forward(params.data(), x.data(), r.y.data(), saved.data(), scratch.data(), info);
  layer->backward(params.data(), x.data(), r.y.data(), dy.data(), r.dx.data(), r.dparams.data(), saved.data(),
                  scratch.data(), info);
  return r;
}

std::vector<float> absolute(std::vector<float> v) {
  for (float &x : v) x = std::fabs(x);
  return v;
}

std::vector<float> slice(const std::vector<float> &v, size_t begin, size_t end) {
  return std::vector<float>(v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end));
}

LayerSpec only_layer(const ModelSpec &m) {
  return m.layers().front();
}

// ---- dense
// --------------------------------------------------------------------------------------------------

void check_dense(size_t n, size_t in, size_t out, uint64_t seed, uint32_t flags, double rel) {
  print_message("dense n %zu, in %zu, out %zu%s\n", n, in, out,
                flags & DPT_BACKEND_ALLOW_TF32 ? ", TF32" : "");
  ModelSpec m(Shape{in, 1, 1});
  m.add_dense(out);
  const LayerSpec spec = only_layer(m);
  const size_t weights = spec.weights();
  const std::vector<float> params = uniform(spec.parameters(), seed, -1.0f, 1.0f);
  const std::vector<float> x = uniform(n * in, seed + 1, -1.0f, 1.0f);
  const std::vector<float> dy = uniform(n * out, seed + 2, -1.0f, 1.0f);
  const std::vector<float> dstart = uniform(spec.parameters(), seed + 3, -1.0f, 1.0f);
  const CpuPass cpu = cpu_pass(spec, n, params, x, dy, dstart);
  const CpuPass bound = cpu_pass(spec, n, absolute(params), absolute(x), absolute(dy), absolute(dstart));

  Gpu gpu(flags);
  const dpt_backend_v2 &api = gpu.api();
  const float *p = gpu.upload(params), *xd = gpu.upload(x), *dyd = gpu.upload(dy);
  float *y = gpu.upload(std::vector<float>(n * out, NAN));
  float *dx = gpu.upload(std::vector<float>(n * in, NAN));  // written, never read
  float *dp = gpu.upload(dstart);
  check(api.dense_forward(gpu.ctx(), n, in, out, xd, p, p + weights, y, gpu.error, sizeof gpu.error),
        "dense_forward", gpu.error);
  check(api.dense_backward(gpu.ctx(), n, in, out, xd, p, dyd, dx, dp, dp + weights, gpu.error,
                           sizeof gpu.error),
        "dense_backward", gpu.error);
  expect_close("dense y", gpu.download(y, n * out), cpu.y, &bound.y, rel, 0.0);
  expect_close("dense dx", gpu.download(dx, n * in), cpu.dx, &bound.dx, rel, 0.0);
  expect_close("dense dW, db (accumulated)", gpu.download(dp, spec.parameters()), cpu.dparams, &bound.dparams,
               rel, 0.0);
}

void test_gpu_dense(void **) {
  check_dense(37, 300, 70, 101, 0, 2e-6);
  check_dense(1, 5, 3, 102, 0, 2e-6);
  check_dense(256, 800, 128, 103, 0, 2e-6);  // LeNet's first dense layer, a training batch
  check_dense(64, 128, 10, 104, DPT_BACKEND_ALLOW_TF32, 4e-3);
  // Zero samples: nothing is computed, nothing fails.
  Gpu gpu;
  float *y = gpu.upload(std::vector<float>{1.0f});
  check(gpu.api().dense_forward(gpu.ctx(), 0, 4, 2, y, y, y, y, gpu.error, sizeof gpu.error),
        "dense_forward(n 0)", gpu.error);
}

// bias_add and bias_grad over [n, channels, pixels], against plain host loops.
void test_gpu_bias(void **) {
  const size_t n = 5, channels = 7, pixels = 33, total = n * channels * pixels;
  const std::vector<float> y0 = uniform(total, 201, -1.0f, 1.0f), bias = uniform(channels, 202, -1.0f, 1.0f);
  const std::vector<float> dy = uniform(total, 203, -1.0f, 1.0f), db0 = uniform(channels, 204, -1.0f, 1.0f);
  std::vector<float> y = y0, db = db0, db_bound = absolute(db0);
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < channels; ++c)
      for (size_t q = 0; q < pixels; ++q) {
        const size_t i = (s * channels + c) * pixels + q;
        y[i] += bias[c];
        db[c] += dy[i];
        db_bound[c] += std::fabs(dy[i]);
      }
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  float *yd = gpu.upload(y0), *dbd = gpu.upload(db0);
  const float *bd = gpu.upload(bias), *dyd = gpu.upload(dy);
  check(api.bias_add(gpu.ctx(), n, channels, pixels, bd, yd, gpu.error, sizeof gpu.error), "bias_add",
        gpu.error);
  check(api.bias_grad(gpu.ctx(), n, channels, pixels, dyd, dbd, gpu.error, sizeof gpu.error), "bias_grad",
        gpu.error);
  cuda_test::expect_bitwise("bias_add (one addition each)", gpu.download(yd, total), y);
  expect_close("bias_grad (accumulated)", gpu.download(dbd, channels), db, &db_bound, 2e-6, 0.0);
  // A fixed order: the same bits on every run.
  std::vector<float> runs[2];
  for (std::vector<float> &run : runs) {
    check(api.mem_set(gpu.ctx(), dbd, 0, channels * sizeof(float), gpu.error, sizeof gpu.error), "mem_set",
          gpu.error);
    check(api.bias_grad(gpu.ctx(), n, channels, pixels, dyd, dbd, gpu.error, sizeof gpu.error), "bias_grad",
          gpu.error);
    run = gpu.download(dbd, channels);
  }
  cuda_test::expect_bitwise("bias_grad, second run", runs[1], runs[0]);
}

// ---- conv2d
// -------------------------------------------------------------------------------------------------

struct ConvCase {
  size_t n, c, h, w, out_c, kernel, stride, padding;
};

void check_conv(const ConvCase &k, uint64_t seed, uint32_t flags) {
  print_message("conv2d n %zu, %zux%zux%zu, %zu outputs, kernel %zu, stride %zu, padding %zu%s\n", k.n, k.c,
                k.h, k.w, k.out_c, k.kernel, k.stride, k.padding,
                flags & DPT_BACKEND_DETERMINISTIC ? ", deterministic" : "");
  ModelSpec m(Shape{k.c, k.h, k.w});
  m.add_conv2d(k.out_c, k.kernel, k.stride, k.padding);
  const LayerSpec spec = only_layer(m);
  const size_t weights = spec.weights(), in_size = k.n * spec.in.size(), out_size = k.n * spec.out.size();
  const std::vector<float> params = uniform(spec.parameters(), seed, -1.0f, 1.0f);
  const std::vector<float> x = uniform(in_size, seed + 1, -1.0f, 1.0f);
  const std::vector<float> dy = uniform(out_size, seed + 2, -1.0f, 1.0f);
  const std::vector<float> dstart = uniform(spec.parameters(), seed + 3, -1.0f, 1.0f);
  const CpuPass cpu = cpu_pass(spec, k.n, params, x, dy, dstart);
  const CpuPass bound = cpu_pass(spec, k.n, absolute(params), absolute(x), absolute(dy), absolute(dstart));
  auto max_of = [](const std::vector<float> &v) { return double(*std::max_element(v.begin(), v.end())); };

  Gpu gpu(flags);
  const dpt_backend_v2 &api = gpu.api();
  const dpt_backend_conv2d_shape shape = {int32_t(k.n),      int32_t(k.c),      int32_t(k.h),
                                          int32_t(k.w),      int32_t(k.out_c),  int32_t(k.kernel),
                                          int32_t(k.stride), int32_t(k.padding)};
  const float *p = gpu.upload(params), *xd = gpu.upload(x), *dyd = gpu.upload(dy);
  float *y = gpu.upload(std::vector<float>(out_size, NAN));
  float *dx = gpu.upload(std::vector<float>(in_size, NAN));
  float *dp = gpu.upload(dstart);
  char *e = gpu.error;
  const size_t es = sizeof gpu.error;
  check(api.conv2d_forward(gpu.ctx(), &shape, xd, p, p + weights, y, e, es), "conv2d_forward", e);
  check(api.conv2d_backward_data(gpu.ctx(), &shape, p, dyd, dx, e, es), "conv2d_backward_data", e);
  check(api.conv2d_backward_filter(gpu.ctx(), &shape, xd, dyd, dp, e, es), "conv2d_backward_filter", e);
  check(api.conv2d_backward_bias(gpu.ctx(), &shape, dyd, dp + weights, e, es), "conv2d_backward_bias", e);
  const double rel = 1e-4, abs_of_max = 1e-5;
  expect_close("conv2d y", gpu.download(y, out_size), cpu.y, &bound.y, rel, abs_of_max * max_of(bound.y));
  expect_close("conv2d dx", gpu.download(dx, in_size), cpu.dx, &bound.dx, rel, abs_of_max * max_of(bound.dx));
  const std::vector<float> dparams = gpu.download(dp, spec.parameters());
  const std::vector<float> dw_bound = slice(bound.dparams, 0, weights);
  expect_close("conv2d dW (accumulated)", slice(dparams, 0, weights), slice(cpu.dparams, 0, weights),
               &dw_bound, rel, abs_of_max * max_of(dw_bound));
  const std::vector<float> db_bound = slice(bound.dparams, weights, spec.parameters());
  expect_close("conv2d db (accumulated)", slice(dparams, weights, spec.parameters()),
               slice(cpu.dparams, weights, spec.parameters()), &db_bound, 2e-6, 0.0);
  if ((flags & DPT_BACKEND_DETERMINISTIC) == 0) return;
  // Deterministic mode: the same inputs give the same bits.
  check(api.copy_to_device(gpu.ctx(), dp, dstart.data(), dstart.size() * sizeof(float), e, es),
        "copy_to_device", e);
  check(api.conv2d_backward_data(gpu.ctx(), &shape, p, dyd, dx, e, es), "conv2d_backward_data", e);
  check(api.conv2d_backward_filter(gpu.ctx(), &shape, xd, dyd, dp, e, es), "conv2d_backward_filter", e);
  check(api.conv2d_backward_bias(gpu.ctx(), &shape, dyd, dp + weights, e, es), "conv2d_backward_bias", e);
  const std::vector<float> dx_first = gpu.download(dx, in_size);
  const std::vector<float> dp_first = gpu.download(dp, spec.parameters());
  check(api.copy_to_device(gpu.ctx(), dp, dstart.data(), dstart.size() * sizeof(float), e, es),
        "copy_to_device", e);
  check(api.conv2d_backward_data(gpu.ctx(), &shape, p, dyd, dx, e, es), "conv2d_backward_data", e);
  check(api.conv2d_backward_filter(gpu.ctx(), &shape, xd, dyd, dp, e, es), "conv2d_backward_filter", e);
  check(api.conv2d_backward_bias(gpu.ctx(), &shape, dyd, dp + weights, e, es), "conv2d_backward_bias", e);
  cuda_test::expect_bitwise("conv2d dx, deterministic rerun", gpu.download(dx, in_size), dx_first);
  cuda_test::expect_bitwise("conv2d dW db, deterministic rerun", gpu.download(dp, spec.parameters()),
                            dp_first);
}

const ConvCase kConvCases[] = {
    {8, 1, 28, 28, 20, 3, 1, 0},   // LeNet's first convolution
    {8, 20, 13, 13, 50, 5, 1, 0},  // LeNet's second
    {3, 3, 11, 9, 4, 3, 2, 1},     // padded and strided, odd sizes
    {2, 2, 5, 5, 3, 5, 1, 2},      // kernel as large as the image, padding 2
};

void test_gpu_conv2d(void **) {
  uint64_t seed = 300;
  for (const ConvCase &k : kConvCases) check_conv(k, seed += 10, 0);
}

void test_gpu_conv2d_deterministic(void **) {
  uint64_t seed = 400;
  for (const ConvCase &k : kConvCases) check_conv(k, seed += 10, DPT_BACKEND_DETERMINISTIC);
}

// ---- pooling
// ------------------------------------------------------------------------------------------------

void check_pool(LayerKind kind, size_t n, size_t c, size_t h, size_t w, size_t window, size_t stride,
                const std::vector<float> &x, uint64_t seed) {
  const bool max = kind == LayerKind::kMaxPool;
  print_message("%s pool n %zu, %zux%zux%zu, window %zu, stride %zu\n", max ? "max" : "average", n, c, h, w,
                window, stride);
  ModelSpec m(Shape{c, h, w});
  m.add_pool(kind, window, stride);
  const LayerSpec spec = only_layer(m);
  const size_t in_size = n * spec.in.size(), out_size = n * spec.out.size();
  const std::vector<float> dy = uniform(out_size, seed, -1.0f, 1.0f);
  const CpuPass cpu = cpu_pass(spec, n, {}, x, dy, {});
  // Max: the same x selects the same elements, so |dy| alone gives the bound of the sums.
  const CpuPass bound = cpu_pass(spec, n, {}, max ? x : absolute(x), absolute(dy), {});

  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  const dpt_backend_pool_shape shape = {max ? DPT_BACKEND_POOL_MAX : DPT_BACKEND_POOL_AVERAGE,
                                        int32_t(n),
                                        int32_t(c),
                                        int32_t(h),
                                        int32_t(w),
                                        int32_t(window),
                                        int32_t(stride)};
  const float *xd = gpu.upload(x), *dyd = gpu.upload(dy);
  float *y = gpu.upload(std::vector<float>(out_size, NAN));
  float *dx = gpu.upload(std::vector<float>(in_size, NAN));
  check(api.pool_forward(gpu.ctx(), &shape, xd, y, gpu.error, sizeof gpu.error), "pool_forward", gpu.error);
  check(api.pool_backward(gpu.ctx(), &shape, xd, y, dyd, dx, gpu.error, sizeof gpu.error), "pool_backward",
        gpu.error);
  if (max)
    cuda_test::expect_bitwise("max pool y", gpu.download(y, out_size), cpu.y);
  else
    expect_close("average pool y", gpu.download(y, out_size), cpu.y, &bound.y, 2e-6, 0.0);
  expect_close(max ? "max pool dx" : "average pool dx", gpu.download(dx, in_size), cpu.dx, &bound.dx, 2e-6,
               0.0);
}

void test_gpu_pooling(void **) {
  struct Case {
    LayerKind kind;
    size_t n, c, h, w, window, stride;
  };
  const Case cases[] = {
      {LayerKind::kAvgPool, 8, 20, 26, 26, 2, 2},  // LeNet's first pooling
      {LayerKind::kAvgPool, 3, 3, 13, 11, 2, 2},   // odd sizes: the last row and column are not covered
      {LayerKind::kAvgPool, 2, 4, 9, 9, 3, 1},     // overlapping windows
      {LayerKind::kMaxPool, 8, 20, 26, 26, 2, 2},
      {LayerKind::kMaxPool, 3, 3, 13, 11, 3, 2},  // overlapping windows
  };
  uint64_t seed = 500;
  for (const Case &k : cases) {
    const std::vector<float> x = uniform(k.n * k.c * k.h * k.w, seed += 10, -1.0f, 1.0f);
    check_pool(k.kind, k.n, k.c, k.h, k.w, k.window, k.stride, x, seed + 1);
  }
}

// Max pooling after a ReLU: many windows are all zeros, others hold equal maxima. The CPU layer gives the
// gradient to the first maximum in row-major order.
void test_gpu_maxpool_ties(void **) {
  const size_t n = 4, c = 3, h = 12, w = 12;
  std::vector<float> x = uniform(n * c * h * w, 600, -1.0f, 1.0f);
  for (float &v : x) v = std::max(0.0f, std::round(v * 2.0f) / 2.0f);  // 0, 0.5 or 1: ties everywhere
  check_pool(LayerKind::kMaxPool, n, c, h, w, 2, 2, x, 601);
}

// ---- activations
// --------------------------------------------------------------------------------------------

void test_gpu_activations(void **) {
  const size_t count = 4 * 1000 + 7;
  std::vector<float> x = uniform(count, 700, -6.0f, 6.0f);
  for (size_t i = 0; i < count; i += 97) x[i] = 0.0f;  // ReLU's kink
  const std::vector<float> dy = uniform(count, 701, -1.0f, 1.0f);
  Gpu gpu;
  const dpt_backend_v2 &api = gpu.api();
  const float *xd = gpu.upload(x), *dyd = gpu.upload(dy);
  float *y = gpu.upload(std::vector<float>(count, NAN));
  float *dx = gpu.upload(std::vector<float>(count, NAN));
  const struct {
    LayerKind layer;
    int kind;
    const char *name;
    double rel, abs;
  } kinds[] = {{LayerKind::kRelu, DPT_BACKEND_RELU, "relu", 0.0, 0.0},
               {LayerKind::kSigmoid, DPT_BACKEND_SIGMOID, "sigmoid", 1e-5, 1e-6},
               {LayerKind::kTanh, DPT_BACKEND_TANH, "tanh", 1e-5, 1e-6}};
  for (const auto &k : kinds) {
    ModelSpec m(Shape{count, 1, 1});
    m.add_activation(k.layer);
    const CpuPass cpu = cpu_pass(only_layer(m), 1, {}, x, dy, {});
    check(api.activation_forward(gpu.ctx(), k.kind, count, xd, y, gpu.error, sizeof gpu.error),
          "activation_forward", gpu.error);
    check(api.activation_backward(gpu.ctx(), k.kind, count, xd, y, dyd, dx, gpu.error, sizeof gpu.error),
          "activation_backward", gpu.error);
    const std::string name = k.name;
    expect_close((name + " y").c_str(), gpu.download(y, count), cpu.y, nullptr, k.rel, k.abs);
    expect_close((name + " dx").c_str(), gpu.download(dx, count), cpu.dx, nullptr, k.rel, k.abs);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_dense),       cmocka_unit_test(test_gpu_bias),
      cmocka_unit_test(test_gpu_conv2d),      cmocka_unit_test(test_gpu_conv2d_deterministic),
      cmocka_unit_test(test_gpu_pooling),     cmocka_unit_test(test_gpu_maxpool_ties),
      cmocka_unit_test(test_gpu_activations),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
