#include <bit>
#include <cstdint>
#include <cstring>

#include "nn/layers.hpp"

namespace dpt {

// Row by row: the innermost loop runs over the output columns, so it vectorizes.
void AvgPoolLayer::forward(const float *, const float *x, float *y, float *, float *,
                           const PassInfo &info) const {
  const auto &s = spec();
  const size_t k = s.kernel, h = s.in.h, w = s.in.w, oh = s.out.h, ow = s.out.w, stride = s.stride;
  const float scale = 1.0f / float(k * k);
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane) {
    const float *xp = x + plane * h * w;
    for (size_t oy = 0; oy < oh; ++oy) {
      float *__restrict yrow = y + (plane * oh + oy) * ow;
      std::memset(yrow, 0, ow * sizeof(float));
      for (size_t i = 0; i < k; ++i) {
        const float *__restrict xrow = xp + (oy * stride + i) * w;
        for (size_t j = 0; j < k; ++j)
          for (size_t ox = 0; ox < ow; ++ox) yrow[ox] += xrow[ox * stride + j];
      }
      for (size_t ox = 0; ox < ow; ++ox) yrow[ox] *= scale;
    }
  }
}

void AvgPoolLayer::backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                            const float *, float *, const PassInfo &info) const {
  if (dx == nullptr) return;
  const auto &s = spec();
  const size_t k = s.kernel, h = s.in.h, w = s.in.w, oh = s.out.h, ow = s.out.w, stride = s.stride;
  const float scale = 1.0f / float(k * k);
  std::memset(dx, 0, info.n * s.in.size() * sizeof(float));
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane) {
    float *dxp = dx + plane * h * w;
    for (size_t oy = 0; oy < oh; ++oy) {
      const float *__restrict dyrow = dy + (plane * oh + oy) * ow;
      for (size_t i = 0; i < k; ++i) {
        float *__restrict dxrow = dxp + (oy * stride + i) * w;
        for (size_t j = 0; j < k; ++j)
          for (size_t ox = 0; ox < ow; ++ox) dxrow[ox * stride + j] += dyrow[ox] * scale;
      }
    }
  }
}

void MaxPoolLayer::forward(const float *, const float *x, float *y, float *saved, float *,
                           const PassInfo &info) const {
  const auto &s = spec();
  const size_t k = s.kernel, h = s.in.h, w = s.in.w;
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane) {
    const float *xp = x + plane * h * w;
    for (size_t oy = 0; oy < s.out.h; ++oy)
      for (size_t ox = 0; ox < s.out.w; ++ox) {
        size_t best = (oy * s.stride) * w + ox * s.stride;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            size_t idx = (oy * s.stride + i) * w + ox * s.stride + j;
            if (xp[idx] > xp[best]) best = idx;
          }
        size_t o = plane * s.out.h * s.out.w + oy * s.out.w + ox;
        y[o] = xp[best];
        saved[o] = std::bit_cast<float>(uint32_t(best));  // the index of the maximum, bits stored as a float
      }
  }
}

void MaxPoolLayer::backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                            const float *saved, float *, const PassInfo &info) const {
  if (dx == nullptr) return;
  const auto &s = spec();
  const size_t in_plane = s.in.h * s.in.w, out_plane = s.out.h * s.out.w;
  std::memset(dx, 0, info.n * s.in.size() * sizeof(float));
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane)
    for (size_t q = 0; q < out_plane; ++q) {
      size_t o = plane * out_plane + q;
      dx[plane * in_plane + std::bit_cast<uint32_t>(saved[o])] += dy[o];
    }
}

}  // namespace dpt
