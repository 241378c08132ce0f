// Winograd F(2x2, 3x3)'s transforms (conv2d_winograd.cpp runs them over a layer's kernels and a group's
// planes): U = G g G^T for 3x3 kernels, V = B^T d B for every tile of an input plane, y = bias + A^T M A
// for every tile of an output plane, and their reverses for backward. Two implementations of the same
// arithmetic, chosen once by what the CPU runs: the portable loops (the reference) and AVX-512 across 16
// kernels, or 16 tiles of a row. The transforms only add, subtract, halve and negate, each operation rounded
// alone and in the same order in both, so the two give the same bits (test_winograd_transforms holds them
// to it, signed zeros, infinities and NaNs included).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt::cpu::winograd {

// One plane of h x w pixels, cut into 2x2 output tiles; tiles past the right or bottom edge (odd sizes)
// read zeros and their outputs are dropped.
struct Plane {
  size_t h, w;
  size_t tiles_y() const { return (h + 1) / 2; }
  size_t tiles_x() const { return (w + 1) / 2; }
  size_t tiles() const { return tiles_y() * tiles_x(); }
  size_t size() const { return h * w; }
  // A zero-bordered plane: one row and column of padding before the image, tiles past its end after.
  size_t padded_w() const { return 2 * tiles_x() + 2; }
  size_t padded_h() const { return 2 * tiles_y() + 2; }
};

// The AVX-512 transforms keep each padded row split into its even and its odd columns, each this many
// floats long: room for every chunk of 16 tiles and the column after the last.
inline size_t split_row_floats(const Plane &p) {
  return (p.tiles_x() + 15) / 16 * 16 + 16;
}

// Planes of one shape that a transform takes in one call: `count` of them, plane i at [i * apart] of its
// tensor (the samples of a group, one channel's planes); their tiles lie side by side in V and M, plane i's
// from column i * tiles(). Narrow planes then fill a vector with the tile rows of several planes.
struct Planes {
  size_t count, apart;
};

// The floats of working room (`rows` below) either implementation needs for `planes` planes.
size_t plane_rows_floats(const Plane &p, size_t planes);

// Point p of kernel k lies at [p * stride + k] of U (and dU); point p of tile (ty, tx) of plane i at
// [p * stride + i * tiles + ty * tiles_x + tx] of V or M (and of their gradients).
struct Transforms {
  // U = G g G^T for each of the 3x3 kernels at w (9 floats each). G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0
  // 1].
  void (*weights)(size_t kernels, const float *w, float *u, size_t stride);
  // dW += G^T dU G for each kernel, the reverse of weights.
  void (*weight_gradient)(size_t kernels, const float *du, size_t stride, float *dw);
  // V = B^T d B for every tile of the input planes x.
  void (*input)(const Plane &s, Planes planes, const float *x, float *v, size_t stride, float *rows);
  // y = bias + A^T M A for every tile of the output planes y.
  void (*output)(const Plane &s, Planes planes, const float *m, size_t stride, float bias, float *y,
                 float *rows);
  // dM = A dY A^T for every tile of the output-gradient planes dy.
  void (*output_gradient)(const Plane &s, Planes planes, const float *dy, float *m, size_t stride,
                          float *rows);
  // dx = the sum over tiles of B dV B^T, each at its 4x4 patch (overlapping by two rows and columns), for
  // the planes dx.
  void (*input_gradient)(const Plane &s, Planes planes, const float *v, size_t stride, float *dx,
                         float *rows);
  // input and output_gradient writing their values rounded to bfloat16 (core/float16.hpp's to_bf16): the
  // operands of bf16 GEMMs, half the bytes. Null where the CPU has no AVX512_BF16 (and in the portable set).
  void (*input_bf16)(const Plane &s, Planes planes, const float *x, uint16_t *v, size_t stride, float *rows);
  void (*output_gradient_bf16)(const Plane &s, Planes planes, const float *dy, uint16_t *m, size_t stride,
                               float *rows);
};

const Transforms &portable_transforms();
// nullptr where the CPU has no AVX-512 (F, BW, DQ, VL).
const Transforms *avx512_transforms();
// The AVX-512 transforms where the CPU has them, else the portable ones.
const Transforms &transforms();

}  // namespace dpt::cpu::winograd
