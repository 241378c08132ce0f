// gemm_bench: GFLOP/s of the CPU GEMM kernels (src/backend/cpu/gemm) side by side with OpenBLAS's sgemm, on
// square products and on the shapes dptrain's models run (LeNet's at batch 256, ResNet-18's convolutions
// at batch 64 as im2col GEMMs, gpt-mini's linears and attention at batch 16 x 128 tokens), one thread. Each
// cell: the best of 5 timed calls after a warm-up. Kernels this CPU lacks print "-".
//
//   build/bin/gemm_bench [--quick]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cblas.h>

#include "backend/cpu/gemm/gemm.hpp"

namespace {

using dpt::gemm::Kernel;
using dpt::gemm::Precision;

struct Shape {
  const char *what;
  size_t m, n, k;
  bool ta, tb;
};

double seconds_of(Precision p, const Shape &s, const std::vector<float> &a, const std::vector<float> &b,
                  std::vector<float> &c) {
  const size_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    dpt::gemm::gemm(p, s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0 && t < best) best = t;
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  openblas_set_num_threads(1);
  std::vector<Shape> shapes = {
      {"square 512", 512, 512, 512, false, false},
      {"square 1024", 1024, 1024, 1024, false, false},
      {"square 2048", 2048, 2048, 2048, false, false},
      {"lenet conv1 fwd (20x676x9)", 20, 676, 9, false, false},
      {"lenet conv2 fwd (50x121x500)", 50, 121, 500, false, false},
      {"lenet conv2 dW (50x500x121)", 50, 500, 121, false, true},
      {"lenet dense1 fwd (256x128x1250)", 256, 128, 1250, false, true},
      {"resnet conv1 fwd (64x784x9)", 64, 784, 9, false, false},
      {"resnet layer1 fwd (64x784x576)", 64, 784, 576, false, false},
      {"resnet layer1 dW (64x576x784)", 64, 576, 784, false, true},
      {"resnet layer1 dX (576x784x64)", 576, 784, 64, true, false},
      {"resnet layer3 fwd (256x392x2304)", 256, 392, 2304, false, false},
      {"resnet layer4 fwd (512x512x4608)", 512, 512, 4608, false, false},
      {"resnet layer4 dW (512x4608x512)", 512, 4608, 512, false, true},
      {"resnet layer4 dX (4608x512x512)", 4608, 512, 512, true, false},
      {"gpt c_attn fwd (2048x768x256)", 2048, 768, 256, false, true},
      {"gpt c_fc dW (1024x256x2048)", 1024, 256, 2048, true, false},
      {"gpt c_proj dX (2048x1024x256)", 2048, 1024, 256, false, false},
      {"gpt attention QK^T (128x128x64)", 128, 128, 64, false, true},
  };
  if (quick) shapes.resize(4);
  const char *openblas = openblas_get_corename();
  std::printf("GEMM GFLOP/s, one thread (C = A B, row-major; OpenBLAS core: %s)\n\n", openblas);
  std::printf("%-34s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n", "shape (m x n x k)", "openblas", "fp32",
              "fp32", "bf16", "bf16", "bf16", "bf16", "fp16", "fp16");
  std::printf("%-34s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n", "", "sgemm", "portable", "avx512",
              "portable", "avx512", "avx512f", "amx", "portable", "avx512");
  const Precision f32 = Precision::kF32, bf16 = Precision::kBF16, f16 = Precision::kF16;
  const struct {
    Precision p;
    Kernel k;
  } columns[] = {{f32, Kernel::kOpenBlas},  {f32, Kernel::kPortable}, {f32, Kernel::kAvx512},
                 {bf16, Kernel::kPortable}, {bf16, Kernel::kAvx512},  {bf16, Kernel::kAvx512F},
                 {bf16, Kernel::kAmx},      {f16, Kernel::kPortable}, {f16, Kernel::kAvx512}};
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
    std::printf("%-34s", s.what);
    for (const auto &col : columns) {
      const Kernel before = dpt::gemm::kernel(col.p);
      const bool portable_big = col.k == Kernel::kPortable && double(s.m) * s.n * s.k > 3e8;
      if (portable_big || !dpt::gemm::set_kernel(col.p, col.k)) {
        std::printf(" %10s", "-");
        continue;
      }
      const double t = seconds_of(col.p, s, a, b, c);
      std::printf(" %10.1f", 2.0 * double(s.m) * s.n * s.k / t / 1e9);
      std::fflush(stdout);
      dpt::gemm::set_kernel(col.p, before);
    }
    std::printf("\n");
  }
  std::printf(
      "\n(portable kernels skipped above 3e8 multiply-adds: they are the reference, not a fast path)\n");
  return 0;
}
