// "avg_pool2d" and "max_pool2d" through cuDNN: square windows, no padding, x [c, h, w] -> y [c, oh, ow].
// Max: CUDNN_POOLING_MAX_DETERMINISTIC, whose backward gives each window's gradient to one maximum (the CPU
// kernel: the first in row-major order). cuDNN finds it again from x and y: the module's backward reads
// inputs[0] and output, and neither writes nor reads the call's saved indices. Average: every window lies
// inside the image (no padding), so "include padding" and "exclude padding" agree: the sum over
// window * window elements, divided by that. (cuDNN's backward takes x and y in both modes.)
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

// Checks the shape and, when there are samples, sets the context's pooling, input (x_desc) and output
// (y_desc) descriptors.
int describe(dpt_backend_context &c, const dpt_op_call &call, const char *pass, cudnnPoolingMode_t mode,
             const Error &e) {
  const int ordinal = c.ordinal;
  const dpt_tensor &x = call.inputs[0], &y = call.output;
  const int64_t window = call.ints[0], stride = call.ints[1];
  bool ok = x.rank == 3 && window > 0 && stride > 0 && stride <= INT32_MAX && call.n <= INT32_MAX;
  for (int i = 0; ok && i < 3; ++i) ok = x.dims[i] <= INT32_MAX;
  ok = ok && window <= x.dims[1] && window <= x.dims[2];
  const int64_t oh = ok ? (x.dims[1] - window) / stride + 1 : 0,
                ow = ok ? (x.dims[2] - window) / stride + 1 : 0;
  if (!ok || !has_dims(y, {x.dims[0], oh, ow}))
    return invalid_call(c, call, pass, e, "bad shape (n %lld, input %s, output %s, window %lld, stride %lld)",
                        (long long)call.n, dims_text(x).text, dims_text(y).text, (long long)window,
                        (long long)stride);
  if (call.n == 0) return 0;
  const int n = int(call.n), channels = int(x.dims[0]);
  DPT_CUDNN("cudnnSetPooling2dDescriptor",
            cudnnSetPooling2dDescriptor(c.pool_desc, mode, CUDNN_PROPAGATE_NAN, int(window), int(window), 0,
                                        0, int(stride), int(stride)));
  DPT_CUDNN("cudnnSetTensor4dDescriptor",
            cudnnSetTensor4dDescriptor(c.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, channels,
                                       int(x.dims[1]), int(x.dims[2])));
  DPT_CUDNN("cudnnSetTensor4dDescriptor",
            cudnnSetTensor4dDescriptor(c.y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, channels, int(oh),
                                       int(ow)));
  return 0;
}

template <cudnnPoolingMode_t Mode>
int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  if (const int rc = describe(c, call, kForward, Mode, e)) return rc;
  if (call.n == 0) return 0;
  const float *x = input(call);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}})) return rc;
  DPT_CUDNN("cudnnPoolingForward",
            cudnnPoolingForward(c.dnn, c.pool_desc, &kOne, c.x_desc, x, &kZero, c.y_desc, y));
  return 0;
}

template <cudnnPoolingMode_t Mode>
int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  if (const int rc = describe(c, call, kBackward, Mode, e)) return rc;
  float *dx = input_grad(call);
  if (call.n == 0 || dx == nullptr) return 0;
  const float *x = input(call), *y = output(call), *dy = output_grad(call);
  if (const int rc =
          require(c, call, kBackward, e, {{"inputs[0].data", x}, {"output.data", y}, {"output_grad", dy}}))
    return rc;
  DPT_CUDNN("cudnnPoolingBackward", cudnnPoolingBackward(c.dnn, c.pool_desc, &kOne, c.y_desc, y, c.y_desc, dy,
                                                         c.x_desc, x, &kZero, c.x_desc, dx));
  return 0;
}

}  // namespace

extern const OpKernel kAvgPool2d = {"avg_pool2d",
                                    1,
                                    1,
                                    0,
                                    0,
                                    forward<CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING>,
                                    backward<CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING>};
extern const OpKernel kMaxPool2d = {"max_pool2d",
                                    1,
                                    1,
                                    0,
                                    0,
                                    forward<CUDNN_POOLING_MAX_DETERMINISTIC>,
                                    backward<CUDNN_POOLING_MAX_DETERMINISTIC>};

}  // namespace dpt::cuda
