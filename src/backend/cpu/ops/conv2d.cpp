// "conv2d": cross-correlation by im2col + GEMM, one sample at a time. W [out_c, in_c, k, k].
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

struct Conv {
  size_t c, h, w, out_c, k, stride, padding, oh, ow;
  size_t in_size() const { return c * h * w; }
  size_t out_size() const { return out_c * oh * ow; }
  size_t ckk() const { return c * k * k; }
  size_t pixels() const { return oh * ow; }
};

Conv conv_of(const dpt_op_call &call) {
  const dpt_tensor &x = call.inputs[0], &y = call.output;
  return Conv{size_t(x.dims[0]),    size_t(x.dims[1]),    size_t(x.dims[2]),
              size_t(call.ints[0]), size_t(call.ints[1]), size_t(call.ints[2]),
              size_t(call.ints[3]), size_t(y.dims[1]),    size_t(y.dims[2])};
}

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

void im2col(const Conv &s, const float *x, float *col) {
  const size_t k = s.k, oh = s.oh, ow = s.ow, h = s.h, w = s.w, stride = s.stride;
  for (size_t c = 0; c < s.c; ++c)
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

void col2im(const Conv &s, const float *col, float *dx) {
  const size_t k = s.k, oh = s.oh, ow = s.ow, h = s.h, w = s.w, stride = s.stride;
  std::memset(dx, 0, s.in_size() * sizeof(float));
  for (size_t c = 0; c < s.c; ++c)
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

// One sample's column matrix [c * k * k, oh * ow] and its gradient.
size_t scratch_bytes(const dpt_op_call &call) {
  const Conv s = conv_of(call);
  return 2 * s.ckk() * s.pixels() * sizeof(float);
}

void forward(const dpt_op_call &call) {
  const Conv s = conv_of(call);
  const size_t oc = s.out_c, ckk = s.ckk(), pix = s.pixels();
  const float *w = param(call, 0), *b = param(call, 1);
  float *col = static_cast<float *>(call.scratch);
  for (size_t i = 0; i < n(call); ++i) {
    float *ys = out(call) + i * s.out_size();
    im2col(s, in(call) + i * s.in_size(), col);
    for (size_t o = 0; o < oc; ++o)
      for (size_t q = 0; q < pix; ++q) ys[o * pix + q] = b != nullptr ? b[o] : 0.0f;
    blas::gemm(false, false, oc, pix, ckk, 1.0f, w, ckk, col, pix, 1.0f, ys, pix);
  }
}

void backward(const dpt_op_call &call) {
  const Conv s = conv_of(call);
  const size_t oc = s.out_c, ckk = s.ckk(), pix = s.pixels();
  float *dw = param_grad(call, 0), *db = param_grad(call, 1), *d = dx(call);
  float *col = static_cast<float *>(call.scratch), *dcol = col + ckk * pix;
  for (size_t i = 0; i < n(call); ++i) {
    const float *dys = dy(call) + i * s.out_size();
    if (dw != nullptr) {
      im2col(s, in(call) + i * s.in_size(), col);
      blas::gemm(false, true, oc, ckk, pix, 1.0f, dys, pix, col, pix, 1.0f, dw, ckk);  // dW += dy col^T
    }
    if (db != nullptr)
      for (size_t o = 0; o < oc; ++o) db[o] += sum_fixed_order(dys + o * pix, pix);
    if (d != nullptr) {
      blas::gemm(true, false, ckk, pix, oc, 1.0f, param(call, 0), ckk, dys, pix, 0.0f, dcol, pix);  // W^T dy
      col2im(s, dcol, d + i * s.in_size());
    }
  }
}

}  // namespace

extern const OpKernel kConv2d = {"conv2d", forward, backward, scratch_bytes};

}  // namespace dpt::cpu
