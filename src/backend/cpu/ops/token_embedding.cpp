// "token_embedding": y[t] = weight[x[t]]; backward adds dy[t] into row x[t] of the weight gradient, samples
// and positions in order (so the sum is the same on every run). The executor has checked every token
// against the vocabulary.
#include <cstdint>
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

const int32_t *tokens(const dpt_op_call &c) {
  return static_cast<const int32_t *>(c.inputs[0].data);
}

void forward(const dpt_op_call &c) {
  const size_t dim = size_t(c.ints[1]), positions = n(c) * sample_size(c.inputs[0]);
  const int32_t *x = tokens(c);
  for (size_t t = 0; t < positions; ++t)
    std::memcpy(out(c) + t * dim, param(c, 0) + size_t(x[t]) * dim, dim * sizeof(float));
}

void backward(const dpt_op_call &c) {
  float *dw = param_grad(c, 0);
  if (dw == nullptr) return;
  const size_t dim = size_t(c.ints[1]), positions = n(c) * sample_size(c.inputs[0]);
  const int32_t *x = tokens(c);
  for (size_t t = 0; t < positions; ++t) {
    float *__restrict row = dw + size_t(x[t]) * dim;
    const float *__restrict g = dy(c) + t * dim;
    for (size_t i = 0; i < dim; ++i) row[i] += g[i];
  }
}

}  // namespace

extern const OpKernel kTokenEmbedding = {"token_embedding", forward, backward, nullptr};

}  // namespace dpt::cpu
