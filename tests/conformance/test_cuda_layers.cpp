// The CUDA module's op kernels (op_forward, op_backward over a dpt_op_call, modules/interface/op_call.h)
// against the CPU reference kernels (src/backend/cpu/ops, dpt::cpu::find_op) on host copies of the same
// data: dense (cuBLAS, with and without bias), conv2d (cuDNN, algorithms found by timing and, in
// deterministic mode, by heuristics; with and without bias), average and max pooling and ReLU/sigmoid/tanh
// (cuDNN). Random inputs from fixed seeds; the call's semantics are the contract: NCHW, parameters as
// separate tensors (weight, then an optional bias), parameter gradients added (+=) to non-zero starting
// values, input gradients written, NULL gradients not computed, zero samples a no-op.
//
// Tolerances. For a result that is a sum of products, |GPU - CPU| <= rel * A + abs, where A is the same
// result computed by the CPU kernel from the absolute values of every input (sum |a| |b|, plus |start| for an
// accumulated gradient): the classic bound of a floating-point dot product is a multiple of A, not of the
// result, which may cancel to near zero.
//  * dense, bias gradient, average pooling: rel 2e-6. FP32 in any summation order (cuBLAS may split k) is
//    within ~1e-7 A of the exact result: the final rounding of the output (<= 6e-8 |y| <= 6e-8 A) plus
//    eps / sqrt(k) of accumulated rounding; measured for the CPU kernel against double on LeNet's 800 x 128
//    dense layer: 8.9e-8 A at worst. 2e-6 leaves a 10x margin for the sum of both sides' errors, yet fails
//    TF32 (products of 10-bit mantissas: 5e-5 A at worst in the same emulated measurement), so these cases
//    also prove that TF32 is off by default. With DPT_BACKEND_ALLOW_TF32: rel 4e-3 (each product within
//    2^-10 of exact).
//  * conv2d: rel 1e-4 and abs 1e-5 * max A. cuDNN may choose FFT or Winograd algorithms, whose transforms
//    spread rounding errors over a tile (errors relative to the tile's magnitude, ~1e-5 in FP32); a wrong
//    index, stride or layout gives errors of order A.
//  * max pooling forward: exact (a selection); backward: rel 2e-6 (overlapping windows add gradients in
//    another order). Ties: the CPU gives a window's gradient to its first maximum in row-major order; the
//    tie case checks that cuDNN's deterministic max pooling does the same.
//  * conv2d bias gradient: rel 2e-6 (a plain sum, as the bias kernel).
//  * ReLU: exact. Sigmoid and tanh: abs 1e-6 + rel 1e-5 (cuDNN's exp/tanh are within a few ulp of glibc's;
//    the derivative y (1 - y) or 1 - y^2 amplifies an ulp of y near saturation to ~1e-7 absolute).
//  * the bias gradient and deterministic conv2d backward: the same bits on a second run (fixed orders).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "cuda_harness.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

using cuda_test::check;
using cuda_test::expect_bitwise;
using cuda_test::expect_close;
using cuda_test::Gpu;
using cuda_test::uniform;
using Dims = std::vector<int64_t>;

size_t elements(const Dims &dims) {
  size_t size = 1;
  for (const int64_t d : dims) size *= size_t(d);
  return size;
}

// One op's call without its data: the op, the samples, its ints, one sample's input and output dims, and
// the parameters' dims (weight, then an optional bias).
struct OpShape {
  const char *op;
  int64_t n;
  Dims ints, in, out;
  std::vector<Dims> params;

  size_t in_size() const { return size_t(n) * elements(in); }
  size_t out_size() const { return size_t(n) * elements(out); }
};

// The inputs of one forward and backward pass.
struct OpData {
  std::vector<float> x, dy;
  std::vector<std::vector<float>> params, dparams_start;
};

// What the pass gives: y, dx (written) and each parameter's gradient (start + gradient).
struct OpResults {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> dparams;
};

// The call of s with the given data pointers (host or device) for forward; backward adds dy and grads.
dpt_op_call call_of(const OpShape &s, const float *x, float *y, const std::vector<const float *> &params) {
  dpt_op_call c = cuda_test::op_call(s.op, s.n, s.ints);
  c.inputs[0] = cuda_test::tensor(x, s.in);
  c.output = cuda_test::tensor(y, s.out);
  c.param_count = int32_t(s.params.size());
  for (size_t p = 0; p < s.params.size(); ++p) c.params[p] = cuda_test::tensor(params[p], s.params[p]);
  c.training = 1;
  return c;
}

// Bytes of saved enough for every op here (max pooling keeps an int32 per output element).
size_t saved_bytes(const OpShape &s) {
  return (std::max(s.in_size(), s.out_size()) + 1) * sizeof(float);
}

// The CPU reference kernel's forward and backward on host data.
OpResults cpu_pass(const OpShape &s, const OpData &d) {
  const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op(s.op);
  if (kernel == nullptr) fail_msg("no CPU kernel of %s", s.op);
  OpResults r;
  r.y.assign(s.out_size(), 0.0f);
  r.dx.assign(s.in_size(), 0.0f);
  r.dparams = d.dparams_start;
  std::vector<const float *> params;
  for (const std::vector<float> &p : d.params) params.push_back(p.data());
  dpt_op_call c = call_of(s, d.x.data(), r.y.data(), params);
  std::vector<unsigned char> saved(saved_bytes(s));
  c.saved = saved.data();
  std::vector<unsigned char> scratch(kernel->scratch_bytes != nullptr ? kernel->scratch_bytes(c) : 0);
  c.scratch = scratch.data();
  c.scratch_bytes = scratch.size();
  kernel->forward(c);
  c.output_grad = d.dy.data();
  c.input_grads[0] = r.dx.data();
  for (size_t p = 0; p < r.dparams.size(); ++p) c.param_grads[p] = r.dparams[p].data();
  kernel->backward(c);
  return r;
}

// The same op on the GPU: device copies of the data, y and dx filled with NaN (written, never read), the
// parameter gradients with their starting values.
class GpuOp {
 public:
  GpuOp(Gpu &gpu, const OpShape &s, const OpData &d) : gpu_(gpu), shape_(s), data_(d) {
    x_ = gpu.upload(d.x);
    dy_ = gpu.upload(d.dy);
    y_ = gpu.upload(std::vector<float>(s.out_size(), NAN));
    dx_ = gpu.upload(std::vector<float>(s.in_size(), NAN));
    std::vector<const float *> params;
    for (const std::vector<float> &p : d.params) params.push_back(gpu.upload(p));
    for (const std::vector<float> &p : d.dparams_start) dparams_.push_back(gpu.upload(p));
    call = call_of(s, x_, y_, params);
    call.saved = gpu.alloc(saved_bytes(s));
  }

  void forward() {
    check(gpu_.api().op_forward(gpu_.ctx(), &call, gpu_.error, sizeof gpu_.error), "op_forward", gpu_.error);
  }
  // Every gradient, or those asked for (the others NULL).
  void backward(bool dx = true, std::vector<bool> dparams = {}) {
    dpt_op_call c = call;
    c.output_grad = dy_;
    c.input_grads[0] = dx ? dx_ : nullptr;
    for (size_t p = 0; p < dparams_.size(); ++p)
      c.param_grads[p] = dparams.empty() || dparams[p] ? dparams_[p] : nullptr;
    check(gpu_.api().op_backward(gpu_.ctx(), &c, gpu_.error, sizeof gpu_.error), "op_backward", gpu_.error);
  }
  // The parameter gradients back to their starting values.
  void reset_grads() {
    for (size_t p = 0; p < dparams_.size(); ++p)
      check(gpu_.api().copy_to_device(gpu_.ctx(), dparams_[p], data_.dparams_start[p].data(),
                                      data_.dparams_start[p].size() * sizeof(float), gpu_.error,
                                      sizeof gpu_.error),
            "copy_to_device", gpu_.error);
    gpu_.sync();
  }
  OpResults results() {
    OpResults r;
    r.y = gpu_.download(y_, shape_.out_size());
    r.dx = gpu_.download(dx_, shape_.in_size());
    for (size_t p = 0; p < dparams_.size(); ++p)
      r.dparams.push_back(gpu_.download(dparams_[p], data_.dparams_start[p].size()));
    return r;
  }

  dpt_op_call call;  // the forward call, device pointers

 private:
  Gpu &gpu_;
  const OpShape shape_;
  const OpData data_;
  const float *x_ = nullptr, *dy_ = nullptr;
  float *y_ = nullptr, *dx_ = nullptr;
  std::vector<float *> dparams_;
};

std::vector<float> absolute(std::vector<float> v) {
  for (float &x : v) x = std::fabs(x);
  return v;
}

OpData absolute(const OpData &d) {
  OpData a{absolute(d.x), absolute(d.dy), {}, {}};
  for (const std::vector<float> &p : d.params) a.params.push_back(absolute(p));
  for (const std::vector<float> &p : d.dparams_start) a.dparams_start.push_back(absolute(p));
  return a;
}

// Seeded data for s: x, dy, parameters and gradient starts uniform in [-1, 1).
OpData random_data(const OpShape &s, uint64_t seed) {
  OpData d{uniform(s.in_size(), seed + 1, -1.0f, 1.0f), uniform(s.out_size(), seed + 2, -1.0f, 1.0f), {}, {}};
  for (size_t p = 0; p < s.params.size(); ++p) {
    d.params.push_back(uniform(elements(s.params[p]), seed + 10 + p, -1.0f, 1.0f));
    d.dparams_start.push_back(uniform(elements(s.params[p]), seed + 20 + p, -1.0f, 1.0f));
  }
  return d;
}

double max_of(const std::vector<float> &v) {
  return v.empty() ? 0.0 : double(*std::max_element(v.begin(), v.end()));
}

// ---- dense
// --------------------------------------------------------------------------------------------------

OpShape dense_shape(size_t n, size_t in, size_t out, bool bias) {
  OpShape s{"dense",       int64_t(n),     {int64_t(out)},
            {int64_t(in)}, {int64_t(out)}, {{int64_t(out), int64_t(in)}}};
  if (bias) s.params.push_back({int64_t(out)});
  return s;
}

// One forward and backward of a "dense" or "linear" shape on the GPU against the CPU reference: y, dx, and
// the accumulated dW (and db).
void check_fully_connected(const OpShape &s, uint64_t seed, uint32_t flags, double rel) {
  const OpData d = random_data(s, seed);
  const OpResults cpu = cpu_pass(s, d), bound = cpu_pass(s, absolute(d));
  Gpu gpu(flags);
  GpuOp op(gpu, s, d);
  op.forward();
  op.backward();
  const OpResults got = op.results();
  const std::string name = s.op;
  expect_close((name + " y").c_str(), got.y, cpu.y, &bound.y, rel, 0.0);
  expect_close((name + " dx").c_str(), got.dx, cpu.dx, &bound.dx, rel, 0.0);
  expect_close((name + " dW (accumulated)").c_str(), got.dparams[0], cpu.dparams[0], &bound.dparams[0], rel,
               0.0);
  if (s.params.size() > 1)
    expect_close((name + " db (accumulated)").c_str(), got.dparams[1], cpu.dparams[1], &bound.dparams[1], rel,
                 0.0);
}

void check_dense(size_t n, size_t in, size_t out, uint64_t seed, uint32_t flags, double rel,
                 bool bias = true) {
  print_message("dense n %zu, in %zu, out %zu%s%s\n", n, in, out, bias ? "" : ", no bias",
                flags & DPT_BACKEND_ALLOW_TF32 ? ", TF32" : "");
  check_fully_connected(dense_shape(n, in, out, bias), seed, flags, rel);
}

void test_gpu_dense(void **) {
  check_dense(37, 300, 70, 101, 0, 2e-6);
  check_dense(1, 5, 3, 102, 0, 2e-6);
  check_dense(256, 800, 128, 103, 0, 2e-6);  // LeNet's first dense layer, a training batch
  check_dense(64, 128, 10, 104, DPT_BACKEND_ALLOW_TF32, 4e-3);
  check_dense(19, 40, 9, 105, 0, 2e-6, false);
}

// A dense input of any shape is flattened: [c, h, w] after a convolution.
void test_gpu_dense_flattens(void **) {
  OpShape s = dense_shape(6, 4 * 5 * 5, 10, true);
  s.in = {4, 5, 5};
  print_message("dense n 6, input [4, 5, 5], out 10\n");
  check_fully_connected(s, 110, 0, 2e-6);
}

// "linear": the same kernel over every row of the last dimension, [sequence, features] -> [sequence,
// units] (a transformer's projections: 128 positions of 24 features to 72, the QKV shape of a small block).
void test_gpu_linear(void **) {
  for (const bool bias : {true, false}) {
    OpShape s = dense_shape(5, 24, 72, bias);
    s.op = "linear";
    s.in = {128, 24};
    s.out = {128, 72};
    print_message("linear n 5, [128, 24] -> [128, 72]%s\n", bias ? "" : ", no bias");
    check_fully_connected(s, 130 + (bias ? 1 : 0), 0, 2e-6);
  }
}

// Only the gradients asked for: the others are NULL (not computed) and the ones computed still match. The
// bias gradient (the module's fixed-order kernel in dense, and in deterministic conv2d) has the same bits on
// a second run.
void test_gpu_partial_gradients(void **) {
  {
    const OpShape s = dense_shape(29, 33, 7, true);
    const OpData d = random_data(s, 120);
    const OpResults cpu = cpu_pass(s, d), bound = cpu_pass(s, absolute(d));
    Gpu gpu;
    GpuOp op(gpu, s, d);
    op.forward();
    op.backward(false, {false, true});
    const OpResults first = op.results();
    expect_close("dense db alone (accumulated)", first.dparams[1], cpu.dparams[1], &bound.dparams[1], 2e-6,
                 0.0);
    expect_bitwise("dense dW untouched", first.dparams[0], d.dparams_start[0]);
    op.reset_grads();
    op.backward(false, {false, true});
    expect_bitwise("dense db alone, second run", op.results().dparams[1], first.dparams[1]);
    op.reset_grads();
    op.backward(true, {true, false});
    const OpResults second = op.results();
    expect_close("dense dx with dW", second.dx, cpu.dx, &bound.dx, 2e-6, 0.0);
    expect_close("dense dW with dx", second.dparams[0], cpu.dparams[0], &bound.dparams[0], 2e-6, 0.0);
    expect_bitwise("dense db untouched", second.dparams[1], d.dparams_start[1]);
  }
  const OpShape s{"conv2d", 3, {6, 3, 1, 1}, {2, 9, 9}, {6, 9, 9}, {{6, 2, 3, 3}, {6}}};
  const OpData d = random_data(s, 130);
  const OpResults cpu = cpu_pass(s, d), bound = cpu_pass(s, absolute(d));
  Gpu gpu(DPT_BACKEND_DETERMINISTIC);
  GpuOp op(gpu, s, d);
  op.forward();
  op.backward(false, {false, true});
  const OpResults first = op.results();
  expect_close("conv2d db alone (accumulated)", first.dparams[1], cpu.dparams[1], &bound.dparams[1], 2e-6,
               0.0);
  expect_bitwise("conv2d dW untouched", first.dparams[0], d.dparams_start[0]);
  op.reset_grads();
  op.backward(false, {false, true});
  expect_bitwise("conv2d db alone, second run", op.results().dparams[1], first.dparams[1]);
}

// ---- conv2d
// -------------------------------------------------------------------------------------------------

struct ConvCase {
  size_t n, c, h, w, out_c, kernel, stride, padding;
};

OpShape conv_shape(const ConvCase &k, bool bias) {
  const int64_t oh = int64_t((k.h + 2 * k.padding - k.kernel) / k.stride + 1);
  const int64_t ow = int64_t((k.w + 2 * k.padding - k.kernel) / k.stride + 1);
  OpShape s{"conv2d",
            int64_t(k.n),
            {int64_t(k.out_c), int64_t(k.kernel), int64_t(k.stride), int64_t(k.padding)},
            {int64_t(k.c), int64_t(k.h), int64_t(k.w)},
            {int64_t(k.out_c), oh, ow},
            {{int64_t(k.out_c), int64_t(k.c), int64_t(k.kernel), int64_t(k.kernel)}}};
  if (bias) s.params.push_back({int64_t(k.out_c)});
  return s;
}

void check_conv(const ConvCase &k, uint64_t seed, uint32_t flags, bool bias = true) {
  print_message("conv2d n %zu, %zux%zux%zu, %zu outputs, kernel %zu, stride %zu, padding %zu%s%s\n", k.n, k.c,
                k.h, k.w, k.out_c, k.kernel, k.stride, k.padding, bias ? "" : ", no bias",
                flags & DPT_BACKEND_DETERMINISTIC ? ", deterministic" : "");
  const OpShape s = conv_shape(k, bias);
  const OpData d = random_data(s, seed);
  const OpResults cpu = cpu_pass(s, d), bound = cpu_pass(s, absolute(d));

  Gpu gpu(flags);
  GpuOp op(gpu, s, d);
  op.forward();
  op.backward();
  const OpResults got = op.results();
  const double rel = 1e-4, abs_of_max = 1e-5;
  expect_close("conv2d y", got.y, cpu.y, &bound.y, rel, abs_of_max * max_of(bound.y));
  expect_close("conv2d dx", got.dx, cpu.dx, &bound.dx, rel, abs_of_max * max_of(bound.dx));
  expect_close("conv2d dW (accumulated)", got.dparams[0], cpu.dparams[0], &bound.dparams[0], rel,
               abs_of_max * max_of(bound.dparams[0]));
  if (bias)
    expect_close("conv2d db (accumulated)", got.dparams[1], cpu.dparams[1], &bound.dparams[1], 2e-6, 0.0);
  if ((flags & DPT_BACKEND_DETERMINISTIC) == 0) return;
  // Deterministic mode: the same inputs give the same bits.
  op.reset_grads();
  op.backward();
  const OpResults first = op.results();
  op.reset_grads();
  op.backward();
  const OpResults second = op.results();
  expect_bitwise("conv2d dx, deterministic rerun", second.dx, first.dx);
  for (size_t p = 0; p < s.params.size(); ++p)
    expect_bitwise(p == 0 ? "conv2d dW, deterministic rerun" : "conv2d db, deterministic rerun",
                   second.dparams[p], first.dparams[p]);
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
  check_conv({4, 3, 10, 10, 5, 3, 1, 1}, 390, 0, false);
}

void test_gpu_conv2d_deterministic(void **) {
  uint64_t seed = 400;
  for (const ConvCase &k : kConvCases) check_conv(k, seed += 10, DPT_BACKEND_DETERMINISTIC);
  check_conv({4, 3, 10, 10, 5, 3, 1, 1}, 490, DPT_BACKEND_DETERMINISTIC, false);
}

// ---- pooling
// ------------------------------------------------------------------------------------------------

void check_pool(bool max, size_t n, size_t c, size_t h, size_t w, size_t window, size_t stride,
                const std::vector<float> &x, uint64_t seed) {
  print_message("%s pool n %zu, %zux%zux%zu, window %zu, stride %zu\n", max ? "max" : "average", n, c, h, w,
                window, stride);
  const int64_t oh = int64_t((h - window) / stride + 1), ow = int64_t((w - window) / stride + 1);
  const OpShape s{
      max ? "max_pool2d" : "avg_pool2d",    int64_t(n),           {int64_t(window), int64_t(stride)},
      {int64_t(c), int64_t(h), int64_t(w)}, {int64_t(c), oh, ow}, {}};
  const OpData d{x, uniform(s.out_size(), seed, -1.0f, 1.0f), {}, {}};
  const OpResults cpu = cpu_pass(s, d);
  // Max: the same x selects the same elements, so |dy| alone gives the bound of the sums.
  const OpResults bound = cpu_pass(s, OpData{max ? x : absolute(x), absolute(d.dy), {}, {}});

  Gpu gpu;
  GpuOp op(gpu, s, d);
  op.forward();
  op.backward();
  const OpResults got = op.results();
  if (max)
    expect_bitwise("max pool y", got.y, cpu.y);
  else
    expect_close("average pool y", got.y, cpu.y, &bound.y, 2e-6, 0.0);
  expect_close(max ? "max pool dx" : "average pool dx", got.dx, cpu.dx, &bound.dx, 2e-6, 0.0);
}

void test_gpu_pooling(void **) {
  struct Case {
    bool max;
    size_t n, c, h, w, window, stride;
  };
  const Case cases[] = {
      {false, 8, 20, 26, 26, 2, 2},  // LeNet's first pooling
      {false, 3, 3, 13, 11, 2, 2},   // odd sizes: the last row and column are not covered
      {false, 2, 4, 9, 9, 3, 1},     // overlapping windows
      {true, 8, 20, 26, 26, 2, 2},  {true, 3, 3, 13, 11, 3, 2},  // overlapping windows
  };
  uint64_t seed = 500;
  for (const Case &k : cases) {
    const std::vector<float> x = uniform(k.n * k.c * k.h * k.w, seed += 10, -1.0f, 1.0f);
    check_pool(k.max, k.n, k.c, k.h, k.w, k.window, k.stride, x, seed + 1);
  }
}

// Max pooling after a ReLU: many windows are all zeros, others hold equal maxima. The CPU kernel gives the
// gradient to the first maximum in row-major order.
void test_gpu_maxpool_ties(void **) {
  const size_t n = 4, c = 3, h = 12, w = 12;
  std::vector<float> x = uniform(n * c * h * w, 600, -1.0f, 1.0f);
  for (float &v : x) v = std::max(0.0f, std::round(v * 2.0f) / 2.0f);  // 0, 0.5 or 1: ties everywhere
  check_pool(true, n, c, h, w, 2, 2, x, 601);
}

// ---- activations
// --------------------------------------------------------------------------------------------

// Backward receives every tensor forward had (op_call.h); the CPU kernels read the output only.
void test_gpu_activations(void **) {
  const size_t count = 1000 + 7, n = 4;
  std::vector<float> x = uniform(n * count, 700, -6.0f, 6.0f);
  for (size_t i = 0; i < x.size(); i += 97) x[i] = 0.0f;  // ReLU's kink
  const std::vector<float> dy = uniform(n * count, 701, -1.0f, 1.0f);
  const struct {
    const char *name;
    double rel, abs;
  } kinds[] = {{"relu", 0.0, 0.0}, {"sigmoid", 1e-5, 1e-6}, {"tanh", 1e-5, 1e-6}};
  Gpu gpu;
  for (const auto &k : kinds) {
    const OpShape s{k.name, int64_t(n), {}, {int64_t(count)}, {int64_t(count)}, {}};
    const OpData d{x, dy, {}, {}};
    const OpResults cpu = cpu_pass(s, d);
    GpuOp op(gpu, s, d);
    op.forward();
    op.backward();
    const OpResults got = op.results();
    const std::string name = k.name;
    expect_close((name + " y").c_str(), got.y, cpu.y, nullptr, k.rel, k.abs);
    expect_close((name + " dx").c_str(), got.dx, cpu.dx, nullptr, k.rel, k.abs);
  }
}

// ---- every op
// -----------------------------------------------------------------------------------------------

// Zero samples: nothing is computed and nothing fails, even with no data at all.
void test_gpu_zero_samples(void **) {
  const OpShape shapes[] = {
      dense_shape(0, 4, 2, true),
      conv_shape({0, 2, 5, 5, 3, 3, 1, 1}, true),
      {"avg_pool2d", 0, {2, 2}, {3, 4, 4}, {3, 2, 2}, {}},
      {"max_pool2d", 0, {2, 2}, {3, 4, 4}, {3, 2, 2}, {}},
      {"relu", 0, {}, {5}, {5}, {}},
      {"sigmoid", 0, {}, {5}, {5}, {}},
      {"tanh", 0, {}, {5}, {5}, {}},
  };
  Gpu gpu;
  for (const OpShape &s : shapes) {
    dpt_op_call c = call_of(s, nullptr, nullptr, std::vector<const float *>(s.params.size(), nullptr));
    const std::string name = s.op;
    check(gpu.api().op_forward(gpu.ctx(), &c, gpu.error, sizeof gpu.error), (name + " forward, n 0").c_str(),
          gpu.error);
    check(gpu.api().op_backward(gpu.ctx(), &c, gpu.error, sizeof gpu.error),
          (name + " backward, n 0").c_str(), gpu.error);
  }
  gpu.sync();
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_dense),       cmocka_unit_test(test_gpu_dense_flattens),
      cmocka_unit_test(test_gpu_linear),      cmocka_unit_test(test_gpu_partial_gradients),
      cmocka_unit_test(test_gpu_conv2d),      cmocka_unit_test(test_gpu_conv2d_deterministic),
      cmocka_unit_test(test_gpu_pooling),     cmocka_unit_test(test_gpu_maxpool_ties),
      cmocka_unit_test(test_gpu_activations), cmocka_unit_test(test_gpu_zero_samples),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
