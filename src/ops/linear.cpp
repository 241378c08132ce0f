// "linear": y [..., units] = x W^T + b over the last dimension of the input (PyTorch's nn.Linear: every
// row of a [sequence, features] sample by the same weights). ints = {units, bias (0 or 1)}. "dense" is the
// same product over the flattened sample.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &x = inputs[0];
  DPT_REQUIRE(x.rank() >= 1 && x.size() > 0, DPT_ERROR_INVALID_ARGUMENT, "linear needs a non-empty input");
  const size_t units = size_t(a.ints[0]), in = x[x.rank() - 1];
  DPT_REQUIRE(a.ints[0] > 0 && units <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "linear units must be in 1..2^28, got " + std::to_string(a.ints[0]));
  DPT_REQUIRE(in <= kMaxParameters / units, DPT_ERROR_INVALID_ARGUMENT,
              "linear layer would have more than 2^30 parameters");
  DPT_REQUIRE(x.size() / in <= kMaxFloatsPerSample / units, DPT_ERROR_INVALID_ARGUMENT,
              "linear output would exceed 2^28 floats per sample");
  DPT_REQUIRE(a.ints[1] == 0 || a.ints[1] == 1, DPT_ERROR_INVALID_ARGUMENT,
              "linear bias must be 0 or 1, got " + std::to_string(a.ints[1]));
  NodeLayout l;
  l.output = x.with_last(units);
  l.params.push_back({"weight", Shape{units, in}, ParamInit::kFanIn, in});
  if (a.ints[1] != 0) l.params.push_back({"bias", Shape{units}, ParamInit::kZero, 0});
  return l;
}

std::string describe(const OpAttrs &a) {
  return "linear:" + std::to_string(a.ints[0]) + (a.ints[1] != 0 ? "" : ":nobias");
}

}  // namespace

extern const OpDef kLinearOp = {"linear", 1, 1, layout, describe, {"units", "bias"}, {}};

}  // namespace dpt
