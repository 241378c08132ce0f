// Bias add and bias gradient over NCHW tensors (backend interface: bias_add, bias_grad), CUDA kernels.
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int bias_add(dpt_backend_context *ctx, size_t n, size_t channels, size_t pixels, const float *bias, float *y,
             char *error, size_t error_size);
int bias_grad(dpt_backend_context *ctx, size_t n, size_t channels, size_t pixels, const float *dy,
              float *dbias, char *error, size_t error_size);

}  // namespace dpt::cuda
