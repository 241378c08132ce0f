// Flush-to-zero and denormals-are-zero while it lives: what VDPBF16PS does without reading MXCSR (subnormal
// inputs, the accumulator's too, read as zero; subnormal results flushed), for the kernels that compute its
// bits with fused multiply-adds (the portable one and the AVX-512F one).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace dpt::gemm {

class FlushSubnormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  FlushSubnormals() : saved_(_mm_getcsr()) {
    _mm_setcsr(saved_ | 0x8040u);
  }
  ~FlushSubnormals() {
    _mm_setcsr(saved_);
  }

 private:
  unsigned saved_;
#endif
};

}  // namespace dpt::gemm
