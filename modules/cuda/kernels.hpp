// Launchers of the module's own CUDA kernels that other files of the module use, and the limits of
// their arguments. Each enqueues on the context's stream and returns 0 or a report (launch errors).
#pragma once

#include <climits>
#include <cstddef>

#include "cuda/context.hpp"

namespace dpt::cuda {

// True when every value fits an int (cuBLAS and cuDNN take int sizes).
inline bool fit_int(size_t a, size_t b = 0, size_t c = 0) {
  return a <= size_t(INT_MAX) && b <= size_t(INT_MAX) && c <= size_t(INT_MAX);
}

// y [n, channels, pixels] += bias [channels]
int launch_bias_add(dpt_backend_context &c, size_t n, size_t channels, size_t pixels, const float *bias,
                    float *y, const Error &e);
// dbias [channels] += sum of dy [n, channels, pixels] over n and pixels, in a fixed order
int launch_bias_grad(dpt_backend_context &c, size_t n, size_t channels, size_t pixels, const float *dy,
                     float *dbias, const Error &e);

}  // namespace dpt::cuda
