// "relu", "sigmoid", "tanh" through cuDNN: elementwise over the n samples, NaN propagated (as the CPU
// kernels: x < 0 ? 0 : x keeps a NaN). Backward uses the output only (op_call.h): cuDNN's backward takes x
// as well, and is given y in its place. Its ReLU gradient tests the sign, and y > 0 exactly where x > 0;
// its sigmoid and tanh gradients are y (1 - y) and 1 - y^2, which read y only (in-place activations in
// cuDNN's users rely on that).
#include "cuda/ops/ops.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;
// Elements per cuDNN call: tensor dimensions are int.
constexpr size_t kChunk = size_t(1) << 30;

// The elements of the call (n samples of the output's size, the input's size) and the context's activation
// descriptor set to mode.
int describe(dpt_backend_context &c, const dpt_op_call &call, const char *pass, cudnnActivationMode_t mode,
             const Error &e, size_t &count) {
  const int ordinal = c.ordinal;
  const int64_t size = dpt_tensor_sample_size(&call.output);
  if (dpt_tensor_sample_size(&call.inputs[0]) != size)
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s)", dims_text(call.inputs[0]).text,
                        dims_text(call.output).text);
  count = size_t(call.n) * size_t(size);
  DPT_CUDNN("cudnnSetActivationDescriptor",
            cudnnSetActivationDescriptor(c.activation_desc, mode, CUDNN_PROPAGATE_NAN, 0.0));
  return 0;
}

// n elements as a [1, n, 1, 1] tensor in x_desc (one chunk of the whole).
int describe_chunk(dpt_backend_context &c, size_t n, const Error &e) {
  const int ordinal = c.ordinal;
  DPT_CUDNN("cudnnSetTensor4dDescriptor",
            cudnnSetTensor4dDescriptor(c.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, int(n), 1, 1));
  return 0;
}

template <cudnnActivationMode_t Mode>
int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  size_t count = 0;
  if (const int rc = describe(c, call, kForward, Mode, e, count)) return rc;
  if (count == 0) return 0;
  const float *x = input(call);
  float *y = output(call);
  if (const int rc = require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}})) return rc;
  for (size_t offset = 0; offset < count; offset += kChunk) {
    const size_t n = count - offset < kChunk ? count - offset : kChunk;
    if (const int rc = describe_chunk(c, n, e)) return rc;
    DPT_CUDNN("cudnnActivationForward", cudnnActivationForward(c.dnn, c.activation_desc, &kOne, c.x_desc,
                                                               x + offset, &kZero, c.x_desc, y + offset));
  }
  return 0;
}

template <cudnnActivationMode_t Mode>
int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  const int ordinal = c.ordinal;
  size_t count = 0;
  if (const int rc = describe(c, call, kBackward, Mode, e, count)) return rc;
  float *dx = input_grad(call);
  if (count == 0 || dx == nullptr) return 0;
  const float *y = output(call), *dy = output_grad(call);
  if (const int rc = require(c, call, kBackward, e, {{"output.data", y}, {"output_grad", dy}})) return rc;
  for (size_t offset = 0; offset < count; offset += kChunk) {
    const size_t n = count - offset < kChunk ? count - offset : kChunk;
    if (const int rc = describe_chunk(c, n, e)) return rc;
    DPT_CUDNN("cudnnActivationBackward",
              cudnnActivationBackward(c.dnn, c.activation_desc, &kOne, c.x_desc, y + offset, c.x_desc,
                                      dy + offset, c.x_desc, y + offset, &kZero, c.x_desc, dx + offset));
  }
  return 0;
}

}  // namespace

extern const OpKernel kRelu = {
    "relu", 1, 1, 0, 0, forward<CUDNN_ACTIVATION_RELU>, backward<CUDNN_ACTIVATION_RELU>};
extern const OpKernel kSigmoid = {
    "sigmoid", 1, 1, 0, 0, forward<CUDNN_ACTIVATION_SIGMOID>, backward<CUDNN_ACTIVATION_SIGMOID>};
extern const OpKernel kTanh = {
    "tanh", 1, 1, 0, 0, forward<CUDNN_ACTIVATION_TANH>, backward<CUDNN_ACTIVATION_TANH>};

}  // namespace dpt::cuda
