// What this CPU can run, read once from CPUID and XGETBV: the instruction sets the GEMM kernels use, each
// counted only when the operating system also saves its registers (AVX-512 state) and, for AMX, has
// granted this process the tile data (Linux's arch_prctl ARCH_REQ_XCOMP_PERM, asked once here).
#pragma once

namespace dpt::gemm {

struct CpuFeatures {
  bool avx512 = false;       // AVX-512 F, BW, DQ, VL with FMA: the fp32 kernel
  bool avx512_bf16 = false;  // AVX512_BF16: VDPBF16PS
  bool amx_bf16 = false;     // AMX-TILE and AMX-BF16, with the tile data granted
  char vendor[13] = {};      // CPUID's vendor string: "GenuineIntel", "AuthenticAMD"
};

const CpuFeatures &cpu_features();

}  // namespace dpt::gemm
