// The CUDA module's kernels of the transformer ops against the CPU reference kernels, on host copies of the
// same data (op_runner.hpp): token_embedding and position_embedding (a gather and sums in the CPU's order:
// bitwise), causal_self_attention (cuBLAS's strided-batched SGEMMs and warp sums against OpenBLAS and the
// CPU's lane sums: within a few float roundings of the products' magnitudes), with attention dropout (the
// same masks: interface/op_math.hpp), at sequence lengths 1, 7, 33 and 128. Every GPU result also has the
// same bits on a second run.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "op_runner.hpp"

namespace {

using namespace cuda_test;

// One op's forward and backward on both backends, the GPU's twice.
struct Pass {
  Data cpu, gpu;
};
Pass run_both(const Spec &s, uint64_t seed) {
  const Data d = make_data(s, seed);
  CpuRunner cpu(s, d);
  train_pass(cpu);
  Gpu gpu;
  GpuRunner g(gpu, s, d);
  train_pass(g);
  GpuRunner again(gpu, s, d);
  train_pass(again);
  expect_same_bits(std::string(s.op) + ", second run:", again.data, g.data);
  return Pass{cpu.data, g.data};
}

void test_gpu_token_embedding(void **) {
  const int64_t n = 3, t = 9, vocabulary = 11, features = 7;
  print_message("token_embedding n %lld, %lld tokens, %lld x %lld table\n", (long long)n, (long long)t,
                (long long)vocabulary, (long long)features);
  Spec s{"token_embedding",        n, {vocabulary, features}, {}, {{t}}, {t, features},
         {{vocabulary, features}}, {}};
  s.token_input = true;
  const Pass p = run_both(s, 600);
  expect_bitwise("token_embedding y", p.gpu.y, p.cpu.y);
  expect_bitwise("token_embedding dW (accumulated)", p.gpu.dparams[0], p.cpu.dparams[0]);
}

void test_gpu_position_embedding(void **) {
  const int64_t n = 4, t = 5, c = 6;
  print_message("position_embedding n %lld, [%lld, %lld]\n", (long long)n, (long long)t, (long long)c);
  const Spec s{"position_embedding", n, {}, {}, {{t, c}}, {t, c}, {{t, c}}, {}};
  const Pass p = run_both(s, 610);
  expect_bitwise("position_embedding y", p.gpu.y, p.cpu.y);
  expect_bitwise("position_embedding dx", p.gpu.dx[0], p.cpu.dx[0]);
  expect_bitwise("position_embedding dW (accumulated)", p.gpu.dparams[0], p.cpu.dparams[0]);
}

// Products of T terms of |q k| <= 1 and sums of T probabilities: rel 1e-5 of the magnitude plus abs 1e-6.
void check_attention(int64_t n, int64_t t, int64_t c, int64_t heads, double dropout, uint64_t seed) {
  print_message("causal_self_attention n %lld, T %lld, C %lld, %lld heads, dropout %g\n", (long long)n,
                (long long)t, (long long)c, (long long)heads, dropout);
  Spec s{"causal_self_attention", n, {heads}, {dropout}, {{t, 3 * c}}, {t, c}, {}, {}};
  s.saved_bytes = size_t(n) * 2 * size_t(heads) * size_t(t) * sizeof(float);
  const Pass p = run_both(s, seed);
  expect_close("causal_self_attention y", p.gpu.y, p.cpu.y, nullptr, 1e-5, 1e-6);
  expect_close("causal_self_attention dx", p.gpu.dx[0], p.cpu.dx[0], nullptr, 1e-4, 1e-6);
  // The saved row maxima are the scores' (the same products, another order), the sums within 1e-5.
  const std::vector<float> gs = saved_floats(p.gpu, s.saved_bytes / sizeof(float)),
                           cs = saved_floats(p.cpu, s.saved_bytes / sizeof(float));
  expect_close("causal_self_attention saved max and sum", gs, cs, nullptr, 1e-5, 1e-6);
}

void test_gpu_attention(void **) {
  check_attention(2, 1, 4, 2, 0.0, 620);
  check_attention(3, 7, 8, 2, 0.0, 621);
  check_attention(2, 128, 16, 4, 0.0, 622);
  check_attention(2, 33, 8, 2, 0.2, 623);  // attention dropout: the CPU's masks
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_token_embedding),
      cmocka_unit_test(test_gpu_position_embedding),
      cmocka_unit_test(test_gpu_attention),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
