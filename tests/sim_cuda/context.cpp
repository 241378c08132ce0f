// Contexts and their simulated streams: every copy and kernel is an operation queued on its context, run
// in order only when something waits for the stream (context_synchronize, mem_free, context_destroy, the
// collectives). The first error of queued work stays pending on the context until a synchronizing call
// reports it; the work queued after it is skipped meanwhile (as a failed stream would not run it).
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <unordered_set>
#include <utility>

#include "sim.hpp"

namespace dpt_sim {

namespace {

std::mutex live_mutex;
std::unordered_set<const dpt_backend_context *> live_contexts;

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

// Records rc and its message as c's pending error unless one is pending already.
void set_pending(dpt_backend_context &c, int rc, const char *message) {
  std::lock_guard<std::mutex> lock(c.queue_mutex);
  if (c.pending_code != 0) return;
  c.pending_code = rc;
  std::snprintf(c.pending_error, sizeof c.pending_error, "%s", message);
}

bool has_pending(dpt_backend_context &c) {
  std::lock_guard<std::mutex> lock(c.queue_mutex);
  return c.pending_code != 0;
}

// Runs one queued operation: its buffers must still be allocated (another context may have freed them).
int run(const dpt_backend_context &c, Op &op, const Error &e) noexcept {
  try {
    for (const Span &s : op.spans)
      if (!still_allocated(s))
        return report(e, DPT_BACKEND_ERROR,
                      "cuda:%d: %s: %s %p was freed before the queued operation ran (use after free: "
                      "cudaErrorIllegalAddress on a GPU)",
                      c.ordinal, op.call, s.name, s.address);
    return op.run(e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "cuda:%d: %s: out of host memory", c.ordinal, op.call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: unexpected C++ exception", c.ordinal, op.call);
  }
}

}  // namespace

bool context_alive(const dpt_backend_context *c) {
  std::lock_guard<std::mutex> lock(live_mutex);
  return live_contexts.count(c) != 0;
}

int with_context(dpt_backend_context *ctx, const Error &e, const char *call,
                 const std::function<int(dpt_backend_context &)> &f) noexcept {
  if (ctx == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL context", call);
  try {
    if (!context_alive(ctx))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: %p is not a live context (destroyed, or never created)", call,
                    static_cast<void *>(ctx));
    const int ordinal = ctx->ordinal;
    const Fault injected = fault(call, ordinal);
    if (injected == Fault::kNow) return simulated_failure(e, ordinal, call, false);
    ctx->async_fault = injected == Fault::kAsync;
    const int rc = f(*ctx);
    // An asynchronous failure the call did not queue (it queued nothing): it surfaces all the same.
    if (ctx->async_fault && rc == 0) enqueue(*ctx, call, {}, [] {});
    ctx->async_fault = false;
    return rc;
  } catch (const std::bad_alloc &) {
    ctx->async_fault = false;
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "cuda:%d: %s: out of host memory", ctx->ordinal, call);
  } catch (...) {
    ctx->async_fault = false;
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: unexpected C++ exception", ctx->ordinal, call);
  }
}

int enqueue(dpt_backend_context &c, const char *call, std::vector<Span> spans, std::function<void()> work) {
  return enqueue_checked(c, call, std::move(spans), [work = std::move(work)](const Error &) {
    work();
    return 0;
  });
}

int enqueue_checked(dpt_backend_context &c, const char *call, std::vector<Span> spans,
                    std::function<int(const Error &)> work) {
  Op op;
  op.call = call;
  op.spans = std::move(spans);
  if (c.async_fault) {
    c.async_fault = false;
    const int ordinal = c.ordinal;
    op.run = [ordinal, call](const Error &e) { return simulated_failure(e, ordinal, call, true); };
  } else {
    op.run = std::move(work);
  }
  std::lock_guard<std::mutex> lock(c.queue_mutex);
  c.queue.push_back(std::move(op));
  return 0;
}

void drain(dpt_backend_context &c) {
  std::lock_guard<std::mutex> running(c.run_mutex);
  for (;;) {
    std::vector<Op> ops;
    {
      std::lock_guard<std::mutex> lock(c.queue_mutex);
      ops.swap(c.queue);
    }
    if (ops.empty()) return;
    for (Op &op : ops) {
      if (has_pending(c)) break;  // a failed stream runs nothing more until the error is reported
      char message[512] = "";
      const Error e{message, sizeof message};
      if (const int rc = run(c, op, e)) set_pending(c, rc, message);
    }
  }
}

int drain_and_peek(dpt_backend_context &c, const Error &e) {
  drain(c);
  std::lock_guard<std::mutex> lock(c.queue_mutex);
  if (c.pending_code == 0) return 0;
  return report(e, c.pending_code, "%s", c.pending_error);
}

int synchronize(dpt_backend_context &c, const Error &e) {
  drain(c);
  std::lock_guard<std::mutex> lock(c.queue_mutex);
  const int rc = c.pending_code;
  if (rc == 0) return 0;
  report(e, rc, "%s", c.pending_error);
  c.pending_code = 0;
  c.pending_error[0] = '\0';
  return rc;
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
    if (const int rc = device_count_or_report(e, ordinal, "context_create", count)) return rc;
    if (ordinal >= count)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: context_create: no such device (%d CUDA %s)", ordinal, count,
                    count == 1 ? "device" : "devices");
    if (fault("context_create", ordinal) != Fault::kNone)
      return simulated_failure(e, ordinal, "context_create", false);
    Device *device = get_device(ordinal, "context_create", e);
    if (device == nullptr) return DPT_BACKEND_ERROR;
    auto c = std::make_unique<dpt_backend_context>();
    c->ordinal = ordinal;
    c->flags = o.flags;
    c->device = device;
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live_contexts.insert(c.get());
    }
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
  try {
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      if (live_contexts.erase(ctx) == 0) return;  // not a live context: nothing of ours to free
    }
    drain(*ctx);  // nothing may still use what is freed
    release_all(*ctx->device, ctx);
    delete ctx;
  } catch (...) {
  }
}

int context_synchronize(dpt_backend_context *ctx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "context_synchronize",
                      [&](dpt_backend_context &c) { return synchronize(c, e); });
}

}  // namespace dpt_sim
