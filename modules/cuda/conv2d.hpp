// 2-D convolution through cuDNN (backend interface: conv2d_forward ... conv2d_backward_bias).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int conv2d_forward(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                   const float *weights, const float *bias, float *y, char *error, size_t error_size);
int conv2d_backward_data(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape,
                         const float *weights, const float *dy, float *dx, char *error, size_t error_size);
int conv2d_backward_filter(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                           const float *dy, float *dweights, char *error, size_t error_size);
int conv2d_backward_bias(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *dy,
                         float *dbias, char *error, size_t error_size);

}  // namespace dpt::cuda
