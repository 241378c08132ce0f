// "flatten": c x h x w -> chw, a view of its input (no kernel runs).
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &) {
  NodeLayout l;
  l.output = Shape{inputs[0].size()};
  l.view = true;
  return l;
}

std::string describe(const OpAttrs &) {
  return "flatten";
}

}  // namespace

extern const OpDef kFlattenOp = {"flatten", 1, 1, layout, describe, {}, {}};

}  // namespace dpt
