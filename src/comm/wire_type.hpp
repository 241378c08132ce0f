// What the gradient all-reduce sends: float32, or every value rounded to a 16-bit type (half the bytes on
// a link, as NCCL's ncclBfloat16 / ncclHalf and DDP's compression hooks). Whatever it sends, the sums are
// float32: a 16-bit all-reduce rounds each contribution once and the finished sum once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/float16.hpp"

namespace dpt {

enum class WireType { kF32, kBF16, kF16 };

// x[0, n) rounded to what the wire carries (nothing for kF32).
void round_for_wire(float *x, size_t n, WireType wire);
// The 16-bit all-reduce across processes (World): x[0, n) as 16-bit values of the type, and back.
void to_wire16(const float *x, uint16_t *out, size_t n, WireType wire);
void from_wire16(const uint16_t *in, float *out, size_t n, WireType wire);
// out[i] = the type's rounding of the float32 sum over q < parts, in order, of parts' in[q stride + i].
void sum_wire16(const uint16_t *in, size_t parts, size_t stride, uint16_t *out, size_t n, WireType wire);
// The reductions' steps on a 16-bit wire, each contribution rounded where it is first read (no pass of its
// own): sum[i] = r(sum[i]) + r(add[i]), r rounding to the wire type for an operand that is a contribution
// (round_sum, round_add) and the identity for a partial sum.
void accumulate_for_wire(float *sum, const float *add, size_t n, bool round_sum, bool round_add,
                         WireType wire);
// The ring's finishing step, sum being this rank's contribution: sum[i] = copy[i] = round(round(sum[i]) +
// r(add[i])). copy may be add itself (two ranks: each element is read before it is written).
void finish_sums_for_wire(float *sum, float *copy, const float *add, size_t n, bool round_add, WireType wire);

}  // namespace dpt
