// The CPU layer's semantics: y and dx are written (beta 0), dW and db accumulate (beta 1).
#include "cuda/conv2d.hpp"

#include "cuda/conv_plan.hpp"
#include "cuda/kernels.hpp"

namespace dpt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

int null_pointer(const dpt_backend_context &c, const char *call, const Error &e) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer", c.ordinal, call);
}

}  // namespace

int conv2d_forward(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                   const float *weights, const float *bias, float *y, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "conv2d_forward", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    ConvPlan *p = nullptr;
    if (const int rc = conv_plan(c, shape, "conv2d_forward", e, p)) return rc;
    if (p == nullptr) return 0;
    if (x == nullptr || weights == nullptr || y == nullptr) return null_pointer(c, "conv2d_forward", e);
    const ConvAlgorithm *a = nullptr;
    if (const int rc = prepare_algorithm(c, *p, ConvDirection::kForward, e, a)) return rc;
    DPT_CUDNN("cudnnConvolutionForward", cudnnConvolutionForward(c.dnn, &kOne, p->x, x, p->w, weights,
                                                                 p->conv, cudnnConvolutionFwdAlgo_t(a->algo),
                                                                 c.workspace, a->workspace, &kZero, p->y, y));
    if (bias != nullptr)
      DPT_CUDNN("cudnnAddTensor", cudnnAddTensor(c.dnn, &kOne, p->bias, bias, &kOne, p->y, y));
    return 0;
  });
}

int conv2d_backward_data(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape,
                         const float *weights, const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "conv2d_backward_data", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    ConvPlan *p = nullptr;
    if (const int rc = conv_plan(c, shape, "conv2d_backward_data", e, p)) return rc;
    if (p == nullptr) return 0;
    if (weights == nullptr || dy == nullptr || dx == nullptr)
      return null_pointer(c, "conv2d_backward_data", e);
    const ConvAlgorithm *a = nullptr;
    if (const int rc = prepare_algorithm(c, *p, ConvDirection::kBackwardData, e, a)) return rc;
    DPT_CUDNN("cudnnConvolutionBackwardData",
              cudnnConvolutionBackwardData(c.dnn, &kOne, p->w, weights, p->y, dy, p->conv,
                                           cudnnConvolutionBwdDataAlgo_t(a->algo), c.workspace, a->workspace,
                                           &kZero, p->x, dx));
    return 0;
  });
}

int conv2d_backward_filter(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                           const float *dy, float *dweights, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "conv2d_backward_filter", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    ConvPlan *p = nullptr;
    if (const int rc = conv_plan(c, shape, "conv2d_backward_filter", e, p)) return rc;
    if (p == nullptr) return 0;
    if (x == nullptr || dy == nullptr || dweights == nullptr)
      return null_pointer(c, "conv2d_backward_filter", e);
    const ConvAlgorithm *a = nullptr;
    if (const int rc = prepare_algorithm(c, *p, ConvDirection::kBackwardFilter, e, a)) return rc;
    DPT_CUDNN("cudnnConvolutionBackwardFilter",
              cudnnConvolutionBackwardFilter(c.dnn, &kOne, p->x, x, p->y, dy, p->conv,
                                             cudnnConvolutionBwdFilterAlgo_t(a->algo), c.workspace,
                                             a->workspace, &kOne, p->w, dweights));
    return 0;
  });
}

int conv2d_backward_bias(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *dy,
                         float *dbias, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "conv2d_backward_bias", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    ConvPlan *p = nullptr;
    if (const int rc = conv_plan(c, shape, "conv2d_backward_bias", e, p)) return rc;
    if (p == nullptr) return 0;
    if (dy == nullptr || dbias == nullptr) return null_pointer(c, "conv2d_backward_bias", e);
    // cuDNN does not document cudnnConvolutionBackwardBias as deterministic: deterministic mode uses the
    // module's fixed-order reduction instead.
    if (c.deterministic())
      return launch_bias_grad(c, size_t(p->shape.n), size_t(p->shape.out_c),
                              size_t(p->out_h) * size_t(p->out_w), dy, dbias, e);
    DPT_CUDNN("cudnnConvolutionBackwardBias",
              cudnnConvolutionBackwardBias(c.dnn, &kOne, p->y, dy, &kOne, p->bias, dbias));
    return 0;
  });
}

}  // namespace dpt::cuda
