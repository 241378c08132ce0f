// The op members (modules/interface/op_call.h): op_supported, op_forward, op_backward and accumulate.
// The simulator has no arithmetic and no table of ops of its own: an op is the CPU reference kernel of its
// name (dpt::cpu::find_op, src/backend/cpu/ops, library dptrain_cpu_ops), but for the few ops the real CUDA
// module does not run. A call is checked at the call by op_call.h's rules that hold for every op (counts,
// dtypes, ranks, every buffer inside one live allocation of the context's device, sized from the shapes,
// saved_bytes and statistics_count), then queued; when the queue runs, a copy of the call whose pointers are
// the simulator's read-write view of the same bytes goes to the kernel, with scratch on the host. Its
// results are the CPU's bits. The shapes themselves (an output that fits its input and attributes) are
// checked by the core's descriptor of the op (descriptors.cpp), so that the kernel stays inside them.
#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

// Ops of dptrain_cpu_ops that the real CUDA module does not run (op_supported gives 0).
const char *const kNotOnCuda[] = {"dropout"};
// The op whose inputs[0] is int32 tokens (op_call.h); every other tensor of every call is F32.
const char *const kTokenInput = "token_embedding";
// A view (op_call.h): supported, but the executor aliases its input and never calls a kernel.
const char *const kView = "flatten";

bool not_on_cuda(const char *name) {
  for (const char *denied : kNotOnCuda)
    if (std::strcmp(name, denied) == 0) return true;
  return false;
}

// The kernel the simulator runs for the op named name, or nullptr (NULL, unknown, not on CUDA, a view).
const dpt::cpu::OpKernel *sim_kernel(const char *name) {
  if (name == nullptr || not_on_cuda(name)) return nullptr;
  return dpt::cpu::find_op(name);
}

bool is_view(const char *name) {
  return name != nullptr && std::strcmp(name, kView) == 0;
}

// An op call's names in messages, queued work and DPTRAIN_SIM_CUDA_FAIL: "op_forward(conv2d)". Made once per
// op and kept (queued work holds the pointer); only ops the simulator knows get one, so there are few.
struct Labels {
  std::string forward, backward;
};

const Labels *labels_of(const char *name) {
  static std::mutex mutex;
  static std::map<std::string, Labels, std::less<>> labels;  // nodes never move
  std::lock_guard<std::mutex> lock(mutex);
  auto it = labels.find(std::string_view(name));
  if (it == labels.end())
    it = labels
             .emplace(name, Labels{std::string("op_forward(") + name + ")",
                                   std::string("op_backward(") + name + ")"})
             .first;
  return &it->second;
}

// The labels of a call's op, or nullptr when the simulator runs no such op.
const Labels *labels_of_call(const char *name) {
  return sim_kernel(name) != nullptr || is_view(name) ? labels_of(name) : nullptr;
}

// Names of the buffer arguments in messages (static: a queued operation names them when it runs).
const char *const kInputNames[DPT_OP_MAX_INPUTS] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
const char *const kInputGradNames[DPT_OP_MAX_INPUTS] = {"input_grads[0]", "input_grads[1]", "input_grads[2]",
                                                        "input_grads[3]"};
const char *const kParamNames[DPT_OP_MAX_PARAMS] = {"params[0]", "params[1]", "params[2]", "params[3]"};
const char *const kParamGradNames[DPT_OP_MAX_PARAMS] = {"param_grads[0]", "param_grads[1]", "param_grads[2]",
                                                        "param_grads[3]"};
const char *const kBufferNames[DPT_OP_MAX_PARAMS] = {"buffers[0]", "buffers[1]", "buffers[2]", "buffers[3]"};

std::string dims_text(const dpt_tensor &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.rank && i < DPT_OP_MAX_RANK; ++i)
    s += (i > 0 ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

const char *dtype_name(int32_t dtype) {
  switch (dtype) {
    case DPT_DTYPE_F32:
      return "f32";
    case DPT_DTYPE_BF16:
      return "bf16";
    case DPT_DTYPE_F16:
      return "f16";
    case DPT_DTYPE_I32:
      return "i32";
    default:
      return "unknown";
  }
}

bool known_matmul_dtype(int32_t dtype) {
  return dtype == DPT_DTYPE_F32 || dtype == DPT_DTYPE_BF16 || dtype == DPT_DTYPE_F16;
}

// A tensor of the call: rank 1 .. DPT_OP_MAX_RANK, every dim positive, at most INT_MAX elements (BLAS
// takes int), F32 (or the dtype given). Its elements (per sample for activations, in all for parameters and
// buffers) in count.
int check_tensor(const dpt_backend_context &c, const char *call, const char *name, const dpt_tensor &t,
                 size_t &count, const Error &e, int32_t dtype = DPT_DTYPE_F32) {
  if (t.rank < 1 || t.rank > DPT_OP_MAX_RANK)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s has rank %d (1 .. %d)", c.ordinal,
                  call, name, int(t.rank), DPT_OP_MAX_RANK);
  size_t size = 1;
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.dims[i] <= 0 || t.dims[i] > INT_MAX || __builtin_mul_overflow(size, size_t(t.dims[i]), &size) ||
        size > size_t(INT_MAX))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: %s has dims %s (each positive, at most %d elements)", c.ordinal, call, name,
                    dims_text(t).c_str(), INT_MAX);
  if (t.dtype != dtype)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s has dtype %d (%s): %s", c.ordinal,
                  call, name, int(t.dtype), dtype_name(t.dtype),
                  dtype == DPT_DTYPE_I32 ? "expected i32 tokens" : "this module runs f32 only");
  count = size;
  return 0;
}

int too_large(const dpt_backend_context &c, const char *call, const char *name, const Error &e) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s: sizes overflow", c.ordinal, call,
                name);
}

// A call whose op the simulator does not run.
int unknown_op(const dpt_backend_context &c, const char *member, const char *name, const Error &e) {
  if (name == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL op name", c.ordinal, member);
  if (dpt::cpu::find_op(name) != nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: op '%.64s' is not supported by the CUDA module (op_supported gives 0)",
                  c.ordinal, member, name);
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: unknown op '%.64s'", c.ordinal, member,
                name);
}

int check_count(const dpt_backend_context &c, const char *call, const char *what, int32_t count, int low,
                int high, const Error &e) {
  if (count >= low && count <= high) return 0;
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s %d (%d .. %d)", c.ordinal, call, what,
                int(count), low, high);
}

// The checked pointers of one call, and the copy of the call the kernel gets, whose pointers are the same
// bytes in the simulator's read-write view. Pointers the pass does not define stay NULL in the copy.
class Buffers {
 public:
  Buffers(const dpt_backend_context &c, const char *call, const Error &e) : c_(c), call_(call), e_(e) {}

  // count floats at p (optional: NULL allowed). An extent of 0 (no samples) is not checked: the kernel
  // gets NULL there and reads nothing.
  int floats(const char *name, const void *p, size_t count, bool optional, float *&host) {
    host = nullptr;
    if (count == 0) return 0;
    Span s;
    if (int rc = dpt_sim::floats(c_, call_, name, p, count, optional, s, e_)) return rc;
    return keep(s, host);
  }
  // bytes of p aligned to alignment (doubles: saved, statistics). Of 0 bytes, p may be NULL; when it is not,
  // it is checked to point into a live allocation of the context's device and passed on.
  int bytes(const char *name, const void *p, size_t bytes, size_t alignment, void *&host) {
    host = nullptr;
    Span s;
    if (int rc = resolve(c_, call_, name, p, bytes, alignment, Where::kContextDevice, bytes == 0, s, e_))
      return rc;
    return keep(s, host);
  }

  std::vector<Span> spans;

 private:
  template <typename T>
  int keep(const Span &s, T *&host) {
    if (s) {
      host = reinterpret_cast<T *>(s.host);
      spans.push_back(s);
    }
    return 0;
  }

  const dpt_backend_context &c_;
  const char *call_;
  const Error &e_;
};

// The checks of one op call, then the CPU kernel queued on the context.
int check_and_enqueue(dpt_backend_context &c, const dpt::cpu::OpKernel &kernel, const dpt_op_call &k,
                      bool backward, const char *call, const Error &e) {
  const int kInvalid = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  if (k.n < 0 || k.n > INT_MAX)
    return report(e, kInvalid, "cuda:%d: %s: n %" PRId64 " samples (0 .. %d)", c.ordinal, call, k.n, INT_MAX);
  if (k.phase != DPT_OP_PHASE_SINGLE && k.phase != DPT_OP_PHASE_STATISTICS && k.phase != DPT_OP_PHASE_APPLY)
    return report(e, kInvalid, "cuda:%d: %s: phase %d (DPT_OP_PHASE_SINGLE, _STATISTICS or _APPLY)",
                  c.ordinal, call, int(k.phase));
  // As the real module: matrix products on float32, bfloat16 or float16 inputs (the CPU kernels run them).
  if (!known_matmul_dtype(k.matmul_dtype))
    return report(e, kInvalid, "cuda:%d: %s: matmul_dtype %d (float32, bfloat16 or float16)", c.ordinal, call,
                  int(k.matmul_dtype));
  if (int rc = check_count(c, call, "input_count", k.input_count, 1, DPT_OP_MAX_INPUTS, e)) return rc;
  if (int rc = check_count(c, call, "param_count", k.param_count, 0, DPT_OP_MAX_PARAMS, e)) return rc;
  if (int rc = check_count(c, call, "buffer_count", k.buffer_count, 0, DPT_OP_MAX_PARAMS, e)) return rc;

  // Every tensor present: per sample for activations, whole tensors for parameters and buffers.
  size_t in_size[DPT_OP_MAX_INPUTS] = {}, out_size = 0, param_size[DPT_OP_MAX_PARAMS] = {},
         buffer_size[DPT_OP_MAX_PARAMS] = {};
  for (int32_t i = 0; i < k.input_count; ++i)
    if (int rc = check_tensor(c, call, kInputNames[i], k.inputs[i], in_size[i], e,
                              i == 0 && std::strcmp(k.op, kTokenInput) == 0 ? DPT_DTYPE_I32 : DPT_DTYPE_F32))
      return rc;
  if (int rc = check_tensor(c, call, "output", k.output, out_size, e)) return rc;
  for (int32_t p = 0; p < k.param_count; ++p)
    if (int rc = check_tensor(c, call, kParamNames[p], k.params[p], param_size[p], e)) return rc;
  for (int32_t b = 0; b < k.buffer_count; ++b)
    if (int rc = check_tensor(c, call, kBufferNames[b], k.buffers[b], buffer_size[b], e)) return rc;
  // The shapes, by the core's descriptor of the op; and what it keeps in saved and statistics, which a
  // caller that leaves saved_bytes or statistics_count 0 gets checked (an extent the kernel uses).
  DescriptorNeeds needs;
  const std::string problem = descriptor_problem(k, needs);
  if (!problem.empty()) return report(e, kInvalid, "cuda:%d: %s: %s", c.ordinal, call, problem.c_str());
  size_t saved_bytes = k.saved_bytes, statistics_count = k.statistics_count;
  if (needs.found) {
    if (saved_bytes != 0 && saved_bytes < needs.saved_bytes)
      return report(e, kInvalid, "cuda:%d: %s: saved_bytes %zu: the op keeps %zu (its descriptor)", c.ordinal,
                    call, saved_bytes, needs.saved_bytes);
    if (statistics_count != 0 && statistics_count < needs.statistics_count)
      return report(e, kInvalid, "cuda:%d: %s: statistics_count %zu: the op has %zu (its descriptor)",
                    c.ordinal, call, statistics_count, needs.statistics_count);
    saved_bytes = std::max(saved_bytes, needs.saved_bytes);
    statistics_count = std::max(statistics_count, needs.statistics_count);
  }
  // No samples: a no-op, but for the two-phase calls (statistics over the batch), which run for n = 0 too.
  if (k.n == 0 && k.phase == DPT_OP_PHASE_SINGLE) return 0;
  const size_t n = size_t(k.n);
  size_t out_count = 0, statistics_bytes = 0;
  if (!product({n, out_size}, out_count)) return too_large(c, call, "output", e);
  if (!checked_bytes(statistics_count, sizeof(double), statistics_bytes))
    return too_large(c, call, "statistics", e);

  dpt_op_call host = k;
  host.saved = host.scratch = nullptr;
  host.scratch_bytes = 0;
  host.statistics = nullptr;
  host.output_grad = nullptr;
  for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) host.inputs[i].data = host.input_grads[i] = nullptr;
  host.output.data = nullptr;
  for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) {
    host.params[p].data = host.buffers[p].data = nullptr;
    host.param_grads[p] = nullptr;
  }
  Buffers b(c, call, e);
  float *f = nullptr;
  void *v = nullptr;
  for (int32_t i = 0; i < k.input_count; ++i) {
    size_t count = 0;
    if (!product({n, in_size[i]}, count)) return too_large(c, call, kInputNames[i], e);
    if (int rc = b.floats(kInputNames[i], k.inputs[i].data, count, false, f)) return rc;
    host.inputs[i].data = f;
    if (backward) {
      if (int rc = b.floats(kInputGradNames[i], k.input_grads[i], count, true, f)) return rc;
      host.input_grads[i] = f;
    }
  }
  if (int rc = b.floats("output", k.output.data, out_count, false, f)) return rc;
  host.output.data = f;
  for (int32_t p = 0; p < k.param_count; ++p) {
    if (int rc = b.floats(kParamNames[p], k.params[p].data, param_size[p], false, f)) return rc;
    host.params[p].data = f;
    if (backward) {
      if (int rc = b.floats(kParamGradNames[p], k.param_grads[p], param_size[p], true, f)) return rc;
      host.param_grads[p] = f;
    }
  }
  for (int32_t i = 0; i < k.buffer_count; ++i) {
    if (int rc = b.floats(kBufferNames[i], k.buffers[i].data, buffer_size[i], false, f)) return rc;
    host.buffers[i].data = f;
  }
  if (int rc = b.bytes("saved", k.saved, saved_bytes, alignof(double), v)) return rc;
  host.saved = v;
  if (int rc = b.bytes("statistics", k.statistics, statistics_bytes, alignof(double), v)) return rc;
  host.statistics = static_cast<double *>(v);
  if (backward) {
    if (int rc = b.floats("output_grad", k.output_grad, out_count, false, f)) return rc;
    host.output_grad = f;
  }

  const dpt::cpu::OpKernel *run = &kernel;
  return enqueue(c, call, std::move(b.spans), [host, run, backward]() mutable {
    dpt::blas::use_single_thread();  // the simulated devices already run in parallel
    // The kernel's scratch on the host, garbage (NaN bytes) as fresh device memory is.
    const size_t bytes = run->scratch_bytes != nullptr ? run->scratch_bytes(host) : 0;
    std::unique_ptr<float[]> scratch;
    if (bytes > 0) {
      const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
      scratch.reset(new float[floats]);
      std::memset(scratch.get(), 0xFF, floats * sizeof(float));
      host.scratch = scratch.get();
      host.scratch_bytes = bytes;
    }
    (backward ? run->backward : run->forward)(host);
  });
}

int op_call(dpt_backend_context *ctx, const dpt_op_call *call, bool backward, const Error &e) {
  const char *member = backward ? "op_backward" : "op_forward";
  // The label names the op ("op_forward(conv2d)"), so that messages, queued work and DPTRAIN_SIM_CUDA_FAIL
  // entries can tell the ops apart; an entry of the bare member matches every op.
  const Labels *labels = call != nullptr ? labels_of_call(call->op) : nullptr;
  const char *label = labels == nullptr ? member
                      : backward        ? labels->backward.c_str()
                                        : labels->forward.c_str();
  return with_context(ctx, e, label, [&](dpt_backend_context &c) {
    if (call == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL call", c.ordinal, member);
    if (is_view(call->op))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: %s is a view (op_call.h): the executor aliases its input and never calls a "
                    "kernel",
                    c.ordinal, label, kView);
    const dpt::cpu::OpKernel *kernel = sim_kernel(call->op);
    if (kernel == nullptr) return unknown_op(c, member, call->op, e);
    return check_and_enqueue(c, *kernel, *call, backward, label, e);
  });
}

}  // namespace

int op_supported(const char *op, int32_t dtype, int32_t matmul_dtype) {
  try {
    if (dtype != DPT_DTYPE_F32 || !known_matmul_dtype(matmul_dtype)) return 0;
    return sim_kernel(op) != nullptr || is_view(op) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int op_forward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size) {
  return op_call(ctx, call, false, Error{error, error_size});
}

int op_backward(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size) {
  return op_call(ctx, call, true, Error{error, error_size});
}

int accumulate(dpt_backend_context *ctx, float *y, const float *x, size_t count, char *error,
               size_t error_size) {
  const Error e{error, error_size};
  const char *call = "accumulate";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (count == 0) return 0;
    Span sy, sx;
    if (int rc = floats(c, call, "y", y, count, false, sy, e)) return rc;
    if (int rc = floats(c, call, "x", x, count, false, sx, e)) return rc;
    if (sy.host < sx.host + sx.bytes && sx.host < sy.host + sy.bytes)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: y %p and x %p overlap (%zu floats)",
                    c.ordinal, call, static_cast<void *>(y), x, count);
    return enqueue(c, call, {sy, sx}, [=] { dpt::cpu::accumulate(sy.f(), sx.f(), count); });
  });
}

bool op_label_known(const std::string &member) {
  for (const char *prefix : {"op_forward(", "op_backward("}) {
    const size_t length = std::strlen(prefix);
    if (member.size() > length + 1 && member.compare(0, length, prefix) == 0 && member.back() == ')') {
      const std::string name = member.substr(length, member.size() - length - 1);
      return labels_of_call(name.c_str()) != nullptr;
    }
  }
  return false;
}

}  // namespace dpt_sim
