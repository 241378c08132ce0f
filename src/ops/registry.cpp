// The op kinds a model can hold: one line per op (its descriptor file defines the OpDef).
#include <cstring>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

extern const OpDef kAddOp, kAvgPool2dOp, kBatchNormOp, kCausalSelfAttentionOp, kConcatOp, kConv2dOp, kDenseOp,
    kDropoutOp, kFlattenOp, kGeluOp, kGlobalAvgPoolOp, kLayerNormOp, kLinearOp, kMaxPool2dOp,
    kPositionEmbeddingOp, kReluOp, kSigmoidOp, kTanhOp, kTokenEmbeddingOp;

namespace {
const OpDef *const kOps[] = {&kAddOp,
                             &kAvgPool2dOp,
                             &kBatchNormOp,
                             &kCausalSelfAttentionOp,
                             &kConcatOp,
                             &kConv2dOp,
                             &kDenseOp,
                             &kDropoutOp,
                             &kFlattenOp,
                             &kGeluOp,
                             &kGlobalAvgPoolOp,
                             &kLayerNormOp,
                             &kLinearOp,
                             &kMaxPool2dOp,
                             &kPositionEmbeddingOp,
                             &kReluOp,
                             &kSigmoidOp,
                             &kTanhOp,
                             &kTokenEmbeddingOp};
}  // namespace

const OpDef *find_op_def(const std::string &name) {
  for (const OpDef *op : kOps)
    if (name == op->name) return op;
  return nullptr;
}

const OpDef &op_def(const char *name) {
  const OpDef *op = find_op_def(name);
  DPT_REQUIRE(op != nullptr, DPT_ERROR_INTERNAL, std::string("no op '") + name + "'");
  return *op;
}

}  // namespace dpt
