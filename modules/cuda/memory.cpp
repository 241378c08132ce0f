#include "cuda/memory.hpp"

#include <cstdio>

#include "cuda/context.hpp"

namespace dpt::cuda {

namespace {

// One asynchronous copy of bytes on the context's stream; call names it in reports.
int copy(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
         const char *call, const Error &e) {
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (bytes == 0) return 0;
    if (dst == nullptr || src == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer", ordinal, call);
    DPT_CUDA("cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, kind, c.stream));
    return 0;
  });
}

}  // namespace

int mem_alloc(dpt_backend_context *ctx, size_t bytes, void **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "mem_alloc: NULL output pointer");
  *out = nullptr;
  return with_context(ctx, e, "mem_alloc", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (bytes == 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: mem_alloc: 0 bytes", ordinal);
    c.allocations.reserve(c.allocations.size() + 1);  // any host allocation failure comes before cudaMalloc
    void *p = nullptr;
    const cudaError_t status = cudaMalloc(&p, bytes);
    if (status != cudaSuccess) {
      char call[64];
      std::snprintf(call, sizeof call, "cudaMalloc(%zu bytes)", bytes);
      return cuda_failed(e, ordinal, call, status);
    }
    c.allocations.emplace(p, bytes);
    c.bytes_in_use += bytes;
    *out = p;
    return 0;
  });
}

int mem_free(dpt_backend_context *ctx, void *ptr, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "mem_free", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (ptr == nullptr) return 0;
    const auto it = c.allocations.find(ptr);
    if (it == c.allocations.end())
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: mem_free: %p was not allocated by this context", ordinal, ptr);
    // Queued work of this stream may still read the buffer.
    DPT_CUDA("cudaStreamSynchronize", cudaStreamSynchronize(c.stream));
    c.bytes_in_use -= it->second;
    c.allocations.erase(it);
    DPT_CUDA("cudaFree", cudaFree(ptr));
    return 0;
  });
}

int mem_in_use(dpt_backend_context *ctx, uint64_t *bytes, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (bytes == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "mem_in_use: NULL output pointer");
  return with_context(ctx, e, "mem_in_use", [&](dpt_backend_context &c) {
    *bytes = c.bytes_in_use;
    return 0;
  });
}

int mem_set(dpt_backend_context *ctx, void *ptr, int value, size_t bytes, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "mem_set", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (bytes == 0) return 0;
    if (ptr == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: mem_set: NULL pointer", ordinal);
    DPT_CUDA("cudaMemsetAsync", cudaMemsetAsync(ptr, value, bytes, c.stream));
    return 0;
  });
}

int copy_to_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                   size_t error_size) {
  return copy(ctx, dst, src, bytes, cudaMemcpyHostToDevice, "copy_to_device", Error{error, error_size});
}

int copy_to_host(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                 size_t error_size) {
  return copy(ctx, dst, src, bytes, cudaMemcpyDeviceToHost, "copy_to_host", Error{error, error_size});
}

// cudaMemcpyDefault: unified addressing tells which device each pointer is on, so a peer copy works too.
int copy_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                size_t error_size) {
  return copy(ctx, dst, src, bytes, cudaMemcpyDefault, "copy_device", Error{error, error_size});
}

}  // namespace dpt::cuda
