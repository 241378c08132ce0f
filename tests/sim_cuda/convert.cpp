// convert: float32 to bfloat16 / float16 and back, on the context's queue, with the core's roundings
// (src/core/float16.hpp, which the real module's float16.cuh restates), so the simulator's 16-bit
// activation copies are the CPU devices' bits.
#include <cstdint>

#include "core/float16.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

bool is_16_bit(int32_t dtype) {
  return dtype == DPT_DTYPE_BF16 || dtype == DPT_DTYPE_F16;
}

}  // namespace

int convert(dpt_backend_context *ctx, void *dst, int32_t dst_dtype, const void *src, int32_t src_dtype,
            size_t count, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "convert";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    const bool narrow = src_dtype == DPT_DTYPE_F32 && is_16_bit(dst_dtype);
    const bool widen = is_16_bit(src_dtype) && dst_dtype == DPT_DTYPE_F32;
    if (!narrow && !widen)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: convert: dtype %d to %d (float32 to bfloat16 or float16, or back)", c.ordinal,
                    int(src_dtype), int(dst_dtype));
    if (count == 0) return 0;
    size_t halves = 0;
    if (!checked_bytes(count, sizeof(uint16_t), halves))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: convert: %zu values overflow", c.ordinal,
                    count);
    Span f, h;
    if (int rc = floats(c, call, narrow ? "src" : "dst", narrow ? src : dst, count, false, f, e)) return rc;
    if (int rc = resolve(c, call, narrow ? "dst" : "src", narrow ? dst : src, halves, alignof(uint16_t),
                         Where::kContextDevice, false, h, e))
      return rc;
    const bool bf16 = (narrow ? dst_dtype : src_dtype) == DPT_DTYPE_BF16;
    return enqueue(c, call, {f, h}, [=] {
      uint16_t *half = reinterpret_cast<uint16_t *>(h.host);
      float *x = f.f();
      for (size_t i = 0; i < count; ++i) {
        if (narrow)
          half[i] = bf16 ? dpt::to_bf16(x[i]) : dpt::to_f16(x[i]);
        else
          x[i] = bf16 ? dpt::from_bf16(half[i]) : dpt::from_f16(half[i]);
      }
    });
  });
}

}  // namespace dpt_sim
