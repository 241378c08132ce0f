// The CUDA module's ops: one line per op (its file in ops/ defines the OpKernel). An op that is not listed
// has no CUDA kernel: op_supported answers 0 and op_forward/op_backward refuse it, naming it ("dropout").
#include <cstring>

#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

extern const OpKernel kAdd, kAvgPool2d, kBatchNorm, kCausalSelfAttention, kConcat, kConv2d, kDense, kGelu,
    kGlobalAvgPool, kLayerNorm, kLinear, kMaxPool2d, kPositionEmbedding, kRelu, kSigmoid, kTanh,
    kTokenEmbedding;

namespace {

// A view: the executor aliases its input and never calls a kernel, so it is supported and has none.
const OpKernel kFlatten = {"flatten", 1, 1, 0, 0, nullptr, nullptr};

// clang-format off
const OpKernel *const kOps[] = {
    &kAdd,
    &kAvgPool2d,
    &kBatchNorm,
    &kCausalSelfAttention,
    &kConcat,
    &kConv2d,
    &kDense,
    &kFlatten,
    &kGelu,
    &kGlobalAvgPool,
    &kLayerNorm,
    &kLinear,
    &kMaxPool2d,
    &kPositionEmbedding,
    &kRelu,
    &kSigmoid,
    &kTanh,
    &kTokenEmbedding,
};
// clang-format on

}  // namespace

const OpKernel *find_op(const char *name) {
  if (name == nullptr) return nullptr;
  for (const OpKernel *op : kOps)
    if (std::strcmp(op->name, name) == 0) return op;
  return nullptr;
}

}  // namespace dpt::cuda
