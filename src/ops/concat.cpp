// "concat": 2 to 4 tensors stacked along dimension 0 (channels); their other dimensions must agree.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

Shape with_first(const Shape &s, size_t first) {
  switch (s.rank()) {
    case 1:
      return Shape{first};
    case 2:
      return Shape{first, s[1]};
    case 3:
      return Shape{first, s[1], s[2]};
    default:
      return Shape{first, s[1], s[2], s[3]};
  }
}

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &) {
  size_t channels = 0;
  for (const Shape &s : inputs) {
    DPT_REQUIRE(
        s.rank() == inputs[0].rank() && with_first(s, 1) == with_first(inputs[0], 1),
        DPT_ERROR_INVALID_ARGUMENT,
        "concat needs tensors that differ in dimension 0 only, got " + inputs[0].text() + " and " + s.text());
    channels += s[0];
  }
  NodeLayout l;
  l.output = with_first(inputs[0], channels);
  return l;
}

std::string describe(const OpAttrs &) {
  return "concat";
}

}  // namespace

extern const OpDef kConcatOp = {"concat", 2, DPT_OP_MAX_INPUTS, layout, describe, {}, {}};

}  // namespace dpt
