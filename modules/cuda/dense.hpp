// Dense layers through cuBLAS SGEMM (backend interface: dense_forward, dense_backward).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int dense_forward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                  const float *weights, const float *bias, float *y, char *error, size_t error_size);
int dense_backward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                   const float *weights, const float *dy, float *dx, float *dweights, float *dbias,
                   char *error, size_t error_size);

}  // namespace dpt::cuda
