// Device functions of the module's 16-bit values (the all-reduce wire, the matrix products' 16-bit inputs,
// the 16-bit activation copies): a float32 value rounded to bfloat16 or IEEE float16 and back. Bit for bit
// the core's to_bf16 / to_f16 / from_bf16 / from_f16 (src/core/float16.hpp; the module shares no code with
// the core, so the rules are restated here): to nearest even by CUDA's __float2bfloat16_rn / __float2half_rn,
// with the core's conventions made explicit where CUDA's differ: bfloat16 takes a float32 subnormal to a zero
// of its sign (as AVX512_BF16 and the CPU kernels do), and a NaN becomes the quiet NaN the core makes (its
// top payload bits kept) instead of CUDA's canonical one. float16 keeps its subnormals and takes 65520 and
// beyond to infinity (IEEE).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "interface/op_call.h"

namespace dpt::cuda {

template <int Type>
__device__ __forceinline__ uint16_t to_16(float x);

template <>
__device__ __forceinline__ uint16_t to_16<DPT_DTYPE_BF16>(float x) {
  const uint32_t u = __float_as_uint(x);
  if ((u & 0x7F800000u) == 0) return uint16_t((u >> 16) & 0x8000u);           // zero or subnormal
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x0040u);  // NaN, quieted
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

template <>
__device__ __forceinline__ uint16_t to_16<DPT_DTYPE_F16>(float x) {
  const uint32_t u = __float_as_uint(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)  // NaN, quieted
    return uint16_t(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
  return __half_as_ushort(__float2half_rn(x));
}

template <int Type>
__device__ __forceinline__ float from_16(uint16_t h);

template <>
__device__ __forceinline__ float from_16<DPT_DTYPE_BF16>(uint16_t h) {
  return __uint_as_float(uint32_t(h) << 16);
}

template <>
__device__ __forceinline__ float from_16<DPT_DTYPE_F16>(uint16_t h) {
  if ((h & 0x7FFFu) > 0x7C00u)  // NaN: quieted, payload kept (the core's from_f16)
    return __uint_as_float((uint32_t(h & 0x8000u) << 16) | 0x7FC00000u | (uint32_t(h & 0x3FFu) << 13));
  return __half2float(__ushort_as_half(h));
}

// x rounded to the 16-bit Type, as a float.
template <int Type>
__device__ __forceinline__ float round_16(float x) {
  return from_16<Type>(to_16<Type>(x));
}

}  // namespace dpt::cuda
