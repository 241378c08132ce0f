// The CUDA module's matrix products on 16-bit inputs (dpt_op_call::matmul_dtype bfloat16 and float16:
// dense, linear and causal_self_attention through cublasGemmStridedBatchedEx, conv2d through cuDNN on inputs
// rounded to the type) against the CPU reference kernels at the same matmul_dtype, on host copies of the same
// data (op_runner.hpp).
//
// What is compared, and the tolerances. Both sides round the same inputs to the 16-bit type and multiply
// them exactly (an 8- or 11-bit by 8- or 11-bit significand product fits float32), then sum in float32 in
// their own orders (the roundings are the same: modules/cuda/float16.cuh restates src/core/float16.hpp). So
// they differ by float32 summation noise, except where a
// difference in an intermediate (the attention's scores and probabilities, which are themselves inputs of
// its next product) moves a value across a 16-bit rounding boundary: one 16-bit ulp of that value.
//  * dense and linear: rel 1e-4 of A, the same result computed from the inputs' absolute values (the dot
//    product's classic bound; float32 noise is ~1e-7 A, tensor cores summing with truncation at worst
//    k 2^-23 A = 1e-4 A for k = 800).
//  * conv2d: rel 4e-3 of A plus 1e-4 max A: cuDNN runs TF32 tensor-op math on the rounded values, and its
//    timed choice may pick Winograd or FFT algorithms whose transforms are rounded to TF32 (2^-11 of a
//    tile's magnitude); deterministic mode keeps to GEMM-family algorithms (modules/cuda/ops/conv_plan.cpp).
//  * causal_self_attention: rel 4e-3 and abs 4e-3 (a score or probability one 16-bit ulp apart: 2^-8 of it).
// And the GPU does round: its result is at least 4x closer to the CPU's 16-bit result than the CPU's 16-bit
// result is to its float32 one (H200: 30x to 70,000x; for convolutions under the timed choice with bfloat16
// only, as TF32 transforms are as coarse as float16's rounding). Every GPU result has the same bits on a
// second run in deterministic mode (DPT_BACKEND_DETERMINISTIC); conv2d also runs the timed choice, whose bits
// may change from one context to the next (the first GPU run saw dx move by 2 ulp), against the tolerances.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "op_runner.hpp"

namespace {

using namespace cuda_test;

const int32_t kTypes[] = {DPT_DTYPE_BF16, DPT_DTYPE_F16};

const char *type_name(int32_t dtype) {
  return dtype == DPT_DTYPE_BF16 ? "bf16" : "fp16";
}

double max_difference(const std::vector<float> &a, const std::vector<float> &b) {
  double most = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) most = std::max(most, std::fabs(double(a[i]) - b[i]));
  return most;
}

Data absolute(const Data &d) {
  Data a = d;
  for (std::vector<float> &v : a.x) v = cuda_test::absolute(v);
  for (std::vector<float> &v : a.params) v = cuda_test::absolute(v);
  for (std::vector<float> &v : a.dparams) v = cuda_test::absolute(v);
  a.dy = cuda_test::absolute(a.dy);
  return a;
}

Data cpu_results(const Spec &s, const Data &d) {
  CpuRunner cpu(s, d);
  train_pass(cpu);
  return cpu.data;
}

struct Compared {
  Data gpu, cpu, cpu_fp32, bound;
};

// Forward and backward of s on the GPU (context flags: with DPT_BACKEND_DETERMINISTIC twice, the same bits)
// and the CPU at s.matmul_dtype, the CPU in float32, and the CPU on the absolute values (the bounds A).
Compared run_all(const Spec &s, uint64_t seed, uint32_t flags) {
  const Data d = make_data(s, seed);
  Spec fp32 = s;
  fp32.matmul_dtype = DPT_DTYPE_F32;
  Compared r{{}, cpu_results(s, d), cpu_results(fp32, d), cpu_results(s, absolute(d))};
  Gpu gpu(flags);
  GpuRunner g(gpu, s, d);
  train_pass(g);
  if (flags & DPT_BACKEND_DETERMINISTIC) {
    GpuRunner again(gpu, s, d);
    train_pass(again);
    expect_same_bits(std::string(s.op) + " " + type_name(s.matmul_dtype) + ", second run:", again.data,
                     g.data);
  }
  r.gpu = g.data;
  return r;
}

// The GPU's 16-bit result is closer to the CPU's 16-bit result than float32 is.
void expect_rounded(const std::string &what, const std::vector<float> &gpu, const std::vector<float> &cpu,
                    const std::vector<float> &cpu_fp32) {
  const double to_cpu = max_difference(gpu, cpu), precision = max_difference(cpu, cpu_fp32);
  print_message("%-44s GPU vs CPU %.3g, CPU 16-bit vs float32 %.3g\n", what.c_str(), to_cpu, precision);
  if (!(precision > 0.0 && to_cpu <= precision / 4))
    fail_msg("%s: the GPU is %.3g from the CPU's 16-bit result, which is %.3g from float32", what.c_str(),
             to_cpu, precision);
}

void check_products(const Spec &s, uint64_t seed, double rel, double abs_of_max, bool check_rounding,
                    uint32_t flags = DPT_BACKEND_DETERMINISTIC) {
  const Compared r = run_all(s, seed, flags);
  const std::string name = std::string(s.op) + " " + type_name(s.matmul_dtype);
  auto close = [&](const char *what, const std::vector<float> &got, const std::vector<float> &want,
                   const std::vector<float> &cpu_fp32, const std::vector<float> &bound) {
    const double largest = bound.empty() ? 0.0 : *std::max_element(bound.begin(), bound.end());
    expect_close((name + " " + what).c_str(), got, want, &bound, rel, abs_of_max * largest);
    if (check_rounding) expect_rounded(name + " " + what, got, want, cpu_fp32);
  };
  close("y", r.gpu.y, r.cpu.y, r.cpu_fp32.y, r.bound.y);
  close("dx", r.gpu.dx[0], r.cpu.dx[0], r.cpu_fp32.dx[0], r.bound.dx[0]);
  close("dW (accumulated)", r.gpu.dparams[0], r.cpu.dparams[0], r.cpu_fp32.dparams[0], r.bound.dparams[0]);
  if (s.params.size() < 2) return;
  // The bias gradient is a sum, not a product: float32 in every precision (the fp32 kernels' 2e-6).
  expect_bitwise((name + " db on the CPU, as float32's").c_str(), r.cpu.dparams[1], r.cpu_fp32.dparams[1]);
  expect_close((name + " db (accumulated)").c_str(), r.gpu.dparams[1], r.cpu.dparams[1], &r.bound.dparams[1],
               2e-6, 0.0);
}

void test_gpu_dense_16_bit(void **) {
  for (const int32_t type : kTypes) {
    print_message("dense %s n 37, in 300, out 70; n 256, in 800, out 128\n", type_name(type));
    Spec s{"dense", 37, {70}, {}, {{300}}, {70}, {{70, 300}, {70}}, {}};
    s.matmul_dtype = type;
    check_products(s, 700, 1e-4, 0.0, true);
    s = Spec{"dense", 256, {128}, {}, {{800}}, {128}, {{128, 800}, {128}}, {}};  // LeNet's first dense layer
    s.matmul_dtype = type;
    check_products(s, 710, 1e-4, 0.0, true);
  }
}

void test_gpu_linear_16_bit(void **) {
  for (const int32_t type : kTypes) {
    print_message("linear %s n 5, [128, 24] -> [128, 72]\n", type_name(type));
    Spec s{"linear", 5, {72}, {}, {{128, 24}}, {128, 72}, {{72, 24}, {72}}, {}};
    s.matmul_dtype = type;
    check_products(s, 720, 1e-4, 0.0, true);
  }
}

void test_gpu_conv2d_16_bit(void **) {
  for (const uint32_t flags : {uint32_t(DPT_BACKEND_DETERMINISTIC), 0u})
    for (const int32_t type : kTypes) {
      print_message(
          "conv2d %s n 8, 20x13x13, 50 outputs, kernel 5; n 3, 3x11x9, 4 outputs, kernel 3, stride 2, "
          "padding 1; %s algorithms\n",
          type_name(type), flags != 0 ? "deterministic" : "timed");
      // (timed, cuDNN may pick FFT or Winograd, whose TF32 transforms are as coarse as float16's rounding)
      const bool rounds = type == DPT_DTYPE_BF16 || flags != 0;
      Spec s{"conv2d", 8, {50, 5, 1, 0}, {}, {{20, 13, 13}}, {50, 9, 9}, {{50, 20, 5, 5}, {50}}, {}};
      s.matmul_dtype = type;
      check_products(s, 730, 4e-3, 1e-4, rounds, flags);
      s = Spec{"conv2d", 3, {4, 3, 2, 1}, {}, {{3, 11, 9}}, {4, 6, 5}, {{4, 3, 3, 3}}, {}};
      s.matmul_dtype = type;
      check_products(s, 740, 4e-3, 1e-4, rounds, flags);
    }
}

// The shapes of test_gpu_training's residual model (conv2d 3x3, stride 1, padding 1 on 28x28 from 1 and from
// 4 channels; dense 196 -> 10), where its 4 steps at 16 bits ended 0.022-0.029 (bf16) and 0.016 (fp16) from
// the CPU's, against 0.087 and 0.038 from float32.
void test_gpu_residual_shapes_16_bit(void **) {
  for (const int32_t type : kTypes) {
    print_message(
        "conv2d %s n 32, 1x28x28 and 4x28x28, 4 outputs, kernel 3, padding 1; dense n 32, 196 -> 10\n",
        type_name(type));
    Spec s{"conv2d", 32, {4, 3, 1, 1}, {}, {{1, 28, 28}}, {4, 28, 28}, {{4, 1, 3, 3}}, {}};
    s.matmul_dtype = type;
    check_products(s, 760, 4e-3, 1e-4, true);
    s = Spec{"conv2d", 32, {4, 3, 1, 1}, {}, {{4, 28, 28}}, {4, 28, 28}, {{4, 4, 3, 3}}, {}};
    s.matmul_dtype = type;
    check_products(s, 770, 4e-3, 1e-4, true);
    s = Spec{"dense", 32, {10}, {}, {{196}}, {10}, {{10, 196}, {10}}, {}};
    s.matmul_dtype = type;
    check_products(s, 780, 1e-4, 0.0, true);
  }
}

void test_gpu_attention_16_bit(void **) {
  for (const int32_t type : kTypes) {
    const int64_t n = 2, t = 33, c = 16, heads = 2;
    print_message("causal_self_attention %s n 2, T 33, C 16, 2 heads\n", type_name(type));
    Spec s{"causal_self_attention", n, {heads}, {0.0}, {{t, 3 * c}}, {t, c}, {}, {}};
    s.saved_bytes = size_t(n) * 2 * size_t(heads) * size_t(t) * sizeof(float);
    s.matmul_dtype = type;
    const Compared r = run_all(s, 750, DPT_BACKEND_DETERMINISTIC);
    expect_close("causal_self_attention y", r.gpu.y, r.cpu.y, nullptr, 4e-3, 4e-3);
    expect_close("causal_self_attention dx", r.gpu.dx[0], r.cpu.dx[0], nullptr, 4e-3, 4e-3);
    expect_rounded("causal_self_attention y", r.gpu.y, r.cpu.y, r.cpu_fp32.y);
    expect_rounded("causal_self_attention dx", r.gpu.dx[0], r.cpu.dx[0], r.cpu_fp32.dx[0]);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_dense_16_bit),     cmocka_unit_test(test_gpu_linear_16_bit),
      cmocka_unit_test(test_gpu_conv2d_16_bit),    cmocka_unit_test(test_gpu_residual_shapes_16_bit),
      cmocka_unit_test(test_gpu_attention_16_bit),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
