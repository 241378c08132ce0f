// The module's op kernels (modules/interface/op_call.h: the call, and each op's members and semantics).
// One file per op family in ops/ defines the OpKernel of each of its ops; ops/registry.cpp lists them, one
// line per op. op_supported, op_forward and op_backward (module.cpp) find the kernel by the op's name,
// check what every op shares (check_call) and run it on the context's stream. Adding an op to the module:
// its file here, and its line in the registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "cuda/context.hpp"
#include "interface/op_call.h"

namespace dpt::cuda {

// One pass of an op, queued on the context's stream (the context's device is current). The call has
// passed check_call; the kernel checks its own shapes and the pointers it needs, then returns 0 or a report.
using OpPass = int (*)(dpt_backend_context &c, const dpt_op_call &call, const Error &e);

struct OpKernel {
  const char *name;                // as in op_call.h
  int32_t min_inputs, max_inputs;  // dpt_op_call::input_count (concat: 2 to DPT_OP_MAX_INPUTS)
  int32_t min_params, max_params;  // dpt_op_call::param_count (weight, then an optional bias)
  OpPass forward, backward;        // nullptr: a view that the executor never calls (flatten)
  bool token_input = false;        // inputs[0] is int32 tokens (token_embedding); every other tensor F32
};

// The kernel of the op named name, or nullptr when the module has none (NULL name: none).
const OpKernel *find_op(const char *name);

// The entry points, as reports name them.
inline constexpr const char *kForward = "op_forward";
inline constexpr const char *kBackward = "op_backward";

// What every op shares: n >= 0, input_count and param_count as the kernel declares them, and every tensor
// of the call (inputs, output, parameters) F32 (a token_input op's inputs[0]: I32) with a rank of 1 ..
// DPT_OP_MAX_RANK and positive dims.
int check_call(const dpt_backend_context &c, const OpKernel &op, const dpt_op_call &call, const char *pass,
               const Error &e);

// Reports "cuda:0: op_forward(conv2d): <text>" as DPT_BACKEND_ERROR_INVALID_ARGUMENT.
int invalid_call(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
                 const char *format, ...) __attribute__((format(printf, 5, 6)));

// A pointer that a pass needs, and its name in the report ("NULL inputs[0].data").
struct Required {
  const char *what;
  const void *pointer;
};
// Reports the first NULL pointer of the list (invalid_call); 0 when there is none.
int require(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
            std::initializer_list<Required> pointers);

// A tensor's dims as "[20, 13, 13]", for reports.
struct DimsText {
  char text[96];
};
DimsText dims_text(const dpt_tensor &t);

// True when t has the given rank and dims.
bool has_dims(const dpt_tensor &t, std::initializer_list<int64_t> dims);
// True when a and b have the same rank and dims.
bool same_dims(const dpt_tensor &a, const dpt_tensor &b);

// The call's tensors as typed pointers: x, y, the parameters (nullptr when the call has fewer), dy, dx.
inline const float *input(const dpt_op_call &call, int i = 0) {
  return static_cast<const float *>(call.inputs[i].data);
}
inline float *output(const dpt_op_call &call) {
  return static_cast<float *>(call.output.data);
}
inline const float *param(const dpt_op_call &call, int p) {
  return p < call.param_count ? static_cast<const float *>(call.params[p].data) : nullptr;
}
inline float *param_grad(const dpt_op_call &call, int p) {
  return p < call.param_count ? call.param_grads[p] : nullptr;
}
inline const float *output_grad(const dpt_op_call &call) {
  return static_cast<const float *>(call.output_grad);
}
inline float *input_grad(const dpt_op_call &call, int i = 0) {
  return static_cast<float *>(call.input_grads[i]);
}

}  // namespace dpt::cuda
