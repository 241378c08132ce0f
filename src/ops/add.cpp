// "add": y = x0 + x1 of two tensors of one shape (a residual join).
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &) {
  DPT_REQUIRE(inputs[0] == inputs[1], DPT_ERROR_INVALID_ARGUMENT,
              "add needs two tensors of one shape, got " + inputs[0].text() + " and " + inputs[1].text());
  NodeLayout l;
  l.output = inputs[0];
  return l;
}

std::string describe(const OpAttrs &) {
  return "add";
}

}  // namespace

extern const OpDef kAddOp = {"add", 2, 2, layout, describe, {}, {}};

}  // namespace dpt
