// "concat": the inputs stacked along dimension 0 (channels) of each sample.
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

void forward(const dpt_op_call &c) {
  const size_t out_size = sample_size(c.output);
  for (size_t s = 0; s < n(c); ++s) {
    float *y = out(c) + s * out_size;
    for (int i = 0; i < c.input_count; ++i) {
      const size_t size = sample_size(c.inputs[i]);
      std::memcpy(y, in(c, i) + s * size, size * sizeof(float));
      y += size;
    }
  }
}

void backward(const dpt_op_call &c) {
  const size_t out_size = sample_size(c.output);
  for (size_t s = 0; s < n(c); ++s) {
    const float *g = dy(c) + s * out_size;
    for (int i = 0; i < c.input_count; ++i) {
      const size_t size = sample_size(c.inputs[i]);
      if (dx(c, i) != nullptr) std::memcpy(dx(c, i) + s * size, g, size * sizeof(float));
      g += size;
    }
  }
}

}  // namespace

extern const OpKernel kConcat = {"concat", forward, backward, nullptr};

}  // namespace dpt::cpu
