// "dense": y [units] = x W^T + b over the flattened input. ints = {units, bias (0 or 1)}.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const size_t units = size_t(a.ints[0]), in = inputs[0].size();
  DPT_REQUIRE(a.ints[0] > 0 && units <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "dense units must be in 1..2^28, got " + std::to_string(a.ints[0]));
  DPT_REQUIRE(in <= kMaxParameters / units, DPT_ERROR_INVALID_ARGUMENT,
              "dense layer would have more than 2^30 parameters");
  DPT_REQUIRE(a.ints[1] == 0 || a.ints[1] == 1, DPT_ERROR_INVALID_ARGUMENT,
              "dense bias must be 0 or 1, got " + std::to_string(a.ints[1]));
  NodeLayout l;
  l.output = Shape{units};
  l.params.push_back({"weight", Shape{units, in}, ParamInit::kFanIn, in});
  if (a.ints[1] != 0) l.params.push_back({"bias", Shape{units}, ParamInit::kZero, 0});
  return l;
}

std::string describe(const OpAttrs &a) {
  return "dense:" + std::to_string(a.ints[0]) + (a.ints[1] != 0 ? "" : ":nobias");
}

}  // namespace

extern const OpDef kDenseOp = {"dense", 1, 1, layout, describe, {"units", "bias"}, {}};

}  // namespace dpt
