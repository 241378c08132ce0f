// Allocations and copies (backend interface: mem_alloc ... copy_device). Allocation and freeing happen at
// the call; sets and copies are queued on the context, so a copy to the host lands, and a copy from the
// host reads its source, only when the context is synchronized.
#include <cstring>

#include "sim.hpp"

namespace dpt_sim {

namespace {

int host_pointer(const dpt_backend_context &c, const char *call, const char *name, const void *p,
                 const Error &e) {
  if (p == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer (%s)", c.ordinal, call,
                  name);
  if (is_device_pointer(p))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s %p is device memory, not host memory (device to device: copy_device)",
                  c.ordinal, call, name, p);
  return 0;
}

}  // namespace

int mem_alloc(dpt_backend_context *ctx, size_t bytes, void **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "mem_alloc: NULL output pointer");
  *out = nullptr;
  return with_context(ctx, e, "mem_alloc", [&](dpt_backend_context &c) {
    if (bytes == 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: mem_alloc: 0 bytes", c.ordinal);
    return allocate(*c.device, bytes, &c, out, e);
  });
}

int mem_free(dpt_backend_context *ctx, void *ptr, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "mem_free", [&](dpt_backend_context &c) {
    if (ptr == nullptr) return 0;
    const auto not_ours = [&] {
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: mem_free: %p was not allocated by this context", c.ordinal, ptr);
    };
    if (!owned_by(*c.device, ptr, &c)) return not_ours();
    // Queued work of this stream may still use the buffer (other streams must be done with it: a queued
    // operation of another context that still uses it fails when it runs).
    if (const int rc = synchronize(c, e)) return rc;
    size_t bytes = 0;
    if (!release(*c.device, ptr, &c, bytes)) return not_ours();
    return 0;
  });
}

int mem_in_use(dpt_backend_context *ctx, uint64_t *bytes, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (bytes == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "mem_in_use: NULL output pointer");
  return with_context(ctx, e, "mem_in_use", [&](dpt_backend_context &c) {
    std::lock_guard<std::mutex> lock(c.device->mutex);
    *bytes = c.bytes_in_use;
    return 0;
  });
}

int mem_set(dpt_backend_context *ctx, void *ptr, int value, size_t bytes, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "mem_set", [&](dpt_backend_context &c) {
    if (bytes == 0) return 0;
    Span dst;
    if (const int rc =
            resolve(c, "mem_set", "destination", ptr, bytes, 1, Where::kContextDevice, false, dst, e))
      return rc;
    return enqueue(c, "mem_set", {dst}, [dst, value] { std::memset(dst.host, value, dst.bytes); });
  });
}

int copy_to_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                   size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "copy_to_device", [&](dpt_backend_context &c) {
    if (bytes == 0) return 0;
    Span to;
    if (const int rc =
            resolve(c, "copy_to_device", "destination", dst, bytes, 1, Where::kContextDevice, false, to, e))
      return rc;
    if (const int rc = host_pointer(c, "copy_to_device", "source", src, e)) return rc;
    // The host source is read when the copy runs: it must stay valid until the context is synchronized.
    return enqueue(c, "copy_to_device", {to}, [to, src] { std::memcpy(to.host, src, to.bytes); });
  });
}

int copy_to_host(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                 size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "copy_to_host", [&](dpt_backend_context &c) {
    if (bytes == 0) return 0;
    Span from;
    if (const int rc =
            resolve(c, "copy_to_host", "source", src, bytes, 1, Where::kContextDevice, false, from, e))
      return rc;
    if (const int rc = host_pointer(c, "copy_to_host", "destination", dst, e)) return rc;
    return enqueue(c, "copy_to_host", {from}, [from, dst] { std::memcpy(dst, from.host, from.bytes); });
  });
}

int copy_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "copy_device", [&](dpt_backend_context &c) {
    if (bytes == 0) return 0;
    Span to, from;
    if (const int rc =
            resolve(c, "copy_device", "destination", dst, bytes, 1, Where::kContextDevice, false, to, e))
      return rc;
    // The source may be on another GPU (a peer copy).
    if (const int rc = resolve(c, "copy_device", "source", src, bytes, 1, Where::kAnyDevice, false, from, e))
      return rc;
    return enqueue(c, "copy_device", {to, from}, [to, from] { std::memmove(to.host, from.host, to.bytes); });
  });
}

}  // namespace dpt_sim
