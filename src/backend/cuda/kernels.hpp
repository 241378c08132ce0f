// A replica's kernels on a CUDA GPU: a context of the CUDA module (its own stream, cuBLAS and cuDNN
// handles) on which every copy, op pass, loss and update is queued through the module's table
// (backend_interface.h). Memory comes from the module's mem_alloc on that context. A module error becomes
// an Error: DPT_ERROR_OUT_OF_MEMORY or DPT_ERROR_DEVICE with the module's line (it names the GPU and the
// failed call), DPT_ERROR_COMMUNICATION from a collective.
#pragma once

#include <string>

#include "backend/device_kernels.hpp"
#include "interface/backend_interface.h"

namespace dpt {

// Throws the Error for a module return code rc (not DPT_BACKEND_OK) and its message.
[[noreturn]] void throw_backend_error(int rc, const char *message);

class CudaKernels final : public DeviceKernels, private DeviceMemory {
 public:
  CudaKernels(const dpt_backend_v2 &api, int ordinal, const KernelOptions &options);
  ~CudaKernels() override;
  CudaKernels(const CudaKernels &) = delete;
  CudaKernels &operator=(const CudaKernels &) = delete;

  const dpt_backend_v2 &api() const { return api_; }
  dpt_backend_context *context() const { return ctx_; }
  int ordinal() const { return ordinal_; }

  DeviceMemory &memory() override { return *this; }
  void check_supported(const char *op, DType dtype, DType matmul_dtype) const override;
  size_t scratch_bytes(const dpt_op_call &) const override { return 0; }
  void copy_to_device(float *device, const float *host, size_t count) override;
  void copy_to_host(float *host, const float *device, size_t count) override;
  void synchronize() override;
  void copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) override;
  // dst [count] = src [count] on this context's stream; src may be on another GPU (a peer copy).
  void copy_device(float *dst, const float *src, size_t count) override;
  // On the context's copy stream (the module's copy_device_ahead), and its join.
  void copy_device_ahead(float *dst, const float *src, size_t count) override;
  void join_copies_ahead() override;
  bool copies_beside_compute() const override { return true; }
  void forward(const dpt_op_call &call) override;
  void backward(const dpt_op_call &call) override;
  void accumulate(float *y, const float *x, size_t count) override;
  LossStats loss(const float *logits, const int32_t *labels, size_t n, size_t classes,
                 float *dlogits) override;
  double l2_norm(const float *grads, size_t count) override;
  void l2_block_sums(const float *range, size_t begin, size_t end, double *sums) override;
  void scale(float *x, size_t count, float alpha) override;
  void narrow(const float *x, void *out, size_t count, DType dtype) override;
  void widen(const void *in, float *x, size_t count, DType dtype) override;
  void apply_update(const OptimizerConfig &config, uint64_t t, float lr, float grad_scale, float *params,
                    const float *grads, float *state, size_t count) override;

 private:
  // DeviceMemory, on the context.
  void *allocate(size_t bytes) override;
  void release(void *p, size_t bytes) override;
  void zero(void *p, size_t bytes) override;
  // Throws unless rc is DPT_BACKEND_OK.
  void check(int rc);

  const dpt_backend_v2 &api_;
  int ordinal_;
  dpt_backend_context *ctx_ = nullptr;
  char error_[512] = "";
  // Device memory the loss and the norm are written to: a dpt_backend_loss, then a double.
  void *results_ = nullptr;
  // Their host copies: members, not locals, so that a copy still queued after a failed synchronize never
  // writes into a stack frame that is gone.
  dpt_backend_loss host_loss_{};
  double host_norm_ = 0;
  // Device memory l2_block_sums writes to, grown on demand (freed with the context).
  void *block_sums_ = nullptr;
  size_t block_sums_bytes_ = 0;
};

}  // namespace dpt
