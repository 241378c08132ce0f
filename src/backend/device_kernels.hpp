// What one replica runs on its device: memory, copies between host and device, the ops' passes (a
// dpt_op_call, modules/interface/op_call.h), the loss and the optimizer update. A CPU device runs the CPU
// reference kernels (src/backend/cpu/ops) and the src/optim code on host memory; a CUDA device queues the
// CUDA module's kernels on a stream of its own (one per replica, so that several replicas can share a GPU).
// Used by one thread at a time (the device's worker, or the trainer's thread between phases).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/arena.hpp"
#include "graph/tensor.hpp"
#include "interface/op_call.h"
#include "optim/optimizer.hpp"

namespace dpt {

using LossStats = cpu::LossStats;

// Per-trainer choices of how kernels compute (GPU only; a CPU device has one way).
struct KernelOptions {
  bool allow_tf32 = false;     // cuBLAS and cuDNN may use TF32 tensor cores
  bool deterministic = false;  // deterministic convolution algorithms only
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  virtual DeviceMemory &memory() = 0;

  // Throws DPT_ERROR_UNSUPPORTED naming the device when the op cannot run here on tensors of dtype with
  // matrix products on inputs of matmul_dtype (dpt_op_call::matmul_dtype).
  virtual void check_supported(const char *op, DType dtype, DType matmul_dtype) const = 0;
  // Bytes of dpt_op_call::scratch a call of this op and these shapes needs here (independent of the
  // sample count; a GPU library brings its own workspace).
  virtual size_t scratch_bytes(const dpt_op_call &call) const = 0;

  // Host to device. The host buffer must stay valid until synchronize().
  virtual void copy_to_device(float *device, const float *host, size_t count) = 0;
  // Device to host; the host buffer holds the values after synchronize().
  virtual void copy_to_host(float *host, const float *device, size_t count) = 0;
  // Device to device, queued after the work before it (on a GPU src may be another GPU's: a peer copy); no
  // host round trip, no wait.
  virtual void copy_device(float *dst, const float *src, size_t count) = 0;
  // copy_device beside the work queued later (a GPU's copy stream: a parameter bucket read ahead while
  // the layers before it compute): ordered after the work queued before it; until join_copies_ahead, dst
  // must be neither read nor written and src not written. Where the copy cannot run beside the work (a
  // CPU device), it is copy_device and the join does nothing.
  virtual void copy_device_ahead(float *dst, const float *src, size_t count) { copy_device(dst, src, count); }
  // Orders the work queued from now on after every copy_device_ahead since the last join (no host wait).
  virtual void join_copies_ahead() {}
  // True when copy_device_ahead runs beside the work queued later (a read ahead can hide it).
  virtual bool copies_beside_compute() const { return false; }
  // Waits for the queued work; throws its error (DPT_ERROR_DEVICE naming the device and the call).
  virtual void synchronize() = 0;
  // Host to device, as copy_to_device, for the labels of a slice.
  virtual void copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) = 0;

  // An op's passes, with the semantics of op_call.h.
  virtual void forward(const dpt_op_call &call) = 0;
  virtual void backward(const dpt_op_call &call) = 0;
  // y[i] += x[i] (a gradient that several ops contribute to).
  virtual void accumulate(float *y, const float *x, size_t count) = 0;
  // Softmax cross-entropy of the slice (labels in device memory); waits for the result.
  virtual LossStats loss(const float *logits, const int32_t *labels, size_t n, size_t classes,
                         float *dlogits) = 0;

  // The gradient norm (optim/optimizer.hpp's l2_norm semantics: a fixed order, identical on every replica
  // of one kind of device); waits for the result.
  virtual double l2_norm(const float *grads, size_t count) = 0;
  // optim/optimizer.hpp's l2_block_sums of range (its element begin .. end of the vector) into sums, host
  // memory (norm_blocks of the range's blocks); waits for the result. l2_norm's bits, block by block.
  virtual void l2_block_sums(const float *range, size_t begin, size_t end, double *sums) = 0;
  // x[i] *= alpha, one float multiplication each.
  virtual void scale(float *x, size_t count, float alpha) = 0;
  // The 16-bit copy of activations (graph/activation_store.hpp): out = x rounded to dtype (kBF16 or kF16,
  // to nearest even), count 2-byte values; widen writes them back as float32 (exactly).
  virtual void narrow(const float *x, void *out, size_t count, DType dtype) = 0;
  virtual void widen(const void *in, float *x, size_t count, DType dtype) = 0;
  // optim/optimizer.hpp's apply_update.
  virtual void apply_update(const OptimizerConfig &config, uint64_t t, float lr, float grad_scale,
                            float *params, const float *grads, float *state, size_t count) = 0;
};

}  // namespace dpt
