// "gelu": x * Phi(x), exactly (erf, ints[0] = 0) or by the tanh approximation (ints[0] = 1), as PyTorch's
// approximate='none' / 'tanh'. The erf form: the CPU kernel's expressions, term for term, in double per
// element and rounded to float once (backward: float(dy * gelu'(x)), reading x), with erf and exp of
// interface/op_math.hpp, as the CPU kernel: compiled without contraction, the same bits. The tanh form:
// interface/op_math.hpp's float functions, the CPU kernel's own: the same bits too.
#include "cuda/ops/launch.cuh"
#include "cuda/ops/ops.hpp"
#include "interface/op_math.hpp"

namespace dpt::cuda {

namespace {

constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)

__device__ double gelu_erf(double x) {
  return 0.5 * x * (1.0 + op_math::erf_double(x * kInvSqrt2));
}

__device__ double gelu_erf_grad(double x) {
  return 0.5 * (1.0 + op_math::erf_double(x * kInvSqrt2)) +
         x * kInvSqrt2Pi * op_math::exp_double(-0.5 * x * x);
}

__global__ void gelu_forward_kernel(const float *__restrict__ x, float *__restrict__ y, size_t count,
                                    bool tanh_form) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = tanh_form ? op_math::gelu_tanh(x[i]) : float(gelu_erf(double(x[i])));
}

__global__ void gelu_backward_kernel(const float *__restrict__ x, const float *__restrict__ dy,
                                     float *__restrict__ dx, size_t count, bool tanh_form) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    dx[i] = tanh_form ? dy[i] * op_math::gelu_tanh_slope(x[i])
                      : float(double(dy[i]) * gelu_erf_grad(double(x[i])));
}

// The elements of the call (the output has the input's dims) and the form (ints[0]: 0 or 1).
int shape_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             size_t &count, bool &tanh_form) {
  const dpt_tensor &x = call.inputs[0], &y = call.output;
  if (!same_dims(x, y))
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s)", dims_text(x).text,
                        dims_text(y).text);
  if (call.ints[0] != 0 && call.ints[0] != 1)
    return invalid_call(c, call, pass, e, "ints[0] (approximation) is %lld: 0 (erf) or 1 (tanh)",
                        (long long)call.ints[0]);
  count = size_t(call.n) * size_t(dpt_tensor_sample_size(&y));
  tanh_form = call.ints[0] == 1;
  return 0;
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t count = 0;
  bool tanh_form = false;
  if (const int rc = shape_of(c, call, kForward, e, count, tanh_form)) return rc;
  if (count == 0) return 0;
  const float *x = input(call);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}})) return rc;
  gelu_forward_kernel<<<grid_for(count), kOpThreads, 0, c.stream>>>(x, y, count, tanh_form);
  return check_launch(c, "gelu forward kernel", e);
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  size_t count = 0;
  bool tanh_form = false;
  if (const int rc = shape_of(c, call, kBackward, e, count, tanh_form)) return rc;
  float *dx = input_grad(call);
  if (count == 0 || dx == nullptr) return 0;
  const float *x = input(call), *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"inputs[0].data", x}, {"output_grad", dy}})) return rc;
  gelu_backward_kernel<<<grid_for(count), kOpThreads, 0, c.stream>>>(x, dy, dx, count, tanh_form);
  return check_launch(c, "gelu backward kernel", e);
}

}  // namespace

extern const OpKernel kGelu = {"gelu", 1, 1, 0, 0, forward, backward};

}  // namespace dpt::cuda
