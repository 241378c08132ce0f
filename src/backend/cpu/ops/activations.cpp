// "relu", "sigmoid", "tanh": elementwise; backward uses the output only. The loops are branch-free over
// __restrict pointers so that they vectorize: a data-dependent branch per element (ReLU's sign) is
// mispredicted half the time. Compiled per x86-64 level (DPT_CLONES: AVX-512 where the CPU has it; every
// operation elementwise, so the same bits).
#include <cmath>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"
#include "interface/op_math.hpp"

namespace dpt::cpu {

namespace {

size_t count(const dpt_op_call &c) {
  return n(c) * sample_size(c.output);
}

DPT_CLONES void relu_forward(const dpt_op_call &c) {
  const float *__restrict x = in(c);
  float *__restrict y = out(c);
  for (size_t i = 0, e = count(c); i < e; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];  // NaN stays NaN
}

DPT_CLONES void relu_backward(const dpt_op_call &c) {
  if (dx(c) == nullptr) return;
  const float *__restrict y = out(c);
  const float *__restrict g = dy(c);
  float *__restrict d = dx(c);
  for (size_t i = 0, e = count(c); i < e; ++i) d[i] = float(y[i] > 0.0f) * g[i];  // a ?: would be a branch
}

DPT_CLONES void sigmoid_forward(const dpt_op_call &c) {
  const float *__restrict x = in(c);
  float *__restrict y = out(c);
  for (size_t i = 0, e = count(c); i < e; ++i) y[i] = op_math::sigmoid_float(x[i]);
}

DPT_CLONES void sigmoid_backward(const dpt_op_call &c) {
  if (dx(c) == nullptr) return;
  const float *__restrict y = out(c);
  const float *__restrict g = dy(c);
  float *__restrict d = dx(c);
  for (size_t i = 0, e = count(c); i < e; ++i) d[i] = g[i] * y[i] * (1.0f - y[i]);
}

void tanh_forward(const dpt_op_call &c) {
  const float *__restrict x = in(c);
  float *__restrict y = out(c);
  for (size_t i = 0, e = count(c); i < e; ++i) y[i] = float(op_math::tanh_double(double(x[i])));
}

DPT_CLONES void tanh_backward(const dpt_op_call &c) {
  if (dx(c) == nullptr) return;
  const float *__restrict y = out(c);
  const float *__restrict g = dy(c);
  float *__restrict d = dx(c);
  for (size_t i = 0, e = count(c); i < e; ++i) d[i] = g[i] * (1.0f - y[i] * y[i]);
}

}  // namespace

extern const OpKernel kRelu = {"relu", relu_forward, relu_backward, nullptr};
extern const OpKernel kSigmoid = {"sigmoid", sigmoid_forward, sigmoid_backward, nullptr};
extern const OpKernel kTanh = {"tanh", tanh_forward, tanh_backward, nullptr};

}  // namespace dpt::cpu
