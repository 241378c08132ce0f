// Conversions between float32 and the 16-bit types on the device (float16.cuh: the core's roundings), each
// one kernel on the context's stream: the 16-bit inputs of matrix products (ops/matmul.cu), and the
// backend interface's `convert` (the executor's 16-bit activation copies). dtype: DPT_DTYPE_BF16 or
// DPT_DTYPE_F16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/context.hpp"

namespace dpt::cuda {

// True for DPT_DTYPE_BF16 and DPT_DTYPE_F16.
inline bool is_16_bit(int32_t dtype) {
  return dtype == DPT_DTYPE_BF16 || dtype == DPT_DTYPE_F16;
}

// out[i] = x[i] rounded to dtype (16-bit values).
int launch_narrow(dpt_backend_context &c, int32_t dtype, const float *x, uint16_t *out, size_t count,
                  const Error &e);
// x[i] = the float32 value of in[i] (exact).
int launch_widen(dpt_backend_context &c, int32_t dtype, const uint16_t *in, float *x, size_t count,
                 const Error &e);
// out[i] = x[i] rounded to dtype, as a float32 (out may be x).
int launch_round(dpt_backend_context &c, int32_t dtype, const float *x, float *out, size_t count,
                 const Error &e);

// Backend interface: convert.
int convert(dpt_backend_context *ctx, void *dst, int32_t dst_dtype, const void *src, int32_t src_dtype,
            size_t count, char *error, size_t error_size);

}  // namespace dpt::cuda
