// ReLU, sigmoid and tanh through cuDNN (backend interface: activation_forward, activation_backward).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int activation_forward(dpt_backend_context *ctx, int kind, size_t count, const float *x, float *y,
                       char *error, size_t error_size);
int activation_backward(dpt_backend_context *ctx, int kind, size_t count, const float *x, const float *y,
                        const float *dy, float *dx, char *error, size_t error_size);

}  // namespace dpt::cuda
