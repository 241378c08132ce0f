// The checks that every op's call shares, and the reports of the op kernels.
#include <cstdarg>
#include <cstdio>

#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

const char *op_name(const dpt_op_call &call) {
  return call.op != nullptr ? call.op : "?";
}

// One tensor of the call: rank 1 .. DPT_OP_MAX_RANK, positive dims, F32.
int check_tensor(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
                 const dpt_tensor &t, const char *what, int index, int32_t dtype = DPT_DTYPE_F32) {
  char name[32];
  if (index >= 0)
    std::snprintf(name, sizeof name, "%s[%d]", what, index);
  else
    std::snprintf(name, sizeof name, "%s", what);
  if (t.rank < 1 || t.rank > DPT_OP_MAX_RANK)
    return invalid_call(c, call, pass, e, "%s has rank %d (1 .. %d)", name, int(t.rank), DPT_OP_MAX_RANK);
  for (int32_t i = 0; i < t.rank; ++i)
    if (t.dims[i] <= 0) return invalid_call(c, call, pass, e, "%s has dims %s", name, dims_text(t).text);
  if (t.dtype != dtype)
    return invalid_call(c, call, pass, e, "%s has dtype %d (expected %d: %s)", name, int(t.dtype), int(dtype),
                        dtype == DPT_DTYPE_I32 ? "int32 tokens" : "the CUDA module has F32 kernels only");
  return 0;
}

}  // namespace

int invalid_call(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
                 const char *format, ...) {
  char text[384];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s(%s): %s", c.ordinal, pass, op_name(call),
                text);
}

int require(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
            std::initializer_list<Required> pointers) {
  for (const Required &r : pointers)
    if (r.pointer == nullptr) return invalid_call(c, call, pass, e, "NULL %s", r.what);
  return 0;
}

// At most 4 dims of 20 characters, separators and brackets: 91 characters, never truncated.
DimsText dims_text(const dpt_tensor &t) {
  DimsText d{};
  int used = std::snprintf(d.text, sizeof d.text, "[");
  for (int32_t i = 0; i < t.rank && i < DPT_OP_MAX_RANK; ++i)
    used += std::snprintf(d.text + used, sizeof d.text - size_t(used), i == 0 ? "%lld" : ", %lld",
                          (long long)t.dims[i]);
  std::snprintf(d.text + used, sizeof d.text - size_t(used), "]");
  return d;
}

bool has_dims(const dpt_tensor &t, std::initializer_list<int64_t> dims) {
  if (t.rank != int32_t(dims.size())) return false;
  int32_t i = 0;
  for (const int64_t d : dims)
    if (t.dims[i++] != d) return false;
  return true;
}

bool same_dims(const dpt_tensor &a, const dpt_tensor &b) {
  if (a.rank != b.rank) return false;
  for (int32_t i = 0; i < a.rank && i < DPT_OP_MAX_RANK; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

int check_call(const dpt_backend_context &c, const OpKernel &op, const dpt_op_call &call, const char *pass,
               const Error &e) {
  if (call.n < 0) return invalid_call(c, call, pass, e, "negative sample count %lld", (long long)call.n);
  if (call.input_count < op.min_inputs || call.input_count > op.max_inputs) {
    if (op.min_inputs == op.max_inputs)
      return invalid_call(c, call, pass, e, "%d inputs (the op takes %d)", int(call.input_count),
                          int(op.min_inputs));
    return invalid_call(c, call, pass, e, "%d inputs (the op takes %d to %d)", int(call.input_count),
                        int(op.min_inputs), int(op.max_inputs));
  }
  if (call.param_count < op.min_params || call.param_count > op.max_params) {
    if (op.min_params == op.max_params)
      return invalid_call(c, call, pass, e, "%d parameters (the op takes %d)", int(call.param_count),
                          int(op.min_params));
    return invalid_call(c, call, pass, e, "%d parameters (the op takes %d to %d)", int(call.param_count),
                        int(op.min_params), int(op.max_params));
  }
  for (int i = 0; i < call.input_count; ++i)
    if (const int rc = check_tensor(c, call, pass, e, call.inputs[i], "inputs", i,
                                    op.token_input && i == 0 ? DPT_DTYPE_I32 : DPT_DTYPE_F32))
      return rc;
  if (const int rc = check_tensor(c, call, pass, e, call.output, "output", -1)) return rc;
  for (int p = 0; p < call.param_count; ++p)
    if (const int rc = check_tensor(c, call, pass, e, call.params[p], "params", p)) return rc;
  return 0;
}

}  // namespace dpt::cuda
