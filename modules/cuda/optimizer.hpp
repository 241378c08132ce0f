// Optimizer updates, the gradient norm and scaling as CUDA kernels (backend interface: optimizer_update,
// l2_norm, l2_block_sums, scale).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int optimizer_update(dpt_backend_context *ctx, const dpt_backend_optimizer *optimizer, uint64_t t, float lr,
                     float grad_scale, float *params, const float *grads, float *state, size_t count,
                     char *error, size_t error_size);
int l2_norm(dpt_backend_context *ctx, const float *x, size_t count, double *out, char *error,
            size_t error_size);
int l2_block_sums(dpt_backend_context *ctx, const float *x, size_t begin, size_t end, double *sums,
                  char *error, size_t error_size);
int scale(dpt_backend_context *ctx, float *x, size_t count, float alpha, char *error, size_t error_size);

}  // namespace dpt::cuda
