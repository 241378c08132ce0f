// The op members (modules/interface/op_call.h): op_supported, op_forward, op_backward and accumulate.
// The simulator has no arithmetic of its own for them: a call is checked at the call (the op, its counts,
// dtypes and shapes by the rules of op_call.h's table, every buffer inside one live allocation of the
// context's device), then queued; when the queue runs, a copy of the call whose pointers are the
// simulator's read-write view of the same bytes goes to the CPU reference kernel of the op
// (src/backend/cpu/ops, library dptrain_cpu_ops), with scratch on the host. Its results are the CPU's bits.
#include <cinttypes>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

// The call's tensors and attributes against one op's rules: "" when they agree, else why not.
using ShapeRule = std::string (*)(const dpt_op_call &c);

// One op the simulator runs: exactly the ops of the real CUDA module (modules/cuda/ops), so every op the
// CPU has but "dropout", which the CUDA module does not run.
struct SimOp {
  const char *name;
  const char *forward_label, *backward_label;  // the call in messages and in DPTRAIN_SIM_CUDA_FAIL
  int min_params, max_params;
  bool saves_indices;  // saved: one int32 per output element (max_pool2d)
  ShapeRule rule;      // nullptr: a view (flatten), for which no kernel runs
};

std::string dims_text(const dpt_tensor &t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.rank && i < DPT_OP_MAX_RANK; ++i)
    s += (i > 0 ? ", " : "") + std::to_string(t.dims[i]);
  return s + "]";
}

std::string shape_text(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (const int64_t d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

// "" when t has exactly the dims, else the difference.
std::string expect(const char *name, const dpt_tensor &t, std::initializer_list<int64_t> dims) {
  bool same = t.rank == int32_t(dims.size());
  int32_t i = 0;
  for (const int64_t d : dims) same = same && t.dims[i++] == d;
  if (same) return "";
  return std::string(name) + " is " + dims_text(t) + ", expected " + shape_text(dims);
}

std::string first_problem(std::initializer_list<std::string> problems) {
  for (const std::string &p : problems)
    if (!p.empty()) return p;
  return "";
}

// "dense": ints[0] = units; y [units]; weight [units, in]; optional bias [units].
std::string dense_rule(const dpt_op_call &c) {
  const int64_t units = c.ints[0], in = dpt_tensor_sample_size(&c.inputs[0]);
  if (units <= 0 || units > INT_MAX) return "ints[0] (units) is " + std::to_string(units);
  return first_problem({expect("output", c.output, {units}),
                        expect("params[0] (weight)", c.params[0], {units, in}),
                        c.param_count > 1 ? expect("params[1] (bias)", c.params[1], {units}) : ""});
}

// "conv2d": x [c, h, w] -> y [out_c, oh, ow]; ints = {out_c, kernel, stride, padding}; weight
// [out_c, c, k, k]; optional bias [out_c].
std::string conv2d_rule(const dpt_op_call &c) {
  const dpt_tensor &x = c.inputs[0];
  if (x.rank != 3) return "inputs[0] is " + dims_text(x) + ", expected [channels, height, width]";
  const int64_t out_c = c.ints[0], k = c.ints[1], stride = c.ints[2], padding = c.ints[3];
  if (out_c <= 0 || k <= 0 || stride <= 0 || padding < 0 || out_c > INT_MAX || k > INT_MAX ||
      stride > INT_MAX || padding > INT_MAX)
    return "ints {out_c, kernel, stride, padding} = " + shape_text({out_c, k, stride, padding});
  const int64_t h = x.dims[1] + 2 * padding, w = x.dims[2] + 2 * padding;
  if (k > h || k > w)
    return "kernel " + std::to_string(k) + " does not fit the padded input " + shape_text({x.dims[0], h, w});
  const int64_t oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
  return first_problem({expect("output", c.output, {out_c, oh, ow}),
                        expect("params[0] (weight)", c.params[0], {out_c, x.dims[0], k, k}),
                        c.param_count > 1 ? expect("params[1] (bias)", c.params[1], {out_c}) : ""});
}

// "avg_pool2d", "max_pool2d": ints = {window, stride}, no padding, sizes round down.
std::string pool_rule(const dpt_op_call &c) {
  const dpt_tensor &x = c.inputs[0];
  if (x.rank != 3) return "inputs[0] is " + dims_text(x) + ", expected [channels, height, width]";
  const int64_t window = c.ints[0], stride = c.ints[1];
  if (window <= 0 || stride <= 0 || window > INT_MAX || stride > INT_MAX)
    return "ints {window, stride} = " + shape_text({window, stride});
  if (window > x.dims[1] || window > x.dims[2])
    return "window " + std::to_string(window) + " does not fit the input " + dims_text(x);
  return expect("output", c.output,
                {x.dims[0], (x.dims[1] - window) / stride + 1, (x.dims[2] - window) / stride + 1});
}

// "relu", "sigmoid", "tanh": the output has the input's shape.
std::string elementwise_rule(const dpt_op_call &c) {
  const dpt_tensor &x = c.inputs[0];
  bool same = c.output.rank == x.rank;
  for (int32_t i = 0; same && i < x.rank; ++i) same = c.output.dims[i] == x.dims[i];
  return same ? "" : "output is " + dims_text(c.output) + ", expected the input's " + dims_text(x);
}

// clang-format off
const SimOp kOps[] = {
    {"avg_pool2d", "op_forward(avg_pool2d)", "op_backward(avg_pool2d)", 0, 0, false, pool_rule},
    {"conv2d",     "op_forward(conv2d)",     "op_backward(conv2d)",     1, 2, false, conv2d_rule},
    {"dense",      "op_forward(dense)",      "op_backward(dense)",      1, 2, false, dense_rule},
    {"flatten",    "op_forward(flatten)",    "op_backward(flatten)",    0, 0, false, nullptr},
    {"max_pool2d", "op_forward(max_pool2d)", "op_backward(max_pool2d)", 0, 0, true,  pool_rule},
    {"relu",       "op_forward(relu)",       "op_backward(relu)",       0, 0, false, elementwise_rule},
    {"sigmoid",    "op_forward(sigmoid)",    "op_backward(sigmoid)",    0, 0, false, elementwise_rule},
    {"tanh",       "op_forward(tanh)",       "op_backward(tanh)",       0, 0, false, elementwise_rule},
};
// clang-format on

const SimOp *find_sim_op(const char *name) {
  if (name == nullptr) return nullptr;
  for (const SimOp &op : kOps)
    if (std::strcmp(op.name, name) == 0) return &op;
  return nullptr;
}

// Names of the buffer arguments in messages (static: a queued operation names them when it runs).
const char *const kInputNames[DPT_OP_MAX_INPUTS] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
const char *const kInputGradNames[DPT_OP_MAX_INPUTS] = {"input_grads[0]", "input_grads[1]", "input_grads[2]",
                                                        "input_grads[3]"};
const char *const kParamNames[DPT_OP_MAX_PARAMS] = {"params[0]", "params[1]", "params[2]", "params[3]"};
const char *const kParamGradNames[DPT_OP_MAX_PARAMS] = {"param_grads[0]", "param_grads[1]", "param_grads[2]",
                                                        "param_grads[3]"};

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

// A tensor of the call: rank 1 .. DPT_OP_MAX_RANK, every dim positive, at most INT_MAX elements (BLAS
// takes int), F32. Its elements in count.
int check_tensor(const dpt_backend_context &c, const char *call, const char *name, const dpt_tensor &t,
                 size_t &count, const Error &e) {
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
  if (t.dtype != DPT_DTYPE_F32)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s has dtype %d (%s): this module runs f32 only", c.ordinal, call, name,
                  int(t.dtype), dtype_name(t.dtype));
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

// The checks of one op call, then the CPU kernel queued on the context.
int check_and_enqueue(dpt_backend_context &c, const SimOp &op, const dpt_op_call &k, bool backward,
                      const char *call, const Error &e) {
  const int kInvalid = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  if (op.rule == nullptr)
    return report(e, kInvalid,
                  "cuda:%d: %s: %s is a view (op_call.h): the executor aliases its input and never calls a "
                  "kernel",
                  c.ordinal, call, op.name);
  const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op(op.name);
  if (kernel == nullptr)
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: no CPU reference kernel of '%s'", c.ordinal, call,
                  op.name);
  if (k.n < 0 || k.n > INT_MAX)
    return report(e, kInvalid, "cuda:%d: %s: n %" PRId64 " samples (0 .. %d)", c.ordinal, call, k.n, INT_MAX);
  if (k.input_count != 1)
    return report(e, kInvalid, "cuda:%d: %s: input_count %d, expected 1", c.ordinal, call,
                  int(k.input_count));
  if (k.param_count < op.min_params || k.param_count > op.max_params)
    return report(e, kInvalid, "cuda:%d: %s: param_count %d, expected %d .. %d", c.ordinal, call,
                  int(k.param_count), op.min_params, op.max_params);
  if (k.buffer_count != 0)
    return report(e, kInvalid, "cuda:%d: %s: buffer_count %d, expected 0", c.ordinal, call,
                  int(k.buffer_count));

  // Shapes: per sample for activations, whole tensors for parameters.
  size_t in_size[DPT_OP_MAX_INPUTS] = {}, out_size = 0, param_size[DPT_OP_MAX_PARAMS] = {};
  for (int32_t i = 0; i < k.input_count; ++i)
    if (int rc = check_tensor(c, call, kInputNames[i], k.inputs[i], in_size[i], e)) return rc;
  if (int rc = check_tensor(c, call, "output", k.output, out_size, e)) return rc;
  for (int32_t p = 0; p < k.param_count; ++p)
    if (int rc = check_tensor(c, call, kParamNames[p], k.params[p], param_size[p], e)) return rc;
  const std::string problem = op.rule(k);
  if (!problem.empty()) return report(e, kInvalid, "cuda:%d: %s: %s", c.ordinal, call, problem.c_str());
  if (k.n == 0) return 0;  // no samples: a no-op
  const size_t n = size_t(k.n);
  size_t out_count = 0, saved_bytes = 0;
  if (!product({n, out_size}, out_count)) return too_large(c, call, "output", e);

  // Every buffer inside one live allocation of the context's device; the copy the kernel gets points to the
  // same bytes in the simulator's read-write view. Pointers the op does not define stay NULL in the copy.
  dpt_op_call host = k;
  host.op = op.name;
  host.saved = nullptr;
  host.scratch = nullptr;
  host.scratch_bytes = 0;
  host.output_grad = nullptr;
  for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) host.inputs[i].data = host.input_grads[i] = nullptr;
  for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) {
    host.params[p].data = host.buffers[p].data = nullptr;
    host.param_grads[p] = nullptr;
  }
  std::vector<Span> spans;
  Span s;
  for (int32_t i = 0; i < k.input_count; ++i) {
    size_t count = 0;
    if (!product({n, in_size[i]}, count)) return too_large(c, call, kInputNames[i], e);
    if (int rc = floats(c, call, kInputNames[i], k.inputs[i].data, count, false, s, e)) return rc;
    host.inputs[i].data = s.host;
    spans.push_back(s);
    if (backward) {
      if (int rc = floats(c, call, kInputGradNames[i], k.input_grads[i], count, true, s, e)) return rc;
      host.input_grads[i] = s ? s.host : nullptr;
      spans.push_back(s);
    }
  }
  if (int rc = floats(c, call, "output", k.output.data, out_count, false, s, e)) return rc;
  host.output.data = s.host;
  spans.push_back(s);
  for (int32_t p = 0; p < k.param_count; ++p) {
    if (int rc = floats(c, call, kParamNames[p], k.params[p].data, param_size[p], false, s, e)) return rc;
    host.params[p].data = s.host;
    spans.push_back(s);
    if (backward) {
      if (int rc = floats(c, call, kParamGradNames[p], k.param_grads[p], param_size[p], true, s, e))
        return rc;
      host.param_grads[p] = s ? s.f() : nullptr;
      spans.push_back(s);
    }
  }
  if (op.saves_indices) {
    if (!checked_bytes(out_count, sizeof(int32_t), saved_bytes)) return too_large(c, call, "saved", e);
    if (int rc = resolve(c, call, "saved", k.saved, saved_bytes, alignof(int32_t), Where::kContextDevice,
                         false, s, e))
      return rc;
    host.saved = s.host;
    spans.push_back(s);
  }
  if (backward) {
    if (int rc = floats(c, call, "output_grad", k.output_grad, out_count, false, s, e)) return rc;
    host.output_grad = s.host;
    spans.push_back(s);
  }

  return enqueue(c, call, std::move(spans), [host, kernel, backward]() mutable {
    dpt::blas::use_single_thread();  // the simulated devices already run in parallel
    // The kernel's scratch on the host, garbage (NaN bytes) as fresh device memory is.
    const size_t bytes = kernel->scratch_bytes != nullptr ? kernel->scratch_bytes(host) : 0;
    std::unique_ptr<float[]> scratch;
    if (bytes > 0) {
      const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
      scratch.reset(new float[floats]);
      std::memset(scratch.get(), 0xFF, floats * sizeof(float));
      host.scratch = scratch.get();
      host.scratch_bytes = bytes;
    }
    (backward ? kernel->backward : kernel->forward)(host);
  });
}

int op_call(dpt_backend_context *ctx, const dpt_op_call *call, bool backward, const Error &e) {
  const char *member = backward ? "op_backward" : "op_forward";
  // The label names the op ("op_forward(conv2d)"), so that messages, queued work and DPTRAIN_SIM_CUDA_FAIL
  // entries can tell the ops apart; an entry of the bare member matches every op.
  const SimOp *op = call != nullptr ? find_sim_op(call->op) : nullptr;
  const char *label = op == nullptr ? member : backward ? op->backward_label : op->forward_label;
  return with_context(ctx, e, label, [&](dpt_backend_context &c) {
    if (call == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL call", c.ordinal, member);
    if (op == nullptr) return unknown_op(c, member, call->op, e);
    return check_and_enqueue(c, *op, *call, backward, label, e);
  });
}

}  // namespace

int op_supported(const char *op, int32_t dtype) {
  try {
    if (dtype != DPT_DTYPE_F32) return 0;
    const SimOp *s = find_sim_op(op);
    if (s == nullptr) return 0;
    return s->rule == nullptr || dpt::cpu::find_op(s->name) != nullptr ? 1 : 0;
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
  for (const SimOp &op : kOps)
    if (member == op.forward_label || member == op.backward_label) return true;
  return false;
}

}  // namespace dpt_sim
