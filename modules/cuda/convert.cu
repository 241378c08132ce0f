#include "cuda/convert.hpp"

#include "cuda/float16.cuh"
#include "cuda/ops/launch.cuh"

namespace dpt::cuda {

namespace {

template <int Type>
__global__ void narrow_kernel(const float *x, uint16_t *out, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = to_16<Type>(x[i]);
}

template <int Type>
__global__ void widen_kernel(const uint16_t *in, float *x, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] = from_16<Type>(in[i]);
}

template <int Type>
__global__ void round_kernel(const float *x, float *out, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = round_16<Type>(x[i]);
}

const char *dtype_name(int32_t dtype) {
  switch (dtype) {
    case DPT_DTYPE_F32:
      return "f32";
    case DPT_DTYPE_BF16:
      return "bf16";
    case DPT_DTYPE_F16:
      return "f16";
    default:
      return "unknown";
  }
}

}  // namespace

int launch_narrow(dpt_backend_context &c, int32_t dtype, const float *x, uint16_t *out, size_t count,
                  const Error &e) {
  if (count == 0) return 0;
  if (dtype == DPT_DTYPE_BF16)
    narrow_kernel<DPT_DTYPE_BF16><<<grid_for(count), kOpThreads, 0, c.stream>>>(x, out, count);
  else
    narrow_kernel<DPT_DTYPE_F16><<<grid_for(count), kOpThreads, 0, c.stream>>>(x, out, count);
  return check_launch(c, "16-bit narrowing kernel", e);
}

int launch_widen(dpt_backend_context &c, int32_t dtype, const uint16_t *in, float *x, size_t count,
                 const Error &e) {
  if (count == 0) return 0;
  if (dtype == DPT_DTYPE_BF16)
    widen_kernel<DPT_DTYPE_BF16><<<grid_for(count), kOpThreads, 0, c.stream>>>(in, x, count);
  else
    widen_kernel<DPT_DTYPE_F16><<<grid_for(count), kOpThreads, 0, c.stream>>>(in, x, count);
  return check_launch(c, "16-bit widening kernel", e);
}

int launch_round(dpt_backend_context &c, int32_t dtype, const float *x, float *out, size_t count,
                 const Error &e) {
  if (count == 0) return 0;
  if (dtype == DPT_DTYPE_BF16)
    round_kernel<DPT_DTYPE_BF16><<<grid_for(count), kOpThreads, 0, c.stream>>>(x, out, count);
  else
    round_kernel<DPT_DTYPE_F16><<<grid_for(count), kOpThreads, 0, c.stream>>>(x, out, count);
  return check_launch(c, "16-bit rounding kernel", e);
}

int convert(dpt_backend_context *ctx, void *dst, int32_t dst_dtype, const void *src, int32_t src_dtype,
            size_t count, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "convert", [&](dpt_backend_context &c) {
    const bool narrow = src_dtype == DPT_DTYPE_F32 && is_16_bit(dst_dtype);
    const bool widen = is_16_bit(src_dtype) && dst_dtype == DPT_DTYPE_F32;
    if (!narrow && !widen)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: convert: %s to %s (float32 to bfloat16 or float16, or back)", c.ordinal,
                    dtype_name(src_dtype), dtype_name(dst_dtype));
    if (count == 0) return 0;
    if (dst == nullptr || src == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: convert: NULL %s", c.ordinal,
                    dst == nullptr ? "destination" : "source");
    return narrow ? launch_narrow(c, dst_dtype, static_cast<const float *>(src), static_cast<uint16_t *>(dst),
                                  count, e)
                  : launch_widen(c, src_dtype, static_cast<const uint16_t *>(src), static_cast<float *>(dst),
                                 count, e);
  });
}

}  // namespace dpt::cuda
