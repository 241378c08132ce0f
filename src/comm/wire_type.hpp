// What the gradient all-reduce sends: float32, or every value rounded to a 16-bit type (half the bytes on
// a link, as NCCL's ncclBfloat16 / ncclHalf and DDP's compression hooks). Whatever it sends, the sums are
// float32: a 16-bit all-reduce rounds each contribution once and the finished sum once.
#pragma once

#include <cstddef>

#include "core/float16.hpp"

namespace dpt {

enum class WireType { kF32, kBF16, kF16 };

// x[0, n) rounded to what the wire carries (nothing for kF32).
void round_for_wire(float *x, size_t n, WireType wire);

// Calls body(round), round being a function object float -> float for the wire type, so that a loop
// inside body is compiled once per type with the rounding inlined.
template <typename Body>
void with_wire_rounding(WireType wire, Body &&body) {
  switch (wire) {
    case WireType::kF32:
      body([](float v) { return v; });
      return;
    case WireType::kBF16:
      body([](float v) { return round_to_bf16(v); });
      return;
    case WireType::kF16:
      body([](float v) { return round_to_f16(v); });
      return;
  }
}

}  // namespace dpt
