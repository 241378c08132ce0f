// "add": y = x0 + x1 (the residual join), one rounded float addition per element (__fadd_rn) as in the CPU
// kernel: the same bits. Backward copies dy into each input gradient that is asked for (device to device).
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

__global__ void add_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ y,
                           size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(a[i], b[i]);
}

// The elements of the call: both inputs and the output have the same dims.
int count_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             size_t &count) {
  const dpt_tensor &a = call.inputs[0], &b = call.inputs[1], &y = call.output;
  if (!same_dims(a, y) || !same_dims(b, y))
    return invalid_call(c, call, pass, e, "bad shape (inputs %s and %s, output %s: all the same)",
                        dims_text(a).text, dims_text(b).text, dims_text(y).text);
  count = size_t(call.n) * size_t(dpt_tensor_sample_size(&y));
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t count = 0;
  if (const int rc = count_of(c, call, kForward, e, count)) return rc;
  if (count == 0) return 0;
  const float *a = input(call, 0), *b = input(call, 1);
  float *y = output(call);
  if (const int rc =
          require(c, call, kForward, e, {{"inputs[0].data", a}, {"inputs[1].data", b}, {"output.data", y}}))
    return rc;
  add_kernel<<<grid_for(count), kOpThreads, 0, c.stream>>>(a, b, y, count);
  return check_launch(c, "add kernel", e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  size_t count = 0;
  if (const int rc = count_of(c, call, kBackward, e, count)) return rc;
  if (count == 0 || (input_grad(call, 0) == nullptr && input_grad(call, 1) == nullptr)) return 0;
  const float *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output_grad", dy}})) return rc;
  for (int i = 0; i < 2; ++i)
    if (float *dx = input_grad(call, i))
      DPT_CUDA("cudaMemcpyAsync (add backward)",
               cudaMemcpyAsync(dx, dy, count * sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
  return 0;
}

}  // namespace

extern const OpKernel kAdd = {"add", 2, 2, 0, 0, forward, backward};

}  // namespace dpt::cuda
