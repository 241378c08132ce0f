#include <cstring>

#include "backend/cpu/blas.hpp"
#include "nn/layers.hpp"

namespace dpt {

// Scratch: one sample's column matrix [in_c * k * k, out_h * out_w] and its gradient.
size_t Conv2dLayer::scratch_floats() const {
  const auto &s = spec();
  return 2 * s.in.c * s.kernel * s.kernel * s.out.h * s.out.w;
}

void Conv2dLayer::im2col(const float *x, float *col) const {
  const auto &s = spec();
  const size_t k = s.kernel, oh = s.out.h, ow = s.out.w, h = s.in.h, w = s.in.w;
  for (size_t c = 0; c < s.in.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        float *row = col + ((c * k + ki) * k + kj) * oh * ow;
        for (size_t y = 0; y < oh; ++y) {
          // ptrdiff arithmetic: padding may put the source row above the image.
          std::ptrdiff_t iy = std::ptrdiff_t(y * s.stride + ki) - std::ptrdiff_t(s.padding);
          float *dst = row + y * ow;
          if (iy < 0 || iy >= std::ptrdiff_t(h)) {
            std::memset(dst, 0, ow * sizeof(float));
            continue;
          }
          const float *src = x + (c * h + size_t(iy)) * w;
          for (size_t xo = 0; xo < ow; ++xo) {
            std::ptrdiff_t ix = std::ptrdiff_t(xo * s.stride + kj) - std::ptrdiff_t(s.padding);
            dst[xo] = ix < 0 || ix >= std::ptrdiff_t(w) ? 0.0f : src[ix];
          }
        }
      }
}

void Conv2dLayer::col2im(const float *col, float *dx) const {
  const auto &s = spec();
  const size_t k = s.kernel, oh = s.out.h, ow = s.out.w, h = s.in.h, w = s.in.w;
  std::memset(dx, 0, s.in.size() * sizeof(float));
  for (size_t c = 0; c < s.in.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        const float *row = col + ((c * k + ki) * k + kj) * oh * ow;
        for (size_t y = 0; y < oh; ++y) {
          std::ptrdiff_t iy = std::ptrdiff_t(y * s.stride + ki) - std::ptrdiff_t(s.padding);
          if (iy < 0 || iy >= std::ptrdiff_t(h)) continue;
          float *dst = dx + (c * h + size_t(iy)) * w;
          for (size_t xo = 0; xo < ow; ++xo) {
            std::ptrdiff_t ix = std::ptrdiff_t(xo * s.stride + kj) - std::ptrdiff_t(s.padding);
            if (ix >= 0 && ix < std::ptrdiff_t(w)) dst[ix] += row[y * ow + xo];
          }
        }
      }
}

void Conv2dLayer::forward(const float *p, const float *x, float *y, float *, float *scratch,
                          const PassInfo &info) const {
  const auto &s = spec();
  const size_t oc = s.units, ckk = s.in.c * s.kernel * s.kernel, pix = s.out.h * s.out.w;
  const float *w = p, *b = p + oc * ckk;
  for (size_t n = 0; n < info.n; ++n) {
    const float *xs = x + n * s.in.size();
    float *ys = y + n * s.out.size();
    im2col(xs, scratch);
    for (size_t o = 0; o < oc; ++o)
      for (size_t q = 0; q < pix; ++q) ys[o * pix + q] = b[o];
    blas::gemm(false, false, oc, pix, ckk, 1.0f, w, ckk, scratch, pix, 1.0f, ys, pix);
  }
}

void Conv2dLayer::backward(const float *p, const float *x, const float *, const float *dy, float *dx,
                           float *dp, const float *, float *scratch, const PassInfo &info) const {
  const auto &s = spec();
  const size_t oc = s.units, ckk = s.in.c * s.kernel * s.kernel, pix = s.out.h * s.out.w;
  float *dw = dp, *db = dp + oc * ckk;
  float *col = scratch, *dcol = scratch + ckk * pix;
  for (size_t n = 0; n < info.n; ++n) {
    const float *dys = dy + n * s.out.size();
    im2col(x + n * s.in.size(), col);
    blas::gemm(false, true, oc, ckk, pix, 1.0f, dys, pix, col, pix, 1.0f, dw, ckk);  // dW += dy col^T
    for (size_t o = 0; o < oc; ++o) {
      float sum = 0.0f;
      for (size_t q = 0; q < pix; ++q) sum += dys[o * pix + q];
      db[o] += sum;
    }
    if (dx != nullptr) {
      blas::gemm(true, false, ckk, pix, oc, 1.0f, p, ckk, dys, pix, 0.0f, dcol, pix);  // dcol = W^T dy
      col2im(dcol, dx + n * s.in.size());
    }
  }
}

}  // namespace dpt
