// "conv2d": cross-correlation by im2col + GEMM. W [out_c, in_c, k, k].
//
// A GEMM covers a group of samples side by side (their column matrices next to each other, [c*k*k, g*oh*ow]),
// so that small planes still make GEMMs wide enough to run at the BLAS kernel's rate and the weights are
// packed once per group rather than once per sample (ResNet-18's last stage: 512 channels on 4x4 planes, 16
// columns a sample). Larger planes run one sample at a time, straight into the output. The grouping depends
// only on the layer's shape and the slice size, so a run's bits are fixed.
//
// 3x3, stride 1, padding 1 convolutions of at least 16 channels in float32 or bf16 (most of ResNet's work)
// run as Winograd F(2x2, 3x3) instead: conv2d_winograd.cpp.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/conv2d_winograd.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"

namespace dpt::cpu {

namespace {

struct Conv {
  size_t c, h, w, out_c, k, stride, padding, oh, ow;
  size_t in_size() const { return c * h * w; }
  size_t out_size() const { return out_c * oh * ow; }
  size_t ckk() const { return c * k * k; }
  size_t pixels() const { return oh * ow; }
};

// Planes of fewer pixels than kGroupBelow run in groups of about kGroupColumns columns. Measured
// (docs/performance-notes.md, 9): OpenBLAS's single-thread SGEMM runs at 65-70% of its rate with 16 columns
// and near it from 128, and grouping LeNet's 81-pixel planes made its 2-device step 13% slower there (the
// group's columns leave L2). dptrain's own GEMM (AVX-512) packs the weights once per call, so there grouping
// pays: LeNet's 81-pixel planes in groups of 7 gave 1.04-1.17x images/s in float32 and 1.17x in bf16 (AMD
// EPYC, docs/benchmarks.md, 2026-12-03).
constexpr size_t kGroupBelow = 128, kGroupColumns = 512;

// Samples per GEMM.
size_t group_size(const Conv &s) {
  return s.pixels() >= kGroupBelow ? 1 : (kGroupColumns + s.pixels() - 1) / s.pixels();
}

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

// One sample's columns into col, whose rows are ld floats apart. Compiled per x86-64 level (DPT_CLONES):
// LeNet's rows (28 and 10 floats) copy in AVX-512 and AVX2 runs where the CPU has them.
DPT_CLONES void im2col(const Conv &s, const float *x, float *col, size_t ld) {
  const size_t k = s.k, oh = s.oh, ow = s.ow, h = s.h, w = s.w, stride = s.stride;
  for (size_t c = 0; c < s.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        float *row = col + ((c * k + ki) * k + kj) * ld;
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

// dx = the columns' gradient summed back onto the input (each position's terms in the order of the loops).
DPT_CLONES void col2im(const Conv &s, const float *col, size_t ld, float *dx) {
  const size_t k = s.k, oh = s.oh, ow = s.ow, h = s.h, w = s.w, stride = s.stride;
  std::memset(dx, 0, s.in_size() * sizeof(float));
  for (size_t c = 0; c < s.c; ++c)
    for (size_t ki = 0; ki < k; ++ki)
      for (size_t kj = 0; kj < k; ++kj) {
        const float *row = col + ((c * k + ki) * k + kj) * ld;
        const ColumnRange r = valid_columns(ow, w, stride, kj, s.padding);
        for (size_t y = 0; y < oh; ++y) {
          const std::ptrdiff_t iy = std::ptrdiff_t(y * stride + ki) - std::ptrdiff_t(s.padding);
          if (iy < 0 || iy >= std::ptrdiff_t(h)) continue;
          float *__restrict dst = dx + (c * h + size_t(iy)) * w + kj - s.padding;
          const float *__restrict src = row + y * ow;
          if (stride == 1) {
            for (size_t xo = r.lo; xo < r.hi; ++xo) dst[xo] += src[xo];
          } else {
            for (size_t xo = r.lo; xo < r.hi; ++xo) dst[xo * stride] += src[xo];
          }
        }
      }
}

// A group's column matrix [c * k * k, g * pixels] (in backward also the columns' gradient) and, for a group
// of several samples, its output (or output gradient) gathered as [out_c, g * pixels].
size_t scratch_bytes(const dpt_op_call &call) {
  if (winograd::applies(call)) return winograd::scratch_bytes(call);
  const Conv s = conv_of(call);
  const size_t g = group_size(s), staged = g > 1 ? s.out_c * g * s.pixels() : 0;
  return (s.ckk() * g * s.pixels() + staged) * sizeof(float);
}

struct Scratch {
  float *col, *staged;
};

Scratch scratch_of(const dpt_op_call &call, const Conv &s) {
  float *col = static_cast<float *>(call.scratch);
  return {col, col + s.ckk() * group_size(s) * s.pixels()};
}

void forward(const dpt_op_call &call) {
  if (winograd::applies(call)) return winograd::forward(call);
  const Conv s = conv_of(call);
  const size_t oc = s.out_c, ckk = s.ckk(), pix = s.pixels();
  const float *w = param(call, 0), *b = param(call, 1);
  const Scratch scratch = scratch_of(call, s);
  for (size_t first = 0; first < n(call); first += group_size(s)) {
    const size_t g = std::min(group_size(s), n(call) - first), cols = g * pix;
    for (size_t i = 0; i < g; ++i)
      im2col(s, in(call) + (first + i) * s.in_size(), scratch.col + i * pix, cols);
    float *ys = out(call) + first * s.out_size();
    // The bias is added to the finished sum, in both branches: a sample's output must not depend on
    // whether its slice put it in a group (with k above the GEMM's k block, bias + sum and a sum started
    // from the bias round differently, and the slices of two processes group differently).
    if (g == 1) {
      blas::gemm(false, false, oc, pix, ckk, 1.0f, w, ckk, scratch.col, pix, 0.0f, ys, pix,
                 blas::precision_of(call));
      if (b != nullptr)
        for (size_t o = 0; o < oc; ++o)
          for (size_t q = 0; q < pix; ++q) ys[o * pix + q] = b[o] + ys[o * pix + q];
      continue;
    }
    blas::gemm(false, false, oc, cols, ckk, 1.0f, w, ckk, scratch.col, cols, 0.0f, scratch.staged, cols,
               blas::precision_of(call));
    for (size_t i = 0; i < g; ++i)
      for (size_t o = 0; o < oc; ++o) {
        const float *src = scratch.staged + o * cols + i * pix;
        float *dst = ys + i * s.out_size() + o * pix;
        const float bias = b != nullptr ? b[o] : 0.0f;
        for (size_t q = 0; q < pix; ++q) dst[q] = bias + src[q];
      }
  }
}

// db += the output gradient summed over each plane, sample by sample.
void add_bias_gradient(const dpt_op_call &call) {
  float *db = param_grad(call, 1);
  if (db == nullptr) return;
  const Conv s = conv_of(call);
  for (size_t i = 0; i < n(call); ++i)
    for (size_t o = 0; o < s.out_c; ++o)
      db[o] += sum_fixed_order(dy(call) + i * s.out_size() + o * s.pixels(), s.pixels());
}

void im2col_backward(const dpt_op_call &call) {
  const Conv s = conv_of(call);
  const size_t oc = s.out_c, ckk = s.ckk(), pix = s.pixels();
  float *dw = param_grad(call, 0), *d = dx(call);
  const Scratch scratch = scratch_of(call, s);
  for (size_t first = 0; first < n(call); first += group_size(s)) {
    const size_t g = std::min(group_size(s), n(call) - first), cols = g * pix;
    const float *dys = dy(call) + first * s.out_size();
    // The group's output gradient as one [out_c, cols] matrix.
    const float *dy_cols = dys;
    if (g > 1) {
      for (size_t i = 0; i < g; ++i)
        for (size_t o = 0; o < oc; ++o)
          std::copy_n(dys + i * s.out_size() + o * pix, pix, scratch.staged + o * cols + i * pix);
      dy_cols = scratch.staged;
    }
    if (dw != nullptr) {
      for (size_t i = 0; i < g; ++i)
        im2col(s, in(call) + (first + i) * s.in_size(), scratch.col + i * pix, cols);
      blas::gemm(false, true, oc, ckk, cols, 1.0f, dy_cols, cols, scratch.col, cols, 1.0f, dw, ckk,
                 blas::precision_of(call));  // dW += dy col^T
    }
    if (d != nullptr) {
      // The columns' gradient W^T dy reuses the column matrix's space.
      blas::gemm(true, false, ckk, cols, oc, 1.0f, param(call, 0), ckk, dy_cols, cols, 0.0f, scratch.col,
                 cols, blas::precision_of(call));
      for (size_t i = 0; i < g; ++i) col2im(s, scratch.col + i * pix, cols, d + (first + i) * s.in_size());
    }
  }
}

void backward(const dpt_op_call &call) {
  add_bias_gradient(call);
  if (winograd::applies(call))
    winograd::backward(call);
  else
    im2col_backward(call);
}

}  // namespace

extern const OpKernel kConv2d = {"conv2d", forward, backward, scratch_bytes};

}  // namespace dpt::cpu
