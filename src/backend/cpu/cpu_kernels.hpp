// A CPU device's kernels: the CPU reference kernels (src/backend/cpu/ops) and the optimizer of src/optim on
// the device's arena.
#pragma once

#include "backend/device_kernels.hpp"

namespace dpt {

class CpuKernels final : public DeviceKernels {
 public:
  explicit CpuKernels(MemoryArena &arena) : arena_(arena) {}

  DeviceMemory &memory() override { return arena_; }
  void check_supported(const char *op, DType dtype, DType matmul_dtype) const override;
  size_t scratch_bytes(const dpt_op_call &call) const override;
  void copy_to_device(float *device, const float *host, size_t count) override;
  void copy_to_host(float *host, const float *device, size_t count) override;
  void copy_device(float *dst, const float *src, size_t count) override;
  void synchronize() override {}
  void copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) override;
  void forward(const dpt_op_call &call) override;
  void backward(const dpt_op_call &call) override;
  void accumulate(float *y, const float *x, size_t count) override { cpu::accumulate(y, x, count); }
  LossStats loss(const float *logits, const int32_t *labels, size_t n, size_t classes,
                 float *dlogits) override {
    return cpu::softmax_cross_entropy(logits, labels, n, classes, dlogits);
  }
  double l2_norm(const float *grads, size_t count) override { return dpt::l2_norm(grads, count); }
  void l2_block_sums(const float *range, size_t begin, size_t end, double *sums) override {
    dpt::l2_block_sums(range, begin, end, sums);
  }
  void scale(float *x, size_t count, float alpha) override {
    for (size_t i = 0; i < count; ++i) x[i] *= alpha;
  }
  void narrow(const float *x, void *out, size_t count, DType dtype) override;
  void widen(const void *in, float *x, size_t count, DType dtype) override;
  void apply_update(const OptimizerConfig &config, uint64_t t, float lr, float grad_scale, float *params,
                    const float *grads, float *state, size_t count) override {
    dpt::apply_update(config, t, lr, grad_scale, params, grads, state, count);
  }

 private:
  MemoryArena &arena_;
};

}  // namespace dpt
