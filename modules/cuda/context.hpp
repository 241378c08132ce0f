// One device's execution context (backend interface: context_create ... context_synchronize): the stream
// every call of the context runs on, its cuBLAS and cuDNN handles, the memory allocated through it, the
// cuDNN workspace and a scratch buffer for the module's own reductions, and the convolution plans chosen
// so far. Everything it holds is released by context_destroy.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <unordered_map>

#include "cuda/errors.hpp"
#include "cuda/status.hpp"
#include "interface/backend_interface.h"

namespace dpt::cuda {

struct ConvPlan;  // ops/conv_plan.hpp
using ConvKey = std::array<int32_t, 9>;

// Used when the options give no workspace limit.
constexpr uint64_t kDefaultWorkspaceLimit = uint64_t(64) << 20;

}  // namespace dpt::cuda

struct dpt_backend_context {
  int ordinal = -1;
  uint32_t flags = 0;
  uint64_t workspace_limit = dpt::cuda::kDefaultWorkspaceLimit;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;  // orders this stream against others (virtual_all_reduce, comm_all_reduce)
  // comm_all_reduce_start's stream, which runs beside `stream`, and the event that orders it after the work
  // queued on `stream` before each start.
  cudaStream_t comm_stream = nullptr;
  cudaEvent_t comm_ready = nullptr;
  // copy_device_ahead's stream, beside `stream`; copy_ready orders it after `stream`'s work before each
  // copy, copy_done orders `stream` after its copies at a join; copies_pending: queued and not joined.
  cudaStream_t copy_stream = nullptr;
  cudaEvent_t copy_ready = nullptr, copy_done = nullptr;
  bool copies_pending = false;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  // Reused by pooling and activations (set at each call: host-only work).
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnPoolingDescriptor_t pool_desc = nullptr;
  cudnnActivationDescriptor_t activation_desc = nullptr;

  std::unordered_map<void *, size_t> allocations;  // mem_alloc's buffers and their sizes
  uint64_t bytes_in_use = 0;
  void *workspace = nullptr;  // cuDNN workspace, grown on demand up to workspace_limit
  size_t workspace_size = 0;
  void *scratch = nullptr;  // partial sums of the loss and norm kernels
  size_t scratch_size = 0;
  void *operands = nullptr;  // the 16-bit (or 16-bit-rounded) copies of matrix products' inputs
  size_t operands_size = 0;
  std::map<dpt::cuda::ConvKey, std::unique_ptr<dpt::cuda::ConvPlan>> conv_plans;

  dpt_backend_context();
  ~dpt_backend_context();
  dpt_backend_context(const dpt_backend_context &) = delete;
  dpt_backend_context &operator=(const dpt_backend_context &) = delete;

  bool deterministic() const { return (flags & DPT_BACKEND_DETERMINISTIC) != 0; }
  bool allow_tf32() const { return (flags & DPT_BACKEND_ALLOW_TF32) != 0; }
};

namespace dpt::cuda {

// Runs f(context) with the context's device current (the caller's restored after), behind an exception
// barrier: nothing crosses the module boundary but a code and the one-line report.
template <class F>
int with_context(dpt_backend_context *ctx, const Error &e, const char *call, F &&f) noexcept {
  if (ctx == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL context", call);
  const int ordinal = ctx->ordinal;
  try {
    DeviceGuard guard(ordinal);
    if (guard.status() != cudaSuccess) return cuda_failed(e, ordinal, "cudaSetDevice", guard.status());
    return f(*ctx);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "cuda:%d: %s: out of host memory", ordinal, call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: unexpected C++ exception", ordinal, call);
  }
}

// Makes the cuDNN workspace (or the scratch buffer, or the operand buffer of ops/matmul.hpp) at least
// bytes large: frees the old one once the stream has finished with it.
int ensure_workspace(dpt_backend_context &c, size_t bytes, const Error &e);
int ensure_scratch(dpt_backend_context &c, size_t bytes, const Error &e);
int ensure_operands(dpt_backend_context &c, size_t bytes, const Error &e);

// Checks a launch of the module's own kernels.
int check_launch(const dpt_backend_context &c, const char *kernel, const Error &e);

}  // namespace dpt::cuda

// Backend interface functions (modules/interface/backend_interface.h).
namespace dpt::cuda {
int context_create(int ordinal, const dpt_backend_context_options *options, dpt_backend_context **out,
                   char *error, size_t error_size);
void context_destroy(dpt_backend_context *ctx);
int context_synchronize(dpt_backend_context *ctx, char *error, size_t error_size);
}  // namespace dpt::cuda
