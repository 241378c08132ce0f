// "global_avg_pool": x [c, h, w] -> y [c], the mean of each plane (summed in double, in order).
#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

size_t plane(const dpt_op_call &c) {
  return sample_size(c.inputs[0]) / size_t(c.inputs[0].dims[0]);
}

void forward(const dpt_op_call &c) {
  const size_t pixels = plane(c), planes = n(c) * size_t(c.inputs[0].dims[0]);
  for (size_t p = 0; p < planes; ++p) {
    const float *x = in(c) + p * pixels;
    double sum = 0.0;
    for (size_t i = 0; i < pixels; ++i) sum += x[i];
    out(c)[p] = float(sum / double(pixels));
  }
}

void backward(const dpt_op_call &c) {
  float *d = dx(c);
  if (d == nullptr) return;
  const size_t pixels = plane(c), planes = n(c) * size_t(c.inputs[0].dims[0]);
  const float scale = 1.0f / float(pixels);
  for (size_t p = 0; p < planes; ++p) {
    const float g = dy(c)[p] * scale;
    for (size_t i = 0; i < pixels; ++i) d[p * pixels + i] = g;
  }
}

}  // namespace

extern const OpKernel kGlobalAvgPool = {"global_avg_pool", forward, backward, nullptr};

}  // namespace dpt::cpu
