// "position_embedding": y[t] = x[t] + weight[t] for every position t of a [T, C] sequence, the learned
// position table of GPT-2 / nanoGPT ("wpe": name the node "wpe" and its parameter is "wpe.weight"
// [T, C]), added to the token (or any other) embedding it reads. No attributes.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &) {
  const Shape &x = inputs[0];
  DPT_REQUIRE(x.rank() == 2, DPT_ERROR_INVALID_ARGUMENT,
              "position_embedding takes [sequence, features], got " + x.text());
  NodeLayout l;
  l.output = x;
  l.params.push_back({"weight", x, ParamInit::kFanIn, x[1]});
  return l;
}

std::string describe(const OpAttrs &) {
  return "position_embedding";
}

}  // namespace

extern const OpDef kPositionEmbeddingOp = {"position_embedding", 1, 1, layout, describe, {}, {}};

}  // namespace dpt
