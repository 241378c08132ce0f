#include "cuda/pooling.hpp"

#include "cuda/context.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

// Checks the shape and sets the context's pooling, input (x_desc) and output (y_desc) descriptors.
// Max: CUDNN_POOLING_MAX_DETERMINISTIC, whose backward gives each window's gradient to one maximum (the CPU
// layer: the first in row-major order). Average: every window lies inside the image (no padding), so
// "include padding" and "exclude padding" agree: the sum over window * window elements, divided by that.
int describe(dpt_backend_context &c, const dpt_backend_pool_shape *shape, const char *call, const Error &e,
             bool &empty) {
  const int ordinal = c.ordinal;
  empty = false;
  if (shape == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL shape", ordinal, call);
  const dpt_backend_pool_shape &s = *shape;
  const bool kind_ok = s.kind == DPT_BACKEND_POOL_AVERAGE || s.kind == DPT_BACKEND_POOL_MAX;
  if (!kind_ok || s.n < 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || s.window <= 0 || s.stride <= 0 ||
      s.window > s.h || s.window > s.w)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: bad shape (kind %d, n %d, input %dx%dx%d, window %d, stride %d)", ordinal,
                  call, s.kind, s.n, s.c, s.h, s.w, s.window, s.stride);
  if (s.n == 0) {
    empty = true;
    return 0;
  }
  const cudnnPoolingMode_t mode = s.kind == DPT_BACKEND_POOL_MAX
                                      ? CUDNN_POOLING_MAX_DETERMINISTIC
                                      : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  DPT_CUDNN("cudnnSetPooling2dDescriptor",
            cudnnSetPooling2dDescriptor(c.pool_desc, mode, CUDNN_PROPAGATE_NAN, s.window, s.window, 0, 0,
                                        s.stride, s.stride));
  const int out_h = (s.h - s.window) / s.stride + 1, out_w = (s.w - s.window) / s.stride + 1;
  DPT_CUDNN("cudnnSetTensor4dDescriptor",
            cudnnSetTensor4dDescriptor(c.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w));
  DPT_CUDNN(
      "cudnnSetTensor4dDescriptor",
      cudnnSetTensor4dDescriptor(c.y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, out_h, out_w));
  return 0;
}

}  // namespace

int pool_forward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x, float *y,
                 char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "pool_forward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    bool empty = false;
    if (const int rc = describe(c, shape, "pool_forward", e, empty)) return rc;
    if (empty) return 0;
    if (x == nullptr || y == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: pool_forward: NULL pointer", ordinal);
    DPT_CUDNN("cudnnPoolingForward",
              cudnnPoolingForward(c.dnn, c.pool_desc, &kOne, c.x_desc, x, &kZero, c.y_desc, y));
    return 0;
  });
}

int pool_backward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x,
                  const float *y, const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "pool_backward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    bool empty = false;
    if (const int rc = describe(c, shape, "pool_backward", e, empty)) return rc;
    if (empty) return 0;
    if (x == nullptr || y == nullptr || dy == nullptr || dx == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: pool_backward: NULL pointer", ordinal);
    DPT_CUDNN("cudnnPoolingBackward", cudnnPoolingBackward(c.dnn, c.pool_desc, &kOne, c.y_desc, y, c.y_desc,
                                                           dy, c.x_desc, x, &kZero, c.x_desc, dx));
    return 0;
  });
}

}  // namespace dpt::cuda
