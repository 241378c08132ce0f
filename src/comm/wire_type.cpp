#include "comm/wire_type.hpp"

namespace dpt {

void round_for_wire(float *x, size_t n, WireType wire) {
  if (wire == WireType::kF32) return;
  with_wire_rounding(wire, [&](auto round) {
    for (size_t i = 0; i < n; ++i) x[i] = round(x[i]);
  });
}

}  // namespace dpt
