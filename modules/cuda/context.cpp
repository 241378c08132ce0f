#include "cuda/context.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cuda/ops/conv_plan.hpp"

dpt_backend_context::dpt_backend_context() = default;

// Releases in the reverse order of creation; errors are ignored (a failed device still gets its host
// resources back). The stream has been synchronized by context_destroy.
dpt_backend_context::~dpt_backend_context() {
  conv_plans.clear();
  for (auto &[ptr, bytes] : allocations) cudaFree(ptr);
  allocations.clear();
  if (workspace != nullptr) cudaFree(workspace);
  if (scratch != nullptr) cudaFree(scratch);
  if (operands != nullptr) cudaFree(operands);
  if (activation_desc != nullptr) cudnnDestroyActivationDescriptor(activation_desc);
  if (pool_desc != nullptr) cudnnDestroyPoolingDescriptor(pool_desc);
  if (y_desc != nullptr) cudnnDestroyTensorDescriptor(y_desc);
  if (x_desc != nullptr) cudnnDestroyTensorDescriptor(x_desc);
  if (dnn != nullptr) cudnnDestroy(dnn);
  if (blas != nullptr) cublasDestroy(blas);
  if (copy_done != nullptr) cudaEventDestroy(copy_done);
  if (copy_ready != nullptr) cudaEventDestroy(copy_ready);
  if (copy_stream != nullptr) cudaStreamDestroy(copy_stream);
  if (comm_ready != nullptr) cudaEventDestroy(comm_ready);
  if (comm_stream != nullptr) cudaStreamDestroy(comm_stream);
  if (event != nullptr) cudaEventDestroy(event);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cudaGetLastError();
}

namespace dpt::cuda {

namespace {

// The options as this module knows them: only struct_size bytes of the caller's are read.
int read_options(const dpt_backend_context_options *options, int ordinal, dpt_backend_context_options &out,
                 const Error &e) {
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  if (options == nullptr) return 0;
  if (options->struct_size < sizeof(size_t))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: context_create: options.struct_size %zu is too small", ordinal,
                  options->struct_size);
  std::memcpy(&out, options, std::min(options->struct_size, sizeof out));
  out.struct_size = sizeof out;
  if ((out.flags & ~(DPT_BACKEND_ALLOW_TF32 | DPT_BACKEND_DETERMINISTIC)) != 0)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: context_create: unknown flags 0x%x",
                  ordinal, unsigned(out.flags));
  return 0;
}

// Creates the streams, the events and the library handles of c.
int create_resources(dpt_backend_context &c, const Error &e) {
  const int ordinal = c.ordinal;
  DPT_CUDA("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  DPT_CUDA("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&c.event, cudaEventDisableTiming));
  DPT_CUDA("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c.comm_stream, cudaStreamNonBlocking));
  DPT_CUDA("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&c.comm_ready, cudaEventDisableTiming));
  DPT_CUDA("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c.copy_stream, cudaStreamNonBlocking));
  DPT_CUDA("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&c.copy_ready, cudaEventDisableTiming));
  DPT_CUDA("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&c.copy_done, cudaEventDisableTiming));
  DPT_CUBLAS("cublasCreate", cublasCreate(&c.blas));
  DPT_CUBLAS("cublasSetStream", cublasSetStream(c.blas, c.stream));
  // CUBLAS_DEFAULT_MATH never uses TF32 for SGEMM; CUBLAS_TF32_TENSOR_OP_MATH allows it.
  DPT_CUBLAS("cublasSetMathMode",
             cublasSetMathMode(c.blas, c.allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  DPT_CUDNN("cudnnCreate", cudnnCreate(&c.dnn));
  DPT_CUDNN("cudnnSetStream", cudnnSetStream(c.dnn, c.stream));
  DPT_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c.x_desc));
  DPT_CUDNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&c.y_desc));
  DPT_CUDNN("cudnnCreatePoolingDescriptor", cudnnCreatePoolingDescriptor(&c.pool_desc));
  DPT_CUDNN("cudnnCreateActivationDescriptor", cudnnCreateActivationDescriptor(&c.activation_desc));
  return 0;
}

// Lets the current device (ordinal) read and write every peer GPU that it can reach directly (NVLink or
// PCIe peer-to-peer), so that peer copies (pipeline hand-offs, sharded parameter gathers, a sharded
// optimizer's ranges on a shared communicator) go GPU to GPU instead of through host memory. Best effort: a
// pair already enabled by an earlier context, or refused (too many peers), keeps the staged copy, which
// gives the same bytes.
void enable_peer_access(int ordinal, int count) {
  for (int peer = 0; peer < count; ++peer) {
    int can = 0;
    if (peer == ordinal || cudaDeviceCanAccessPeer(&can, ordinal, peer) != cudaSuccess || can == 0) continue;
    cudaDeviceEnablePeerAccess(peer, 0);  // cudaErrorPeerAccessAlreadyEnabled after the first context
  }
  cudaGetLastError();  // nothing of it is the context's error
}

// Frees *buffer once the stream is done with it and allocates bytes instead.
int grow(dpt_backend_context &c, void *&buffer, size_t &size, size_t bytes, const char *what,
         const Error &e) {
  if (bytes <= size) return 0;
  const int ordinal = c.ordinal;
  DPT_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(c.stream));
  if (buffer != nullptr) cudaFree(buffer);
  buffer = nullptr;
  size = 0;
  const cudaError_t status = cudaMalloc(&buffer, bytes);
  if (status != cudaSuccess) {
    buffer = nullptr;
    char call[96];
    std::snprintf(call, sizeof call, "cudaMalloc(%zu bytes of %s)", bytes, what);
    return cuda_failed(e, ordinal, call, status);
  }
  size = bytes;
  return 0;
}

}  // namespace

int ensure_workspace(dpt_backend_context &c, size_t bytes, const Error &e) {
  return grow(c, c.workspace, c.workspace_size, bytes, "convolution workspace", e);
}

int ensure_scratch(dpt_backend_context &c, size_t bytes, const Error &e) {
  return grow(c, c.scratch, c.scratch_size, bytes, "reduction scratch", e);
}

int ensure_operands(dpt_backend_context &c, size_t bytes, const Error &e) {
  return grow(c, c.operands, c.operands_size, bytes, "16-bit operands", e);
}

int check_launch(const dpt_backend_context &c, const char *kernel, const Error &e) {
  const cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) return 0;
  char call[96];
  std::snprintf(call, sizeof call, "%s launch", kernel);
  return cuda_failed(e, c.ordinal, call, status);
}

int context_create(int ordinal, const dpt_backend_context_options *options, dpt_backend_context **out,
                   char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: context_create: NULL output pointer",
                  ordinal);
  *out = nullptr;
  try {
    dpt_backend_context_options o;
    if (const int rc = read_options(options, ordinal, o, e)) return rc;
    if (ordinal < 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: context_create: negative device ordinal",
                    ordinal);
    int count = 0;
    DPT_CUDA("cudaGetDeviceCount", cudaGetDeviceCount(&count));
    if (ordinal >= count)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: context_create: no such device (%d CUDA %s)", ordinal, count,
                    count == 1 ? "device" : "devices");
    DeviceGuard guard(ordinal);
    DPT_CUDA("cudaSetDevice", guard.status());
    std::unique_ptr<dpt_backend_context> c(new dpt_backend_context);
    c->ordinal = ordinal;
    c->flags = o.flags;
    if (o.workspace_limit != 0) c->workspace_limit = o.workspace_limit;
    if (const int rc = create_resources(*c, e)) {
      if (c->stream != nullptr) cudaStreamSynchronize(c->stream);
      return rc;  // c's destructor releases what was created
    }
    enable_peer_access(ordinal, count);
    *out = c.release();
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "cuda:%d: context_create: out of host memory", ordinal);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: context_create: unexpected C++ exception", ordinal);
  }
}

void context_destroy(dpt_backend_context *ctx) {
  if (ctx == nullptr) return;
  DeviceGuard guard(ctx->ordinal);
  if (ctx->stream != nullptr) cudaStreamSynchronize(ctx->stream);  // nothing may still use what is freed
  if (ctx->comm_stream != nullptr) cudaStreamSynchronize(ctx->comm_stream);
  if (ctx->copy_stream != nullptr) cudaStreamSynchronize(ctx->copy_stream);
  delete ctx;
}

int context_synchronize(dpt_backend_context *ctx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "context_synchronize", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    DPT_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(c.stream));
    return 0;
  });
}

}  // namespace dpt::cuda
