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

DPT_CLONES void accumulate_for_wire(float *sum, const float *add, size_t n, bool round_sum, bool round_add,
                                    WireType wire) {
  // One loop per case the reductions use (no branch inside, so that each vectorizes); round_sum and
  // round_add are never both false (that is the float32 addition).
  if (wire == WireType::kBF16) {
    if (round_sum && round_add)
      for (size_t i = 0; i < n; ++i) sum[i] = round_to_bf16(sum[i]) + round_to_bf16(add[i]);
    else if (round_sum)
      for (size_t i = 0; i < n; ++i) sum[i] = round_to_bf16(sum[i]) + add[i];
    else
      for (size_t i = 0; i < n; ++i) sum[i] += round_to_bf16(add[i]);
  } else {
    if (round_sum && round_add)
      for (size_t i = 0; i < n; ++i) sum[i] = round_to_f16(sum[i]) + round_to_f16(add[i]);
    else if (round_sum)
      for (size_t i = 0; i < n; ++i) sum[i] = round_to_f16(sum[i]) + add[i];
    else
      for (size_t i = 0; i < n; ++i) sum[i] += round_to_f16(add[i]);
  }
}

namespace {

// finish_sums_for_wire's loop for one rounding and one choice of add: fixed at compile time, so that the
// loop has no branch and vectorizes.
template <bool kRoundAdd, typename Round>
inline void finish(float *sum, float *copy, const float *add, size_t n, Round round) {
  for (size_t i = 0; i < n; ++i) {
    const float v = round(round(sum[i]) + (kRoundAdd ? round(add[i]) : add[i]));
    sum[i] = v;
    copy[i] = v;
  }
}

template <typename Round>
inline void finish_with(float *sum, float *copy, const float *add, size_t n, bool round_add, Round round) {
  if (round_add)
    finish<true>(sum, copy, add, n, round);
  else
    finish<false>(sum, copy, add, n, round);
}

}  // namespace

DPT_CLONES void finish_sums_for_wire(float *sum, float *copy, const float *add, size_t n, bool round_add,
                                     WireType wire) {
  if (wire == WireType::kBF16)
    finish_with(sum, copy, add, n, round_add, [](float v) { return round_to_bf16(v); });
  else
    finish_with(sum, copy, add, n, round_add, [](float v) { return round_to_f16(v); });
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
