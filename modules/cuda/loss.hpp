// Softmax cross-entropy as CUDA kernels (backend interface: softmax_cross_entropy).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int softmax_cross_entropy(dpt_backend_context *ctx, size_t n, size_t classes, const float *logits,
                          const int32_t *labels, float *dlogits, dpt_backend_loss *out, char *error,
                          size_t error_size);

}  // namespace dpt::cuda
