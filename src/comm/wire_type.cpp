#include "comm/wire_type.hpp"

#include "core/target_clones.hpp"

namespace dpt {

// Both run over whole gradients: DPT_CLONES vectorizes them where the CPU has AVX2 or AVX-512 (the loops
// are written out per type, without lambdas, so that each clone holds them).
DPT_CLONES void round_for_wire(float *x, size_t n, WireType wire) {
  if (wire == WireType::kBF16)
    for (size_t i = 0; i < n; ++i) x[i] = round_to_bf16(x[i]);
  else if (wire == WireType::kF16)
    for (size_t i = 0; i < n; ++i) x[i] = round_to_f16(x[i]);
}

DPT_CLONES void finish_sums_for_wire(float *sum, float *copy, const float *add, size_t n, WireType wire) {
  if (wire == WireType::kBF16) {
    for (size_t i = 0; i < n; ++i) {
      const float v = round_to_bf16(sum[i] + add[i]);
      sum[i] = v;
      copy[i] = v;
    }
  } else if (wire == WireType::kF16) {
    for (size_t i = 0; i < n; ++i) {
      const float v = round_to_f16(sum[i] + add[i]);
      sum[i] = v;
      copy[i] = v;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float v = sum[i] + add[i];
      sum[i] = v;
      copy[i] = v;
    }
  }
}

DPT_CLONES void to_wire16(const float *x, uint16_t *out, size_t n, WireType wire) {
  if (wire == WireType::kBF16)
    for (size_t i = 0; i < n; ++i) out[i] = to_bf16(x[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = to_f16(x[i]);
}

DPT_CLONES void from_wire16(const uint16_t *in, float *out, size_t n, WireType wire) {
  if (wire == WireType::kBF16)
    for (size_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = from_f16(in[i]);
}

DPT_CLONES void sum_wire16(const uint16_t *in, size_t parts, size_t stride, uint16_t *out, size_t n,
                           WireType wire) {
  const bool bf16 = wire == WireType::kBF16;
  for (size_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (size_t q = 0; q < parts; ++q) {
      const uint16_t h = in[q * stride + i];
      sum += bf16 ? from_bf16(h) : from_f16(h);
    }
    out[i] = bf16 ? to_bf16(sum) : to_f16(sum);
  }
}

}  // namespace dpt
