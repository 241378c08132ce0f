// "position_embedding": y = x + weight (the [T, C] table added to every sample); backward: dx = dy, and
// dweight += the sum of dy over the samples, in sample order.
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

void forward(const dpt_op_call &c) {
  const size_t size = sample_size(c.output);
  const float *__restrict w = param(c, 0);
  for (size_t s = 0; s < n(c); ++s) {
    const float *__restrict x = in(c) + s * size;
    float *__restrict y = out(c) + s * size;
    for (size_t i = 0; i < size; ++i) y[i] = x[i] + w[i];
  }
}

void backward(const dpt_op_call &c) {
  const size_t size = sample_size(c.output);
  if (float *d = dx(c)) std::memcpy(d, dy(c), n(c) * size * sizeof(float));
  if (float *__restrict dw = param_grad(c, 0))
    for (size_t s = 0; s < n(c); ++s) {
      const float *__restrict g = dy(c) + s * size;
      for (size_t i = 0; i < size; ++i) dw[i] += g[i];
    }
}

}  // namespace

extern const OpKernel kPositionEmbedding = {"position_embedding", forward, backward, nullptr};

}  // namespace dpt::cpu
