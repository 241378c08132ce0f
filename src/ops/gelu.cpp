// "gelu": ints[0] = 0 exact (erf), 1 the tanh approximation.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  DPT_REQUIRE(a.ints[0] == 0 || a.ints[0] == 1, DPT_ERROR_INVALID_ARGUMENT,
              "gelu approximation must be 0 (none) or 1 (tanh)");
  NodeLayout l;
  l.output = inputs[0];
  return l;
}

std::string describe(const OpAttrs &a) {
  return a.ints[0] != 0 ? "gelu:tanh" : "gelu";
}

}  // namespace

extern const OpDef kGeluOp = {"gelu", 1, 1, layout, describe, {"approximation"}, {}};

}  // namespace dpt
