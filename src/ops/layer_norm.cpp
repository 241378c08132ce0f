// "layer_norm" over the last dimension of each sample; reals[0] = eps.
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  DPT_REQUIRE(std::isfinite(a.reals[0]) && a.reals[0] > 0, DPT_ERROR_INVALID_ARGUMENT,
              "layer_norm eps must be positive");
  const Shape &in = inputs[0];
  const size_t d = in[in.rank() - 1];
  NodeLayout l;
  l.output = in;
  l.params.push_back({"weight", Shape{d}, ParamInit::kOne, 0});
  l.params.push_back({"bias", Shape{d}, ParamInit::kZero, 0});
  l.saved_bytes_per_sample = 2 * (in.size() / d) * sizeof(float);
  return l;
}

std::string describe(const OpAttrs &a) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "layernorm:%g", a.reals[0]);
  return buf;
}

}  // namespace

extern const OpDef kLayerNormOp = {"layer_norm", 1, 1, layout, describe, {}, {"eps"}};

}  // namespace dpt
