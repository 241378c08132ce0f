// "global_avg_pool": x [c, h, w] -> [c], the mean of each plane.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &) {
  DPT_REQUIRE(inputs[0].rank() == 3, DPT_ERROR_INVALID_ARGUMENT,
              "global average pooling needs a channels x height x width input, got " + inputs[0].text());
  NodeLayout l;
  l.output = Shape{inputs[0][0]};
  return l;
}

std::string describe(const OpAttrs &) {
  return "gap";
}

}  // namespace

extern const OpDef kGlobalAvgPoolOp = {"global_avg_pool", 1, 1, layout, describe, {}, {}};

}  // namespace dpt
