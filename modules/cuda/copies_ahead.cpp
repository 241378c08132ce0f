// A copy ahead records the context's copy_ready event on its stream and makes the copy stream wait for it
// (the destination's last readers and the source's last writers are queued before), then queues the copy
// on the copy stream: the work queued on the stream afterwards runs beside it. A join records copy_done on
// the copy stream and makes the stream wait for it (device-side; the host goes on at once).
#include "cuda/copies_ahead.hpp"

#include "cuda/context.hpp"

namespace dpt::cuda {

// cudaMemcpyDefault: unified addressing tells which device each pointer is on, so a peer copy works too.
int copy_device_ahead(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                      size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "copy_device_ahead", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (bytes == 0) return 0;
    if (dst == nullptr || src == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: copy_device_ahead: NULL pointer",
                    ordinal);
    DPT_CUDA("cudaEventRecord", cudaEventRecord(c.copy_ready, c.stream));
    DPT_CUDA("cudaStreamWaitEvent", cudaStreamWaitEvent(c.copy_stream, c.copy_ready, 0));
    DPT_CUDA("cudaMemcpyAsync", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, c.copy_stream));
    c.copies_pending = true;
    return 0;
  });
}

int copy_join_ahead(dpt_backend_context *ctx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "copy_join_ahead", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (!c.copies_pending) return 0;
    DPT_CUDA("cudaEventRecord", cudaEventRecord(c.copy_done, c.copy_stream));
    DPT_CUDA("cudaStreamWaitEvent", cudaStreamWaitEvent(c.stream, c.copy_done, 0));
    c.copies_pending = false;
    return 0;
  });
}

}  // namespace dpt::cuda
