// dptrain's own GEMM for the CPU kernels: C = alpha * op(A) op(B) + beta * C, row-major, float32 in and
// out, with the products' inputs in float32 or rounded to bfloat16 or to float16 (the mixed-precision
// policy: 16-bit inputs, float32 accumulation). BLIS's structure: blocks of A and B packed into panels (the
// rounding to 16 bits happens there), a micro-kernel per instruction set over one MR x NR tile of C.
//
// Bits: each element of C is summed over k in the same order whatever m and n are (the k blocks in order,
// each from zero, added into C), so the result of a column does not depend on how many columns share the
// call (a convolution's grouped samples, a device's slice). Per precision, the kernels that give the same
// bits as the portable C++ one are marked below; the portable one runs anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt::gemm {

enum class Precision {
  kF32,   // float32 products, fused multiply-add accumulation
  kBF16,  // inputs rounded to bfloat16 (nearest even, subnormals to zero), float32 accumulation
  kF16,   // inputs rounded to IEEE float16 (nearest even, subnormals kept, beyond 65504 infinite), float32
          // accumulation by fused multiply-adds (a product of two float16 values is exact in float32)
};
constexpr int kPrecisionCount = 3;

enum class Kernel {
  kPortable,  // C++ on any x86-64: the reference bits of each precision
  kAvx512,    // fp32: AVX-512 FMA; bf16: AVX512_BF16's VDPBF16PS; fp16: float16 panels widened by
              // VCVTPH2PS, AVX-512 FMA. The portable kernel's bits (for bf16: VDPBF16PS as Intel defines it,
              // verified on Intel; test_gemm counts differences elsewhere: none on AMD Zen 4).
  kAvx512F,   // bf16 only, for AVX-512 CPUs without AVX512_BF16: VDPBF16PS's two roundings per pair of k as
              // AVX-512 fused multiply-adds under FTZ/DAZ. The portable kernel's bits.
  kAmx,       // bf16 only: AMX tiles (Intel, 4th generation Xeon and later). Its own bits (the tile unit
              // sums inside an instruction in an order of its own), within bfloat16 rounding of the others.
  kOpenBlas,  // fp32 only: OpenBLAS's sgemm (the choice on CPUs without AVX-512); absent from a build
              // without OpenBLAS (DPTRAIN_OPENBLAS=OFF, the Windows build), which runs kPortable there
};

// The kernel gemm() uses for p: the fastest this CPU runs, unless DPTRAIN_GEMM_KERNEL (portable, avx512,
// avx512f, amx, openblas) or set_kernel() names one it can run for p.
Kernel kernel(Precision p);
// Pins the kernel of p for this process; false (nothing changes) when the CPU cannot run k or k does not
// compute p. For tests and benchmarks.
bool set_kernel(Precision p, Kernel k);
// Can this CPU run k for p?
bool available(Precision p, Kernel k);
const char *kernel_name(Kernel k);

void gemm(Precision p, bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
          size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

// gemm(kBF16, ...) with operands stored as bfloat16 values (core/float16.hpp's bits). kBF16 rounds its
// float32 inputs with to_bf16, which leaves a bfloat16 value as it is, so operands stored rounded give the
// bits of their float32 originals, reading half the bytes (Winograd's transformed inputs and output
// gradients, written by one pass and read by the next GEMM).
void gemm_bf16(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
               size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc);

// op(A) packed once for several products (a Winograd layer's transformed weights meet every group of
// samples): the panels gemm() packs for each product, for all of k, behind a header naming the kernel
// that packed them (the one kernel(p) names when the packing starts; gemm_packed_a multiplies with that
// kernel). Filled in blocks of rows, so that a caller can produce op(A) a few rows at a time and never
// hold it whole in float32. gemm_packed_a gives gemm()'s bits for the same operands.
//
// Bytes of a packed m x k op(A), enough for any kernel this process may pick for p (set_kernel).
size_t packed_a_bytes(Precision p, size_t m, size_t k);
// The blocks of rows pack_a_rows takes start at multiples of this (the panel height of the kernel p runs
// on now: at most 32).
size_t packed_a_row_unit(Precision p);
// Writes the header of an m x k op(A) at packed (packed_a_bytes(p, m, k) bytes, 64-byte aligned); trans_a:
// the rows will come transposed (op(A) = A^T).
void begin_packed_a(Precision p, bool trans_a, size_t m, size_t k, void *packed);
// Packs rows [i0, i0 + rows) of op(A): rows is a multiple of packed_a_row_unit() unless the block ends at
// m; a holds those rows only (its row 0 is op(A)'s row i0), with leading dimension lda.
void pack_a_rows(void *packed, const float *a, size_t lda, size_t i0, size_t rows);
// C = alpha * op(A) op(B) + beta * C with a packed op(A) (m x k as packed).
void gemm_packed_a(const void *packed, bool trans_b, size_t n, float alpha, const float *b, size_t ldb,
                   float beta, float *c, size_t ldc);
// The same with B stored as bfloat16 values (as gemm_bf16), for an op(A) packed for kBF16
// (std::invalid_argument otherwise).
void gemm_packed_a(const void *packed, bool trans_b, size_t n, float alpha, const uint16_t *b, size_t ldb,
                   float beta, float *c, size_t ldc);

}  // namespace dpt::gemm
