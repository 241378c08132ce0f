// "avg_pool2d" and "max_pool2d": square windows, no padding, x [c, h, w].
#include <cstdint>
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"

namespace dpt::cpu {

namespace {

struct Pool {
  size_t planes, h, w, k, stride, oh, ow;
};

Pool pool_of(const dpt_op_call &c) {
  const dpt_tensor &x = c.inputs[0], &y = c.output;
  return Pool{n(c) * size_t(x.dims[0]), size_t(x.dims[1]), size_t(x.dims[2]), size_t(c.ints[0]),
              size_t(c.ints[1]),        size_t(y.dims[1]), size_t(y.dims[2])};
}

// 2x2 windows, stride 2 (LeNet's): each output from its two input rows, in avg_forward's order of sums
// (from zero, row by row, left to right), so the bits are the general loop's. Its loads are unit-stride
// pairs, which vectorize where the general loop's strided ones did not (3-4x on LeNet's planes).
DPT_CLONES void avg_forward_2x2(const Pool &s, const float *x, float *y) {
  for (size_t plane = 0; plane < s.planes; ++plane)
    for (size_t oy = 0; oy < s.oh; ++oy) {
      const float *__restrict top = x + (plane * s.h + 2 * oy) * s.w, *__restrict bottom = top + s.w;
      float *__restrict yrow = y + (plane * s.oh + oy) * s.ow;
      for (size_t ox = 0; ox < s.ow; ++ox)
        yrow[ox] = ((((0.0f + top[2 * ox]) + top[2 * ox + 1]) + bottom[2 * ox]) + bottom[2 * ox + 1]) * 0.25f;
    }
}

// Windows that do not overlap: each input gets at most one window's share, 0 + dy * scale as avg_backward
// adds it, and a zero past the last window (an odd plane's last column and row).
DPT_CLONES void avg_backward_2x2(const Pool &s, const float *dy, float *d) {
  for (size_t plane = 0; plane < s.planes; ++plane) {
    float *dxp = d + plane * s.h * s.w;
    for (size_t oy = 0; oy < s.oh; ++oy) {
      const float *__restrict dyrow = dy + (plane * s.oh + oy) * s.ow;
      float *__restrict top = dxp + 2 * oy * s.w, *__restrict bottom = top + s.w;
      for (size_t ox = 0; ox < s.ow; ++ox) {
        const float share = 0.0f + dyrow[ox] * 0.25f;
        top[2 * ox] = top[2 * ox + 1] = bottom[2 * ox] = bottom[2 * ox + 1] = share;
      }
      for (size_t x = 2 * s.ow; x < s.w; ++x) top[x] = bottom[x] = 0.0f;
    }
    std::memset(dxp + 2 * s.oh * s.w, 0, (s.h - 2 * s.oh) * s.w * sizeof(float));
  }
}

// Row by row: the innermost loop runs over the output columns, so it vectorizes.
void avg_forward(const dpt_op_call &c) {
  const Pool s = pool_of(c);
  if (s.k == 2 && s.stride == 2) return avg_forward_2x2(s, in(c), out(c));
  const float scale = 1.0f / float(s.k * s.k);
  for (size_t plane = 0; plane < s.planes; ++plane) {
    const float *xp = in(c) + plane * s.h * s.w;
    for (size_t oy = 0; oy < s.oh; ++oy) {
      float *__restrict yrow = out(c) + (plane * s.oh + oy) * s.ow;
      std::memset(yrow, 0, s.ow * sizeof(float));
      for (size_t i = 0; i < s.k; ++i) {
        const float *__restrict xrow = xp + (oy * s.stride + i) * s.w;
        for (size_t j = 0; j < s.k; ++j)
          for (size_t ox = 0; ox < s.ow; ++ox) yrow[ox] += xrow[ox * s.stride + j];
      }
      for (size_t ox = 0; ox < s.ow; ++ox) yrow[ox] *= scale;
    }
  }
}

void avg_backward(const dpt_op_call &c) {
  float *d = dx(c);
  if (d == nullptr) return;
  const Pool s = pool_of(c);
  if (s.k == 2 && s.stride == 2) return avg_backward_2x2(s, dy(c), d);
  const float scale = 1.0f / float(s.k * s.k);
  std::memset(d, 0, s.planes * s.h * s.w * sizeof(float));
  for (size_t plane = 0; plane < s.planes; ++plane) {
    float *dxp = d + plane * s.h * s.w;
    for (size_t oy = 0; oy < s.oh; ++oy) {
      const float *__restrict dyrow = dy(c) + (plane * s.oh + oy) * s.ow;
      for (size_t i = 0; i < s.k; ++i) {
        float *__restrict dxrow = dxp + (oy * s.stride + i) * s.w;
        for (size_t j = 0; j < s.k; ++j)
          for (size_t ox = 0; ox < s.ow; ++ox) dxrow[ox * s.stride + j] += dyrow[ox] * scale;
      }
    }
  }
}

// Saves the index (within the plane) of each window's first maximum.
void max_forward(const dpt_op_call &c) {
  const Pool s = pool_of(c);
  int32_t *saved = static_cast<int32_t *>(c.saved);
  for (size_t plane = 0; plane < s.planes; ++plane) {
    const float *xp = in(c) + plane * s.h * s.w;
    for (size_t oy = 0; oy < s.oh; ++oy)
      for (size_t ox = 0; ox < s.ow; ++ox) {
        size_t best = (oy * s.stride) * s.w + ox * s.stride;
        for (size_t i = 0; i < s.k; ++i)
          for (size_t j = 0; j < s.k; ++j) {
            const size_t idx = (oy * s.stride + i) * s.w + ox * s.stride + j;
            if (xp[idx] > xp[best]) best = idx;
          }
        const size_t o = (plane * s.oh + oy) * s.ow + ox;
        out(c)[o] = xp[best];
        saved[o] = int32_t(best);
      }
  }
}

void max_backward(const dpt_op_call &c) {
  float *d = dx(c);
  if (d == nullptr) return;
  const Pool s = pool_of(c);
  const int32_t *saved = static_cast<const int32_t *>(c.saved);
  const size_t in_plane = s.h * s.w, out_plane = s.oh * s.ow;
  std::memset(d, 0, s.planes * in_plane * sizeof(float));
  for (size_t plane = 0; plane < s.planes; ++plane)
    for (size_t q = 0; q < out_plane; ++q) {
      const size_t o = plane * out_plane + q;
      d[plane * in_plane + size_t(saved[o])] += dy(c)[o];
    }
}

}  // namespace

extern const OpKernel kAvgPool2d = {"avg_pool2d", avg_forward, avg_backward, nullptr};
extern const OpKernel kMaxPool2d = {"max_pool2d", max_forward, max_backward, nullptr};

}  // namespace dpt::cpu
