#include <algorithm>
#include <cstring>

#include "backend/cpu/blas.hpp"
#include "nn/layers.hpp"

namespace dpt {

// Scratch: one sample's column matrix [in_c * k * k, out_h * out_w] and its gradient.
size_t Conv2dLayer::scratch_floats() const {
  const auto &s = spec();
  return 2 * s.in.c * s.kernel * s.kernel * s.out.h * s.out.w;
}

namespace {

// The output columns xo whose input column xo * stride + kj - padding lies inside the image [0, w), as the
// range [lo, hi): outside it the column matrix holds padding zeros. Computing it once per kernel column
// turns the inner loops into branch-free copies (contiguous for stride 1).
struct ColumnRange {
  size_t lo, hi;
};

ColumnRange valid_columns(size_t ow, size_t w, size_t stride, size_t kj, size_t padding) {
  size_t lo = kj >= padding ? 0 : (padding - kj + stride - 1) / stride;
  size_t hi = w + padding >= kj + 1 ? (w + padding - kj - 1) / stride + 1 : 0;
  lo = std::min(lo, ow);
  hi = std::max(lo, std::min(hi, ow));
  return {lo, hi};
}

// Sum of n floats in a fixed order: element i into partial sum i % 8, the partial sums added in order.
// Independent partial sums let the loop vectorize (one running sum waits on each addition's latency).
inline float sum_fixed_order(const float *x, size_t n) {
  float lane[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) lane[j] += x[i + j];
  for (size_t j = 0; i < n; ++i, ++j) lane[j] += x[i];
  float sum = 0.0f;
  for (float l : lane) sum += l;
  return sum;
}

}  // namespace

void Conv2dLayer::im2col(const float *x, float *col) const {
  const auto &s = spec();
  const size_t k = s.kernel, oh = s.out.h, ow = s.out.w, h = s.in.h, w = s.in.w, stride = s.stride;
  for (size_t c = 0; c < s.in.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        float *row = col + ((c * k + ki) * k + kj) * oh * ow;
        const ColumnRange r = valid_columns(ow, w, stride, kj, s.padding);
        for (size_t y = 0; y < oh; ++y) {
          // ptrdiff arithmetic: padding may put the source row above the image.
          const std::ptrdiff_t iy = std::ptrdiff_t(y * stride + ki) - std::ptrdiff_t(s.padding);
          float *__restrict dst = row + y * ow;
          if (iy < 0 || iy >= std::ptrdiff_t(h)) {
            for (size_t xo = 0; xo < ow; ++xo) dst[xo] = 0.0f;
            continue;
          }
          // src[xo * stride] is the input column of output column xo.
          const float *__restrict src = x + (c * h + size_t(iy)) * w + kj - s.padding;
          // Plain loops, not memcpy/memset: the rows are short (9 floats in LeNet) and a library call per
          // row costs more than the copy (this file is compiled without loop-to-call conversion).
          for (size_t xo = 0; xo < r.lo; ++xo) dst[xo] = 0.0f;
          if (stride == 1) {
            for (size_t xo = r.lo; xo < r.hi; ++xo) dst[xo] = src[xo];
          } else {
            for (size_t xo = r.lo; xo < r.hi; ++xo) dst[xo] = src[xo * stride];
          }
          for (size_t xo = r.hi; xo < ow; ++xo) dst[xo] = 0.0f;
        }
      }
}

void Conv2dLayer::col2im(const float *col, float *dx) const {
  const auto &s = spec();
  const size_t k = s.kernel, oh = s.out.h, ow = s.out.w, h = s.in.h, w = s.in.w, stride = s.stride;
  std::memset(dx, 0, s.in.size() * sizeof(float));
  for (size_t c = 0; c < s.in.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        const float *row = col + ((c * k + ki) * k + kj) * oh * ow;
        const ColumnRange r = valid_columns(ow, w, stride, kj, s.padding);
        for (size_t y = 0; y < oh; ++y) {
          const std::ptrdiff_t iy = std::ptrdiff_t(y * stride + ki) - std::ptrdiff_t(s.padding);
          if (iy < 0 || iy >= std::ptrdiff_t(h)) continue;
          float *__restrict dst = dx + (c * h + size_t(iy)) * w + kj - s.padding;
          const float *__restrict src = row + y * ow;
          for (size_t xo = r.lo; xo < r.hi; ++xo) dst[xo * stride] += src[xo];
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
    for (size_t o = 0; o < oc; ++o) db[o] += sum_fixed_order(dys + o * pix, pix);
    if (dx != nullptr) {
      blas::gemm(true, false, ckk, pix, oc, 1.0f, p, ckk, dys, pix, 0.0f, dcol, pix);  // dcol = W^T dy
      col2im(dcol, dx + n * s.in.size());
    }
  }
}

}  // namespace dpt
