// The fully connected family, y = x W^T + b with W [units, in] (PyTorch's layout), ints = {units, bias (0
// or 1)}: "dense" over the flattened sample (one row of in = sample size), "linear" over the last dimension
// (PyTorch's nn.Linear: every row of a [sequence, features] sample by the same weights).
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

// The checks and parameters both share: rows of in features make rows of units.
NodeLayout fully_connected(const char *op, size_t in, size_t rows, const OpAttrs &a) {
  const size_t units = size_t(a.ints[0]);
  DPT_REQUIRE(a.ints[0] > 0 && units <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              std::string(op) + " units must be in 1..2^28, got " + std::to_string(a.ints[0]));
  DPT_REQUIRE(in <= kMaxParameters / units, DPT_ERROR_INVALID_ARGUMENT,
              std::string(op) + " layer would have more than 2^30 parameters");
  DPT_REQUIRE(rows <= kMaxFloatsPerSample / units, DPT_ERROR_INVALID_ARGUMENT,
              std::string(op) + " output would exceed 2^28 floats per sample");
  DPT_REQUIRE(a.ints[1] == 0 || a.ints[1] == 1, DPT_ERROR_INVALID_ARGUMENT,
              std::string(op) + " bias must be 0 or 1, got " + std::to_string(a.ints[1]));
  NodeLayout l;
  l.params.push_back({"weight", Shape{units, in}, ParamInit::kFanIn, in, true});
  if (a.ints[1] != 0) l.params.push_back({"bias", Shape{units}, ParamInit::kZero, 0});
  return l;
}

NodeLayout dense_layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  NodeLayout l = fully_connected("dense", inputs[0].size(), 1, a);
  l.output = Shape{size_t(a.ints[0])};
  return l;
}

NodeLayout linear_layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &x = inputs[0];
  DPT_REQUIRE(x.rank() >= 1 && x.size() > 0, DPT_ERROR_INVALID_ARGUMENT, "linear needs a non-empty input");
  const size_t in = x[x.rank() - 1];
  NodeLayout l = fully_connected("linear", in, x.size() / in, a);
  l.output = x.with_last(size_t(a.ints[0]));
  return l;
}

std::string describe(const char *op, const OpAttrs &a) {
  return std::string(op) + ":" + std::to_string(a.ints[0]) + (a.ints[1] != 0 ? "" : ":nobias");
}
std::string describe_dense(const OpAttrs &a) {
  return describe("dense", a);
}
std::string describe_linear(const OpAttrs &a) {
  return describe("linear", a);
}

}  // namespace

extern const OpDef kDenseOp = {"dense", 1, 1, dense_layout, describe_dense, {"units", "bias"}, {}};
extern const OpDef kLinearOp = {"linear", 1, 1, linear_layout, describe_linear, {"units", "bias"}, {}};

}  // namespace dpt
