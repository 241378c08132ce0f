#include "backend/cpu/gemm/gemm.hpp"

#if DPTRAIN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include <pthread.h>

#include "backend/cpu/gemm/cpu_features.hpp"
#include "backend/cpu/gemm/kernels.hpp"
#include "core/float16.hpp"
#include "core/target_clones.hpp"

namespace dpt::gemm {

namespace {

// Blocks of C: kMC rows of packed A (a multiple of every mr) and kNC columns of packed B per pass.
constexpr size_t kMC = 96, kNC = 1024;
// The largest packed blocks any kernel makes: kc x element bytes is 1 KiB for each, but for the AVX-512F
// bf16 kernel's A (float32 elements over the bfloat16 kernels' kc of 512, whose k blocks it must share to
// give their bits).
constexpr size_t kKcBytes = 1024, kKcBytesA = 2048, kMaxTile = 32;
constexpr size_t kPackedA = kMC * kKcBytesA, kPackedB = kNC * kKcBytes;
// A bfloat16 operand is widened to float32 (exactly) a strip of whole panels at a time, kc long, before its
// kernel packs it: about this many elements, so that the strip is still in the cache when it is packed.
constexpr size_t kStripElements = 64 * 512;
constexpr size_t kWidened = kStripElements * sizeof(float);

const KernelDef *definition(Precision p, Kernel k) {
  if (p == Precision::kF32)
    return k == Kernel::kPortable ? &kF32Portable : k == Kernel::kAvx512 ? &kF32Avx512 : nullptr;
  if (p == Precision::kF16)
    return k == Kernel::kPortable ? &kF16Portable : k == Kernel::kAvx512 ? &kF16Avx512 : nullptr;
  return k == Kernel::kPortable  ? &kBF16Portable
         : k == Kernel::kAvx512  ? &kBF16Avx512
         : k == Kernel::kAvx512F ? &kBF16Avx512F
         : k == Kernel::kAmx     ? &kBF16Amx
                                 : nullptr;
}

Kernel fastest(Precision p) {
  const CpuFeatures &f = cpu_features();
  if (p == Precision::kF32)
    return f.avx512 ? Kernel::kAvx512 : DPTRAIN_HAVE_OPENBLAS ? Kernel::kOpenBlas : Kernel::kPortable;
  if (p == Precision::kF16) return f.avx512 ? Kernel::kAvx512 : Kernel::kPortable;
  return f.amx_bf16      ? Kernel::kAmx
         : f.avx512_bf16 ? Kernel::kAvx512
         : f.avx512      ? Kernel::kAvx512F
                         : Kernel::kPortable;
}

// -1: not pinned; else a Kernel.
std::atomic<int> pinned[kPrecisionCount] = {-1, -1, -1};

int from_environment(Precision p) {
  const char *name = std::getenv("DPTRAIN_GEMM_KERNEL");
  if (name == nullptr) return -1;
  for (Kernel k : {Kernel::kPortable, Kernel::kAvx512, Kernel::kAvx512F, Kernel::kAmx, Kernel::kOpenBlas})
    if (std::strcmp(name, kernel_name(k)) == 0 && available(p, k)) return int(k);
  return -1;
}

// Packed panels of one thread (each device has its own worker thread), allocated once at their largest,
// 64-byte aligned within a malloc'ed block that a pthread key frees as the thread exits. Not a thread_local
// with a destructor: under mingw-w64 the emulated thread-local storage can be released before such
// destructors run, which then read freed memory (worker threads crashed at exit now and then, under Wine).
pthread_key_t workspace_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k;
    if (pthread_key_create(&k, [](void *block) { std::free(block); }) != 0) throw std::bad_alloc();
    return k;
  }();
  return key;
}

thread_local unsigned char *workspace = nullptr;  // inside the block the key holds; trivially destroyed

unsigned char *thread_workspace() {
  if (workspace == nullptr) {
    void *block = std::malloc(kPackedA + kPackedB + kWidened + 64);
    if (block == nullptr) throw std::bad_alloc();
    if (pthread_setspecific(workspace_key(), block) != 0) {
      std::free(block);
      throw std::bad_alloc();
    }
    workspace = static_cast<unsigned char *>(block) + (64 - reinterpret_cast<uintptr_t>(block) % 64);
  }
  return workspace;
}

// C = beta * C (k == 0: no products).
void scale(size_t m, size_t n, float beta, float *c, size_t ldc) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

// One mr x nr tile of C, or the rows x cols corner of one at an edge (through a full tile on the side).
void run_tile(const KernelDef &d, size_t kcp, const void *ap, const void *bp, float *c, size_t ldc,
              size_t rows, size_t cols, float alpha, float beta) {
  if (rows == d.mr && cols == d.nr) {
    d.tile(kcp, ap, bp, c, ldc, alpha, beta);
    return;
  }
  alignas(64) float part[kMaxTile * kMaxTile];
  if (beta != 0.0f)
    for (size_t i = 0; i < rows; ++i) std::memcpy(part + i * d.nr, c + i * ldc, cols * sizeof(float));
  d.tile(kcp, ap, bp, part, d.nr, alpha, beta);
  for (size_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc, part + i * d.nr, cols * sizeof(float));
}

// A whole packed op(A) (gemm_packed_a): its k blocks one after the other, each ceil(m / mr) panels of
// padded(kc) x mr elements, after a header.
struct PackedHeader {
  uint32_t precision, kernel, trans_a;
  uint64_t m, k;
};
constexpr size_t kHeaderBytes = 64;
static_assert(sizeof(PackedHeader) <= kHeaderBytes);

size_t panel_count(const KernelDef &d, size_t m) {
  return (m + d.mr - 1) / d.mr;
}

// Where the panels of the k block starting at pc begin (every block before it is a whole d.kc long).
size_t block_offset(const KernelDef &d, size_t m, size_t pc) {
  return pc / d.kc * panel_count(d, m) * d.mr * d.kc * d.a_bytes;
}

// dst [rows x cols, row stride cols] = the bfloat16 block at src (row stride ld) in float32.
DPT_CLONES void widen(const uint16_t *src, size_t ld, size_t rows, size_t cols, float *dst) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) dst[r * cols + c] = from_bf16(src[r * ld + c]);
}

// d.pack_a of rows [i0, i0 + rows) and k [p0, p0 + kc) of op(A). A bfloat16 operand, for a kernel whose
// packers read only float32, goes through `widened` a strip of whole panels at a time: the packers round
// float32 to bfloat16 (to_bf16), so the panels are those of the values widened.
void pack_a_from(const KernelDef &d, const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc,
                 unsigned char *out, float *widened) {
  if (a.bf16 == nullptr || d.reads_bf16) {
    d.pack_a(a, i0, rows, p0, kc, out);
    return;
  }
  const size_t strip = kStripElements / d.kc / d.mr * d.mr;
  for (size_t i = 0; i < rows; i += strip) {
    const size_t h = std::min(strip, rows - i);
    if (a.trans)
      widen(a.bf16 + p0 * a.ld + i0 + i, a.ld, kc, h, widened);
    else
      widen(a.bf16 + (i0 + i) * a.ld + p0, a.ld, h, kc, widened);
    d.pack_a(Operand{widened, a.trans ? h : kc, a.trans}, 0, h, 0, kc,
             out + i / d.mr * padded(d, kc) * d.mr * d.a_bytes);
  }
}

// d.pack_b of k [p0, p0 + kc) and columns [j0, j0 + cols) of op(B), as pack_a_from.
void pack_b_from(const KernelDef &d, const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols,
                 unsigned char *out, float *widened) {
  if (b.bf16 == nullptr || d.reads_bf16) {
    d.pack_b(b, p0, kc, j0, cols, out);
    return;
  }
  const size_t strip = kStripElements / d.kc / d.nr * d.nr;
  for (size_t j = 0; j < cols; j += strip) {
    const size_t w = std::min(strip, cols - j);
    if (b.trans)
      widen(b.bf16 + (j0 + j) * b.ld + p0, b.ld, w, kc, widened);
    else
      widen(b.bf16 + p0 * b.ld + j0 + j, b.ld, kc, w, widened);
    d.pack_b(Operand{widened, b.trans ? kc : w, b.trans}, 0, kc, 0, w,
             out + j / d.nr * padded(d, kc) * d.nr * d.b_bytes);
  }
}

// prepacked_a: a whole packed op(A)'s panels (after the header), or nullptr to pack A block by block.
void blocked(const KernelDef &d, const Operand &a, const unsigned char *prepacked_a, const Operand &b,
             size_t m, size_t n, size_t k, float alpha, float beta, float *c, size_t ldc) {
  unsigned char *packed_a = thread_workspace(), *packed_b = packed_a + kPackedA;
  float *widened = reinterpret_cast<float *>(packed_b + kPackedB);
  if (d.begin != nullptr) d.begin();
  for (size_t jc = 0; jc < n; jc += kNC) {
    const size_t nc = std::min(kNC, n - jc);
    for (size_t pc = 0; pc < k; pc += d.kc) {
      const size_t kc = std::min(d.kc, k - pc), kcp = padded(d, kc);
      pack_b_from(d, b, pc, kc, jc, nc, packed_b, widened);
      const float beta_block = pc == 0 ? beta : 1.0f;  // later k blocks add into C
      for (size_t ic = 0; ic < m; ic += kMC) {
        const size_t mc = std::min(kMC, m - ic);
        const unsigned char *block_a = packed_a;
        if (prepacked_a != nullptr)
          block_a = prepacked_a + block_offset(d, m, pc) + ic * kcp * d.a_bytes;
        else
          pack_a_from(d, a, ic, mc, pc, kc, packed_a, widened);
        for (size_t jr = 0; jr < nc; jr += d.nr)
          for (size_t ir = 0; ir < mc; ir += d.mr)
            run_tile(d, kcp, block_a + ir * kcp * d.a_bytes, packed_b + jr * kcp * d.b_bytes,
                     c + (ic + ir) * ldc + jc + jr, ldc, std::min(d.mr, mc - ir), std::min(d.nr, nc - jr),
                     alpha, beta_block);
      }
    }
  }
  if (d.end != nullptr) d.end();
}

}  // namespace

const char *kernel_name(Kernel k) {
  switch (k) {
    case Kernel::kPortable:
      return "portable";
    case Kernel::kAvx512:
      return "avx512";
    case Kernel::kAvx512F:
      return "avx512f";
    case Kernel::kAmx:
      return "amx";
    case Kernel::kOpenBlas:
      return "openblas";
  }
  return "?";
}

bool available(Precision p, Kernel k) {
  const CpuFeatures &f = cpu_features();
  switch (k) {
    case Kernel::kPortable:
      return true;
    case Kernel::kAvx512:
      return p == Precision::kBF16 ? f.avx512_bf16 : f.avx512;
    case Kernel::kAvx512F:
      return p == Precision::kBF16 && f.avx512;
    case Kernel::kAmx:
      return p == Precision::kBF16 && f.amx_bf16;
    case Kernel::kOpenBlas:
      return DPTRAIN_HAVE_OPENBLAS && p == Precision::kF32;
  }
  return false;
}

Kernel kernel(Precision p) {
  static const int environment[kPrecisionCount] = {from_environment(Precision::kF32),
                                                   from_environment(Precision::kBF16),
                                                   from_environment(Precision::kF16)};
  const int chosen = pinned[int(p)].load(std::memory_order_relaxed);
  if (chosen >= 0) return Kernel(chosen);
  const int env = environment[int(p)];
  return env >= 0 ? Kernel(env) : fastest(p);
}

bool set_kernel(Precision p, Kernel k) {
  if (!available(p, k)) return false;
  pinned[int(p)].store(int(k), std::memory_order_relaxed);
  return true;
}

void gemm(Precision p, bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
          size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc) {
  if (m == 0 || n == 0) return;
  const Kernel chosen = kernel(p);
#if DPTRAIN_HAVE_OPENBLAS
  if (chosen == Kernel::kOpenBlas) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c, int(ldc));
    return;
  }
#endif
  if (k == 0) {
    scale(m, n, beta, c, ldc);
    return;
  }
  blocked(*definition(p, chosen), Operand{a, lda, trans_a}, nullptr, Operand{b, ldb, trans_b}, m, n, k, alpha,
          beta, c, ldc);
}

void gemm_bf16(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const uint16_t *a,
               size_t lda, const uint16_t *b, size_t ldb, float beta, float *c, size_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    scale(m, n, beta, c, ldc);
    return;
  }
  blocked(*definition(Precision::kBF16, kernel(Precision::kBF16)), Operand{nullptr, lda, trans_a, a}, nullptr,
          Operand{nullptr, ldb, trans_b, b}, m, n, k, alpha, beta, c, ldc);
}

// OpenBLAS packs inside sgemm: its "packed" op(A) is A itself, m x k or (transposed) k x m, row-major, so
// that sgemm is called as gemm() calls it (OpenBLAS's bits depend on the transposition).
size_t packed_a_bytes(Precision p, size_t m, size_t k) {
  size_t most = kHeaderBytes + m * k * sizeof(float);  // OpenBLAS's
  for (Kernel chosen : {Kernel::kPortable, Kernel::kAvx512, Kernel::kAvx512F, Kernel::kAmx}) {
    const KernelDef *d = available(p, chosen) ? definition(p, chosen) : nullptr;
    if (d == nullptr) continue;
    const size_t last = k % d->kc == 0 ? (k > 0 ? d->kc : 0) : padded(*d, k % d->kc);
    const size_t elements_k = (k == 0 ? 0 : (k - 1) / d->kc * d->kc) + last;
    most = std::max(most, kHeaderBytes + panel_count(*d, m) * d->mr * elements_k * d->a_bytes);
  }
  return most;
}

size_t packed_a_row_unit(Precision p) {
  const Kernel chosen = kernel(p);
  return chosen == Kernel::kOpenBlas ? 1 : definition(p, chosen)->mr;
}

void begin_packed_a(Precision p, bool trans_a, size_t m, size_t k, void *packed) {
  PackedHeader header{uint32_t(p), uint32_t(kernel(p)), trans_a, m, k};
  std::memcpy(packed, &header, sizeof header);
}

void pack_a_rows(void *packed, const float *a, size_t lda, size_t i0, size_t rows) {
  PackedHeader h;
  std::memcpy(&h, packed, sizeof h);
  unsigned char *panels = static_cast<unsigned char *>(packed) + kHeaderBytes;
  const Operand rows_of_a{a, lda, h.trans_a != 0};
  if (Kernel(h.kernel) == Kernel::kOpenBlas) {
    float *out = reinterpret_cast<float *>(panels);
    for (size_t r = 0; r < rows; ++r)
      for (size_t q = 0; q < h.k; ++q)
        (h.trans_a ? out[q * h.m + i0 + r] : out[(i0 + r) * h.k + q]) = rows_of_a.at(r, q);
    return;
  }
  const KernelDef &d = *definition(Precision(h.precision), Kernel(h.kernel));
  for (size_t pc = 0; pc < h.k; pc += d.kc) {
    const size_t kc = std::min(d.kc, size_t(h.k) - pc);
    d.pack_a(rows_of_a, 0, rows, pc, kc, panels + block_offset(d, h.m, pc) + i0 * padded(d, kc) * d.a_bytes);
  }
}

namespace {

void packed_a_times(const void *packed, const Operand &b, size_t n, float alpha, float beta, float *c,
                    size_t ldc) {
  PackedHeader h;
  std::memcpy(&h, packed, sizeof h);
  const unsigned char *panels = static_cast<const unsigned char *>(packed) + kHeaderBytes;
  const size_t m = h.m, k = h.k;
  if (m == 0 || n == 0) return;
#if DPTRAIN_HAVE_OPENBLAS
  if (Kernel(h.kernel) == Kernel::kOpenBlas) {
    const size_t lda = std::max<size_t>(h.trans_a ? m : k, 1);
    cblas_sgemm(CblasRowMajor, h.trans_a ? CblasTrans : CblasNoTrans, b.trans ? CblasTrans : CblasNoTrans,
                int(m), int(n), int(k), alpha, reinterpret_cast<const float *>(panels), int(lda), b.data,
                int(b.ld), beta, c, int(ldc));
    return;
  }
#endif
  if (k == 0) {
    scale(m, n, beta, c, ldc);
    return;
  }
  blocked(*definition(Precision(h.precision), Kernel(h.kernel)), Operand{nullptr, 0, false}, panels, b, m, n,
          k, alpha, beta, c, ldc);
}

}  // namespace

void gemm_packed_a(const void *packed, bool trans_b, size_t n, float alpha, const float *b, size_t ldb,
                   float beta, float *c, size_t ldc) {
  packed_a_times(packed, Operand{b, ldb, trans_b}, n, alpha, beta, c, ldc);
}

void gemm_packed_a(const void *packed, bool trans_b, size_t n, float alpha, const uint16_t *b, size_t ldb,
                   float beta, float *c, size_t ldc) {
  PackedHeader h;
  std::memcpy(&h, packed, sizeof h);
  if (Precision(h.precision) != Precision::kBF16)
    throw std::invalid_argument("gemm_packed_a: a bfloat16 B needs an A packed for bfloat16 products");
  packed_a_times(packed, Operand{nullptr, ldb, trans_b, b}, n, alpha, beta, c, ldc);
}

}  // namespace dpt::gemm
