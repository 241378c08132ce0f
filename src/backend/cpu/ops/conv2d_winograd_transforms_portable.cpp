// The portable transforms: plain loops, over a zero-bordered copy of the plane for the tiles (the reference
// the AVX-512 ones are held to). Each DPT_CLONES copy computes the same bits: the loops only add, subtract,
// halve and negate.
#include <algorithm>

#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"
#include "core/target_clones.hpp"

namespace dpt::cpu::winograd {

namespace {

constexpr size_t kPoints = 16;

// The weight transforms run over blocks of kBlock kernels, each point's values of a block gathered in a local
// array and moved as one run: the 16 points are planes out_c * c floats apart, and touching all 16 for every
// kernel made the caches thrash on ResNet's 512-channel layers (addresses a multiple of 1 MB apart).
constexpr size_t kBlock = 64;

// U = G g G^T, point p of kernel k at u[p * stride + k].
void weights(size_t kernels, const float *w, float *u, size_t stride) {
  float block[kPoints][kBlock];
  for (size_t first = 0; first < kernels; first += kBlock) {
    const size_t count = std::min(kBlock, kernels - first);
    for (size_t b = 0; b < count; ++b) {
      const float *g = w + 9 * (first + b);
      float t[4][3];  // G g
      for (size_t j = 0; j < 3; ++j) {
        t[0][j] = g[j];
        t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
      }
      for (size_t i = 0; i < 4; ++i) {
        block[4 * i + 0][b] = t[i][0];
        block[4 * i + 1][b] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        block[4 * i + 2][b] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        block[4 * i + 3][b] = t[i][2];
      }
    }
    for (size_t p = 0; p < kPoints; ++p) std::copy_n(block[p], count, u + p * stride + first);
  }
}

// dW += G^T dU G, the reverse of weights.
void weight_gradient(size_t kernels, const float *du, size_t stride, float *dw) {
  float block[kPoints][kBlock];
  for (size_t first = 0; first < kernels; first += kBlock) {
    const size_t count = std::min(kBlock, kernels - first);
    for (size_t p = 0; p < kPoints; ++p) std::copy_n(du + p * stride + first, count, block[p]);
    for (size_t b = 0; b < count; ++b) {
      float t[3][4];  // G^T dU
      for (size_t j = 0; j < 4; ++j) {
        const float d0 = block[j][b], d1 = block[4 + j][b], d2 = block[8 + j][b], d3 = block[12 + j][b];
        t[0][j] = d0 + 0.5f * (d1 + d2);
        t[1][j] = 0.5f * (d1 - d2);
        t[2][j] = 0.5f * (d1 + d2) + d3;
      }
      float *g = dw + 9 * (first + b);
      for (size_t i = 0; i < 3; ++i) {
        g[3 * i + 0] += t[i][0] + 0.5f * (t[i][1] + t[i][2]);
        g[3 * i + 1] += 0.5f * (t[i][1] - t[i][2]);
        g[3 * i + 2] += 0.5f * (t[i][1] + t[i][2]) + t[i][3];
      }
    }
  }
}

// V = B^T d B for every tile of one input plane x. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. rows: the
// zero-bordered plane, then 4 rows for B^T d. Plain loops rather than std::fill/copy_n: the rows are short
// (4 floats in ResNet's last stage) and a library call per row costs more than the copy (the file is
// compiled without loop-to-call conversion).
DPT_CLONES void input_plane(const Plane &s, const float *x, float *v, size_t stride, float *rows) {
  const size_t pw = s.padded_w(), ph = s.padded_h(), tiles_x = s.tiles_x();
  float *__restrict d = rows, *__restrict t = rows + ph * pw;
  for (size_t i = 0; i < pw; ++i) d[i] = 0.0f;
  for (size_t y = 0; y < s.h; ++y) {
    float *row = d + (y + 1) * pw;
    row[0] = 0.0f;
    for (size_t i = 0; i < s.w; ++i) row[1 + i] = x[y * s.w + i];
    for (size_t i = s.w + 1; i < pw; ++i) row[i] = 0.0f;
  }
  for (size_t i = (s.h + 1) * pw; i < ph * pw; ++i) d[i] = 0.0f;
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    const float *d0 = d + 2 * ty * pw, *d1 = d0 + pw, *d2 = d1 + pw, *d3 = d2 + pw;
    for (size_t i = 0; i < pw; ++i) {
      t[i] = d0[i] - d2[i];
      t[pw + i] = d1[i] + d2[i];
      t[2 * pw + i] = d2[i] - d1[i];
      t[3 * pw + i] = d1[i] - d3[i];
    }
    for (size_t a = 0; a < 4; ++a) {
      const float *__restrict e = t + a * pw;
      float *__restrict v0 = v + (4 * a + 0) * stride + ty * tiles_x;
      float *__restrict v1 = v + (4 * a + 1) * stride + ty * tiles_x;
      float *__restrict v2 = v + (4 * a + 2) * stride + ty * tiles_x;
      float *__restrict v3 = v + (4 * a + 3) * stride + ty * tiles_x;
      for (size_t tx = 0; tx < tiles_x; ++tx) {
        const float e0 = e[2 * tx], e1 = e[2 * tx + 1], e2 = e[2 * tx + 2], e3 = e[2 * tx + 3];
        v0[tx] = e0 - e2;
        v1[tx] = e1 + e2;
        v2[tx] = e2 - e1;
        v3[tx] = e1 - e3;
      }
    }
  }
}

// y = bias + A^T M A for every tile of one output plane. A^T = [1 1 1 0; 0 1 -1 -1]. rows: 2 padded rows.
DPT_CLONES void output_plane(const Plane &s, const float *m, size_t stride, float bias, float *y,
                             float *rows) {
  const size_t pw = s.padded_w(), tiles_x = s.tiles_x();
  float *__restrict y0 = rows, *__restrict y1 = rows + pw;
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    const float *mt = m + ty * tiles_x;
    for (size_t tx = 0; tx < tiles_x; ++tx) {
      float q[kPoints];
      for (size_t p = 0; p < kPoints; ++p) q[p] = mt[p * stride + tx];
      float r0[4], r1[4];  // A^T M
      for (size_t j = 0; j < 4; ++j) {
        r0[j] = q[j] + q[4 + j] + q[8 + j];
        r1[j] = q[4 + j] - q[8 + j] - q[12 + j];
      }
      y0[2 * tx] = bias + (r0[0] + r0[1] + r0[2]);
      y0[2 * tx + 1] = bias + (r0[1] - r0[2] - r0[3]);
      y1[2 * tx] = bias + (r1[0] + r1[1] + r1[2]);
      y1[2 * tx + 1] = bias + (r1[1] - r1[2] - r1[3]);
    }
    for (size_t i = 0; i < s.w; ++i) y[2 * ty * s.w + i] = y0[i];
    if (2 * ty + 1 < s.h)
      for (size_t i = 0; i < s.w; ++i) y[(2 * ty + 1) * s.w + i] = y1[i];
  }
}

// dM = A dY A^T for every tile of one output-gradient plane dy (zeros past its edge), laid out as output
// reads M. A = [1 0; 1 1; 1 -1; 0 -1]. rows: 2 padded rows.
DPT_CLONES void output_gradient_plane(const Plane &s, const float *dy, float *m, size_t stride, float *rows) {
  const size_t pw = s.padded_w(), tiles_x = s.tiles_x();
  float *g0 = rows, *g1 = rows + pw;
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    const bool second_row = 2 * ty + 1 < s.h;
    for (size_t i = 0; i < pw; ++i) {
      g0[i] = i < s.w ? dy[2 * ty * s.w + i] : 0.0f;
      g1[i] = second_row && i < s.w ? dy[(2 * ty + 1) * s.w + i] : 0.0f;
    }
    float *mt = m + ty * tiles_x;
    for (size_t tx = 0; tx < tiles_x; ++tx) {
      const float a0 = g0[2 * tx], a1 = g0[2 * tx + 1], b0 = g1[2 * tx], b1 = g1[2 * tx + 1];
      const float rows_of_a_dy[4][2] = {{a0, a1}, {a0 + b0, a1 + b1}, {a0 - b0, a1 - b1}, {-b0, -b1}};
      for (size_t r = 0; r < 4; ++r) {
        const float x0 = rows_of_a_dy[r][0], x1 = rows_of_a_dy[r][1];
        mt[(4 * r + 0) * stride + tx] = x0;
        mt[(4 * r + 1) * stride + tx] = x0 + x1;
        mt[(4 * r + 2) * stride + tx] = x0 - x1;
        mt[(4 * r + 3) * stride + tx] = -x1;
      }
    }
  }
}

// dx = the sum over tiles of B dV B^T, each at its patch (rows and columns 2t - 1 .. 2t + 2), accumulated
// in the zero-bordered plane pad and copied out. B = [1 0 0 0; 0 1 -1 1; -1 1 1 0; 0 0 0 -1].
DPT_CLONES void input_gradient_plane(const Plane &s, const float *v, size_t stride, float *dx, float *pad) {
  const size_t pw = s.padded_w(), tiles_x = s.tiles_x();
  for (size_t i = 0; i < s.padded_h() * pw; ++i) pad[i] = 0.0f;
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    const float *vt = v + ty * tiles_x;
    float *patch = pad + 2 * ty * pw;
    for (size_t tx = 0; tx < tiles_x; ++tx) {
      float q[kPoints];
      for (size_t p = 0; p < kPoints; ++p) q[p] = vt[p * stride + tx];
      float h[4][4];  // B dV
      for (size_t j = 0; j < 4; ++j) {
        h[0][j] = q[j];
        h[1][j] = q[4 + j] - q[8 + j] + q[12 + j];
        h[2][j] = q[4 + j] + q[8 + j] - q[j];
        h[3][j] = -q[12 + j];
      }
      for (size_t i = 0; i < 4; ++i) {
        float *row = patch + i * pw + 2 * tx;
        row[0] += h[i][0];
        row[1] += h[i][1] - h[i][2] + h[i][3];
        row[2] += h[i][1] + h[i][2] - h[i][0];
        row[3] -= h[i][3];
      }
    }
  }
  for (size_t y = 0; y < s.h; ++y)
    for (size_t i = 0; i < s.w; ++i) dx[y * s.w + i] = pad[(y + 1) * pw + 1 + i];
}

// The planes one after another.
void input(const Plane &s, Planes planes, const float *x, float *v, size_t stride, float *rows) {
  for (size_t i = 0; i < planes.count; ++i)
    input_plane(s, x + i * planes.apart, v + i * s.tiles(), stride, rows);
}
void output(const Plane &s, Planes planes, const float *m, size_t stride, float bias, float *y, float *rows) {
  for (size_t i = 0; i < planes.count; ++i)
    output_plane(s, m + i * s.tiles(), stride, bias, y + i * planes.apart, rows);
}
void output_gradient(const Plane &s, Planes planes, const float *dy, float *m, size_t stride, float *rows) {
  for (size_t i = 0; i < planes.count; ++i)
    output_gradient_plane(s, dy + i * planes.apart, m + i * s.tiles(), stride, rows);
}
void input_gradient(const Plane &s, Planes planes, const float *v, size_t stride, float *dx, float *rows) {
  for (size_t i = 0; i < planes.count; ++i)
    input_gradient_plane(s, v + i * s.tiles(), stride, dx + i * planes.apart, rows);
}

}  // namespace

size_t plane_rows_floats(const Plane &p, size_t planes) {
  // The portable loops: the zero-bordered plane and 4 rows; AVX-512: each padded row split in two, or (narrow
  // planes) every plane's zero-bordered copy.
  return std::max({(p.padded_h() + 4) * p.padded_w(), 2 * p.padded_h() * split_row_floats(p),
                   planes * p.padded_h() * p.padded_w()});
}

const Transforms &portable_transforms() {
  static const Transforms t{weights,         weight_gradient, input,   output,
                            output_gradient, input_gradient,  nullptr, nullptr};
  return t;
}

const Transforms &transforms() {
  static const Transforms &t = []() -> const Transforms & {
    const Transforms *fast = avx512_transforms();
    return fast != nullptr ? *fast : portable_transforms();
  }();
  return t;
}

}  // namespace dpt::cpu::winograd
