#include "backend/cpu/gemm/cpu_features.hpp"

#include <cpuid.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdint>
#include <cstring>

namespace dpt::gemm {

namespace {

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// Linux keeps AMX's 8 KiB of tile data off until a process asks (kernel 5.16 and later).
bool request_amx_tile_data() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    std::memcpy(f.vendor, &b, 4);
    std::memcpy(f.vendor + 4, &d, 4);
    std::memcpy(f.vendor + 8, &c, 4);
  }
  if (__get_cpuid_max(0, nullptr) < 7 || !__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c & bit_OSXSAVE) != 0, fma = (c & bit_FMA) != 0;
  if (!osxsave) return f;
  const uint64_t xcr0 = xgetbv0();
  // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM state saved by the OS.
  const bool avx512_state = (xcr0 & 0xE6) == 0xE6;
  const bool tile_state = (xcr0 & (uint64_t(3) << 17)) == (uint64_t(3) << 17);
  __cpuid_count(7, 0, a, b, c, d);
  const bool f_bw_dq_vl = (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512DQ) && (b & bit_AVX512VL);
  const bool amx_tile = (d & (1u << 24)) != 0, amx_bf16 = (d & (1u << 22)) != 0;
  const unsigned max_sub = a;
  f.avx512 = avx512_state && fma && f_bw_dq_vl;
  if (f.avx512 && max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = (a & (1u << 5)) != 0;
  }
  f.amx_bf16 = f.avx512 && tile_state && amx_tile && amx_bf16 && request_amx_tile_data();
  return f;
}

}  // namespace

const CpuFeatures &cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace dpt::gemm
