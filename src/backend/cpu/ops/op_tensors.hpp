// Small accessors the CPU kernels share: a call's tensors as typed pointers and sizes.
#pragma once

#include <cstddef>

#include "interface/op_call.h"

namespace dpt::cpu {

inline const float *in(const dpt_op_call &c, int i = 0) {
  return static_cast<const float *>(c.inputs[i].data);
}
inline float *out(const dpt_op_call &c) {
  return static_cast<float *>(c.output.data);
}
inline const float *param(const dpt_op_call &c, int p) {
  return p < c.param_count ? static_cast<const float *>(c.params[p].data) : nullptr;
}
inline float *param_grad(const dpt_op_call &c, int p) {
  return p < c.param_count ? c.param_grads[p] : nullptr;
}
inline const float *dy(const dpt_op_call &c) {
  return static_cast<const float *>(c.output_grad);
}
inline float *dx(const dpt_op_call &c, int i = 0) {
  return static_cast<float *>(c.input_grads[i]);
}
// Elements of one sample.
inline size_t sample_size(const dpt_tensor &t) {
  return size_t(dpt_tensor_sample_size(&t));
}
inline size_t n(const dpt_op_call &c) {
  return size_t(c.n);
}

}  // namespace dpt::cpu
