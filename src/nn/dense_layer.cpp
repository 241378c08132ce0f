#include "backend/cpu/blas.hpp"
#include "nn/layers.hpp"

namespace dpt {

void DenseLayer::forward(const float *p, const float *x, float *y, float *, float *,
                         const PassInfo &info) const {
  const size_t in = spec().in.size(), out = spec().units, n = info.n;
  const float *w = p, *b = p + out * in;
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < out; ++o) y[s * out + o] = b[o];
  blas::gemm(false, true, n, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
}

void DenseLayer::backward(const float *p, const float *x, const float *, const float *dy, float *dx,
                          float *dp, const float *, float *, const PassInfo &info) const {
  const size_t in = spec().in.size(), out = spec().units, n = info.n;
  if (n == 0) return;
  float *dw = dp, *db = dp + out * in;
  blas::gemm(true, false, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, in);  // dW += dy^T x
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < out; ++o) db[o] += dy[s * out + o];
  if (dx != nullptr) blas::gemm(false, false, n, in, out, 1.0f, dy, out, p, in, 0.0f, dx, in);  // dx = dy W
}

}  // namespace dpt
