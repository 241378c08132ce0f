// y += x, the sum of a gradient that several ops contribute to, as a CUDA kernel (backend interface:
// accumulate).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int accumulate(dpt_backend_context *ctx, float *y, const float *x, size_t count, char *error,
               size_t error_size);

}  // namespace dpt::cuda
