// Average and max pooling through cuDNN (backend interface: pool_forward, pool_backward).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int pool_forward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x, float *y,
                 char *error, size_t error_size);
int pool_backward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x,
                  const float *y, const float *dy, float *dx, char *error, size_t error_size);

}  // namespace dpt::cuda
