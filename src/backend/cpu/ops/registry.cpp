// The CPU backend's ops: one line per op (its kernel file defines the OpKernel).
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"

namespace dpt::cpu {

extern const OpKernel kAdd, kAvgPool2d, kBatchNorm, kCausalSelfAttention, kConcat, kConv2d, kDense, kDropout,
    kGelu, kGlobalAvgPool, kLayerNorm, kLinear, kMaxPool2d, kPositionEmbedding, kRelu, kSigmoid, kTanh,
    kTokenEmbedding;

namespace {
const OpKernel *const kOps[] = {&kAdd,       &kAvgPool2d,
                                &kBatchNorm, &kCausalSelfAttention,
                                &kConcat,    &kConv2d,
                                &kDense,     &kDropout,
                                &kGelu,      &kGlobalAvgPool,
                                &kLayerNorm, &kLinear,
                                &kMaxPool2d, &kPositionEmbedding,
                                &kRelu,      &kSigmoid,
                                &kTanh,      &kTokenEmbedding};
}  // namespace

const OpKernel *find_op(const char *name) {
  if (name == nullptr) return nullptr;
  for (const OpKernel *op : kOps)
    if (std::strcmp(op->name, name) == 0) return op;
  return nullptr;
}

void accumulate(float *y, const float *x, size_t count) {
  float *__restrict dst = y;
  const float *__restrict src = x;
  for (size_t i = 0; i < count; ++i) dst[i] += src[i];
}

}  // namespace dpt::cpu
