// Mixed precision (bf16, fp16) at the op level: the CPU kernels of the ops with matrix products, called
// with dpt_op_call::matmul_dtype = DPT_DTYPE_BF16 or DPT_DTYPE_F16. A 16-bit product's inputs are rounded
// to bfloat16 / float16 and its products summed in float32, so dense, linear and conv2d equal their float32
// kernels run on the rounded inputs (forward, and backward's weight and input gradients from the rounded
// output gradient), up to the order of float32 sums (1e-5 relative); the biases' gradients, sums of the
// unrounded output gradient, are the float32 kernel's bits. Attention rounds inside too (its probabilities
// before P V): it stays within the 16-bit type's resolution of float32. And none of them is float32 in
// disguise: each differs from float32 by about the type's rounding (bfloat16 2^-9, float16 2^-12).
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/ops/conv2d_winograd.hpp"
#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/float16.hpp"
#include "graph/model_spec.hpp"
#include "graph/op_def.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

using dpt::ModelSpec;
using dpt::Shape;

dpt::OpAttrs ints(std::initializer_list<int64_t> values) {
  dpt::OpAttrs a;
  size_t i = 0;
  for (int64_t v : values) a.ints[i++] = v;
  return a;
}

std::vector<float> rounded(std::vector<float> v, int32_t dtype) {
  for (float &x : v)
    x = dtype == DPT_DTYPE_F16 ? dpt::from_f16(dpt::to_f16(x)) : dpt::from_bf16(dpt::to_bf16(x));
  return v;
}

// How far a 16-bit type's products land from float32's: about its rounding, 2^-9 for bfloat16 and 2^-12
// for float16, within these bounds on the tests' values.
struct Band {
  const char *name;
  int32_t dtype;
  double low, high;
};
constexpr Band kBands[] = {{"bf16", DPT_DTYPE_BF16, 1e-4, 2e-2}, {"fp16", DPT_DTYPE_F16, 1e-5, 3e-3}};

// What one forward and backward of node 0 of a one-node model gives.
struct Pass {
  std::vector<float> y, dx, dp;
};

// Node 0 of m over n samples x, parameters p, output gradient dy, its matrix products in matmul_dtype.
Pass run(const ModelSpec &m, size_t n, const std::vector<float> &x, const std::vector<float> &p,
         const std::vector<float> &dy, int32_t matmul_dtype) {
  const dpt::Node &node = m.nodes()[0];
  const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op(node.op->name);
  assert_non_null(kernel);
  Pass r;
  r.y.assign(n * node.layout.output.size(), 0.0f);
  r.dx.assign(x.size(), 0.0f);
  r.dp.assign(p.size(), 0.0f);
  std::vector<unsigned char> saved(n * node.layout.saved_bytes_per_sample + node.layout.saved_bytes + 16);
  dpt_op_call c = dpt::call_template(m, 0);
  c.n = int64_t(n);
  c.matmul_dtype = matmul_dtype;
  c.training = 1;
  c.inputs[0].data = const_cast<float *>(x.data());
  c.output.data = r.y.data();
  for (size_t k = 0; k < node.layout.params.size(); ++k)
    c.params[k].data = const_cast<float *>(p.data() + node.param_offsets[k]);
  c.saved = saved.data();
  c.saved_bytes = saved.size() - 16;
  std::vector<unsigned char> scratch(kernel->scratch_bytes != nullptr ? kernel->scratch_bytes(c) : 0);
  c.scratch = scratch.data();
  c.scratch_bytes = scratch.size();
  kernel->forward(c);
  c.output_grad = dy.data();
  c.input_grads[0] = r.dx.data();
  for (size_t k = 0; k < node.layout.params.size(); ++k)
    c.param_grads[k] = r.dp.data() + node.param_offsets[k];
  kernel->backward(c);
  return r;
}

double relative_difference(const std::vector<float> &a, const std::vector<float> &b, size_t begin = 0,
                           size_t end = SIZE_MAX) {
  double diff = 0, norm = 0;
  for (size_t i = begin; i < std::min(end, a.size()); ++i)
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), norm += double(b[i]) * b[i];
  return std::sqrt(diff / norm);
}

void expect_close(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                  double tolerance, size_t begin = 0, size_t end = SIZE_MAX) {
  const double e = relative_difference(got, want, begin, end);
  std::printf("  %-52s relative difference %.2e (tolerance %.0e)\n", what, e, tolerance);
  if (!(e <= tolerance)) fail_msg("%s: relative difference %.3g above %.0e", what, e, tolerance);
}

// The 16-bit kernel against the float32 kernel on rounded inputs; the bias gradient (the node's last
// parameter tensor when bias) against the float32 kernel's bits; and the distance from plain float32.
void check_rounded_equivalence(const char *name, const ModelSpec &m, size_t n, bool bias, const Band &band) {
  dpt_test::TestRng rng(17);
  const size_t in = m.input().size(), out = m.output().size();
  const std::vector<float> x = rng.vector(n * in, -1, 1), p = rng.vector(m.parameter_count(), -0.5f, 0.5f),
                           dy = rng.vector(n * out, -1, 1);
  const Pass bf16 = run(m, n, x, p, dy, band.dtype);
  // The float32 kernel on what the bf16 products see: the rounded input, weight and output gradient (the
  // bias is added in float32, unrounded).
  std::vector<float> p_rounded = rounded(p, band.dtype);
  const size_t weights = m.nodes()[0].layout.params[0].size();
  if (bias) std::copy(p.begin() + long(weights), p.end(), p_rounded.begin() + long(weights));
  const Pass reference = run(m, n, rounded(x, band.dtype), p_rounded, rounded(dy, band.dtype), DPT_DTYPE_F32);
  const Pass plain = run(m, n, x, p, dy, DPT_DTYPE_F32);
  std::printf("%s (n = %zu), %s:\n", name, n, band.name);
  expect_close("forward vs float32 on rounded inputs", bf16.y, reference.y, 1e-5);
  expect_close("input gradient vs float32 on rounded inputs", bf16.dx, reference.dx, 1e-5);
  expect_close("weight gradient vs float32 on rounded inputs", bf16.dp, reference.dp, 1e-5, 0, weights);
  if (bias) {
    if (std::memcmp(bf16.dp.data() + weights, plain.dp.data() + weights,
                    (p.size() - weights) * sizeof(float)))
      fail_msg("%s: the bias gradient is not the float32 kernel's", name);
  }
  const double from_fp32 = relative_difference(bf16.y, plain.y);
  std::printf("  %-52s relative difference %.2e (%s rounding: %.0e .. %.0e)\n", "forward vs float32",
              from_fp32, band.name, band.low, band.high);
  if (!(from_fp32 > band.low && from_fp32 < band.high)) fail_msg("%s: %.3g from float32", name, from_fp32);
}

void test_dense_and_linear(void **) {
  ModelSpec dense(Shape{3, 5, 4});
  dense.add_dense(7);
  ModelSpec linear(Shape{6, 40});
  linear.add(dpt::op_def("linear"), {0}, ints({33, 0}));
  for (const Band &band : kBands) {
    check_rounded_equivalence("dense 60 -> 7", dense, 9, true, band);
    check_rounded_equivalence("linear [6, 40] -> [6, 33], no bias", linear, 5, false, band);
  }
}

void test_conv2d(void **) {
  ModelSpec one(Shape{3, 9, 9});
  one.add_conv2d(8, 3, 1, 1, true);
  ModelSpec grouped(Shape{16, 4, 4});
  grouped.add_conv2d(12, 3, 2, 1, true);
  for (const Band &band : kBands) {
    check_rounded_equivalence("conv2d 3x9x9 -> 8, 3x3 pad 1 (one GEMM per sample)", one, 4, true, band);
    check_rounded_equivalence("conv2d 16x4x4 -> 12, 3x3 stride 2 (samples grouped)", grouped, 11, true, band);
  }
}

// bf16 3x3, stride 1, padding 1 convolutions of at least 16 channels run as Winograd F(2x2, 3x3) with the
// 16 point GEMMs on bfloat16 inputs (conv2d_winograd.hpp): what is rounded is the transformed tiles and
// weights, so they are not the float32 kernel on rounded inputs. They stay within bfloat16's band of the
// float32 kernel in forward and in both gradients (measured 3.9e-3 to 4.1e-3 here, where im2col's bf16
// products land 2.0e-3 from float32: the transforms' sums of up to 4 values round as one), and are not
// float32.
void test_conv2d_winograd_bf16(void **) {
  ModelSpec m(Shape{16, 6, 6});
  m.add_conv2d(16, 3, 1, 1, true);
  dpt_test::TestRng rng(23);
  const size_t n = 5, weights = m.nodes()[0].layout.params[0].size();
  const std::vector<float> x = rng.vector(n * m.input().size(), -1, 1),
                           p = rng.vector(m.parameter_count(), -0.5f, 0.5f),
                           dy = rng.vector(n * m.output().size(), -1, 1);
  const Pass bf16 = run(m, n, x, p, dy, DPT_DTYPE_BF16), plain = run(m, n, x, p, dy, DPT_DTYPE_F32);
  const Band &band = kBands[0];
  const double kWinogradHigh = 1e-2;  // 2.5x the measured distance
  std::printf("conv2d 16x6x6 -> 16, 3x3 pad 1 (Winograd), bf16 against float32:\n");
  const struct {
    const char *what;
    double difference;
  } parts[] = {{"forward", relative_difference(bf16.y, plain.y)},
               {"input gradient", relative_difference(bf16.dx, plain.dx)},
               {"weight gradient", relative_difference(bf16.dp, plain.dp, 0, weights)}};
  for (const auto &part : parts) {
    std::printf("  %-52s relative difference %.2e (bf16 rounding: %.0e .. %.0e)\n", part.what,
                part.difference, band.low, kWinogradHigh);
    if (!(part.difference > band.low && part.difference < kWinogradHigh))
      fail_msg("Winograd bf16 %s: %.3g from float32", part.what, part.difference);
  }
  if (std::memcmp(bf16.dp.data() + weights, plain.dp.data() + weights, (p.size() - weights) * sizeof(float)))
    fail_msg("Winograd bf16: the bias gradient is not the float32 kernel's");
}

// bf16 Winograd layers keep their transformed tiles (V) and output gradients (dM) as bfloat16 where the
// transforms can round them (AVX512_BF16): the bits of float32 storage, forward and both gradients, over
// two groups of samples (7 x 7 planes: 16 tiles, 32 samples a group, ragged tiles) and more output
// channels than one strip of a widened operand.
void test_conv2d_winograd_bf16_operands(void **) {
  if (dpt::cpu::winograd::transforms().input_bf16 == nullptr) {
    std::printf("no AVX512_BF16 on this CPU: V and dM stay float32, not run\n");
    skip();
  }
  ModelSpec m(Shape{20, 7, 7});
  m.add_conv2d(70, 3, 1, 1, true);
  dpt_test::TestRng rng(31);
  const size_t n = 40;
  const std::vector<float> x = rng.vector(n * m.input().size(), -1, 1),
                           p = rng.vector(m.parameter_count(), -0.5f, 0.5f),
                           dy = rng.vector(n * m.output().size(), -1, 1);
  dpt::cpu::winograd::set_bf16_operands(false);
  const Pass stored_f32 = run(m, n, x, p, dy, DPT_DTYPE_BF16);
  dpt::cpu::winograd::set_bf16_operands(true);
  const Pass stored_bf16 = run(m, n, x, p, dy, DPT_DTYPE_BF16);
  for (const auto &[what, a, b] : {std::tuple{"forward", &stored_bf16.y, &stored_f32.y},
                                   std::tuple{"input gradient", &stored_bf16.dx, &stored_f32.dx},
                                   std::tuple{"parameter gradient", &stored_bf16.dp, &stored_f32.dp}})
    if (a->size() != b->size() || std::memcmp(a->data(), b->data(), a->size() * sizeof(float)) != 0)
      fail_msg("Winograd bf16 %s: V and dM stored as bfloat16 differ from float32 storage", what);
  std::printf("Winograd bf16, 40 samples 20x7x7 -> 70: V and dM as bfloat16 give float32 storage's bits\n");
}

// A sample's convolution output does not depend on the slice it is computed in (the samples beside it, so
// the group it shares a GEMM with, or none), in every precision: the K-device contract and the processes of
// a pipeline's evaluation rely on it. The im2col case has k = 576, above the GEMM's k block, where a sum
// started from the bias (once the one-sample branch) rounds differently from bias + sum.
void test_conv2d_sample_independent_of_slice(void **) {
  ModelSpec im2col(Shape{64, 8, 8});
  im2col.add_conv2d(10, 3, 2, 1, true);  // 4x4 planes: samples grouped
  ModelSpec winograd(Shape{16, 6, 6});
  winograd.add_conv2d(16, 3, 1, 1, true);
  const size_t n = 5;
  for (const ModelSpec *m : {&im2col, &winograd})
    for (int32_t dtype : {DPT_DTYPE_F32, DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
      dpt_test::TestRng rng(29);
      const size_t in = m->input().size(), out = m->output().size();
      const std::vector<float> x = rng.vector(n * in, -1, 1),
                               p = rng.vector(m->parameter_count(), -0.5f, 0.5f),
                               dy = rng.vector(n * out, -1, 1);
      const Pass all = run(*m, n, x, p, dy, dtype);
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> xi(x.begin() + long(i * in), x.begin() + long((i + 1) * in)),
            dyi(dy.begin() + long(i * out), dy.begin() + long((i + 1) * out));
        const Pass one = run(*m, 1, xi, p, dyi, dtype);
        if (std::memcmp(one.y.data(), all.y.data() + i * out, out * sizeof(float)) != 0)
          fail_msg("conv2d of %zu inputs, dtype %d: sample %zu alone differs from its slice of %zu", in,
                   dtype, i, n);
        if (std::memcmp(one.dx.data(), all.dx.data() + i * in, in * sizeof(float)) != 0)
          fail_msg("conv2d, dtype %d: sample %zu's input gradient alone differs from its slice's", dtype, i);
      }
    }
  std::printf(
      "conv2d (im2col grouped, Winograd) x (fp32, bf16, fp16): each sample's output and input gradient "
      "alone equal to its slice's, bit for bit\n");
}

// Attention rounds its inputs and, before P V, its probabilities: the 16-bit type's resolution of float32,
// and not float32.
void test_attention(void **) {
  ModelSpec m(Shape{16, 24});
  m.add(dpt::op_def("causal_self_attention"), {0}, ints({2}));
  dpt_test::TestRng rng(5);
  const std::vector<float> x = rng.vector(3 * 16 * 24, -1, 1), dy = rng.vector(3 * 16 * 8, -1, 1);
  const Pass plain = run(m, 3, x, {}, dy, DPT_DTYPE_F32);
  for (const Band &band : kBands) {
    const Pass low = run(m, 3, x, {}, dy, band.dtype);
    for (const auto &[what, a, b] : {std::tuple{"attention forward", &low.y, &plain.y},
                                     std::tuple{"attention input gradient", &low.dx, &plain.dx}}) {
      const double e = relative_difference(*a, *b);
      std::printf("  %-44s %s relative difference %.2e (%.0e .. %.0e)\n", what, band.name, e, band.low,
                  band.high);
      if (!(e > band.low && e < band.high)) fail_msg("%s, %s: %.3g from float32", what, band.name, e);
    }
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dense_and_linear),
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_conv2d_winograd_bf16),
      cmocka_unit_test(test_conv2d_winograd_bf16_operands),
      cmocka_unit_test(test_conv2d_sample_independent_of_slice),
      cmocka_unit_test(test_attention),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
