#include "cuda/activation.hpp"

#include "cuda/context.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;
// Elements per cuDNN call: tensor dimensions are int.
constexpr size_t kChunk = size_t(1) << 30;

int set_mode(dpt_backend_context &c, int kind, const char *call, const Error &e) {
  const int ordinal = c.ordinal;
  cudnnActivationMode_t mode;
  switch (kind) {
    case DPT_BACKEND_RELU:
      mode = CUDNN_ACTIVATION_RELU;
      break;
    case DPT_BACKEND_SIGMOID:
      mode = CUDNN_ACTIVATION_SIGMOID;
      break;
    case DPT_BACKEND_TANH:
      mode = CUDNN_ACTIVATION_TANH;
      break;
    default:
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: unknown activation %d", ordinal,
                    call, kind);
  }
  // NaN propagated, as the CPU layer (x < 0 ? 0 : x keeps a NaN).
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

}  // namespace

int activation_forward(dpt_backend_context *ctx, int kind, size_t count, const float *x, float *y,
                       char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "activation_forward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (const int rc = set_mode(c, kind, "activation_forward", e)) return rc;
    if (count == 0) return 0;
    if (x == nullptr || y == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: activation_forward: NULL pointer",
                    ordinal);
    for (size_t offset = 0; offset < count; offset += kChunk) {
      const size_t n = count - offset < kChunk ? count - offset : kChunk;
      if (const int rc = describe_chunk(c, n, e)) return rc;
      DPT_CUDNN("cudnnActivationForward", cudnnActivationForward(c.dnn, c.activation_desc, &kOne, c.x_desc,
                                                                 x + offset, &kZero, c.x_desc, y + offset));
    }
    return 0;
  });
}

int activation_backward(dpt_backend_context *ctx, int kind, size_t count, const float *x, const float *y,
                        const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "activation_backward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    if (const int rc = set_mode(c, kind, "activation_backward", e)) return rc;
    if (count == 0) return 0;
    if (x == nullptr || y == nullptr || dy == nullptr || dx == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: activation_backward: NULL pointer",
                    ordinal);
    for (size_t offset = 0; offset < count; offset += kChunk) {
      const size_t n = count - offset < kChunk ? count - offset : kChunk;
      if (const int rc = describe_chunk(c, n, e)) return rc;
      DPT_CUDNN("cudnnActivationBackward",
                cudnnActivationBackward(c.dnn, c.activation_desc, &kOne, c.x_desc, y + offset, c.x_desc,
                                        dy + offset, c.x_desc, x + offset, &kZero, c.x_desc, dx + offset));
    }
    return 0;
  });
}

}  // namespace dpt::cuda
