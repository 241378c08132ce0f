#include <bit>
#include <cstdint>
#include <cstring>

#include "nn/layers.hpp"

namespace dpt {

void AvgPoolLayer::forward(const float *, const float *x, float *y, float *, float *,
                           const PassInfo &info) const {
  const auto &s = spec();
  const size_t k = s.kernel, h = s.in.h, w = s.in.w;
  const float scale = 1.0f / float(k * k);
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane) {
    const float *xp = x + plane * h * w;
    float *yp = y + plane * s.out.h * s.out.w;
    for (size_t oy = 0; oy < s.out.h; ++oy)
      for (size_t ox = 0; ox < s.out.w; ++ox) {
        float sum = 0.0f;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) sum += xp[(oy * s.stride + i) * w + ox * s.stride + j];
        yp[oy * s.out.w + ox] = sum * scale;
      }
  }
}

void AvgPoolLayer::backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                            const float *, float *, const PassInfo &info) const {
  if (dx == nullptr) return;
  const auto &s = spec();
  const size_t k = s.kernel, h = s.in.h, w = s.in.w;
  const float scale = 1.0f / float(k * k);
  std::memset(dx, 0, info.n * s.in.size() * sizeof(float));
  for (size_t plane = 0; plane < info.n * s.in.c; ++plane) {
    float *dxp = dx + plane * h * w;
    const float *dyp = dy + plane * s.out.h * s.out.w;
    for (size_t oy = 0; oy < s.out.h; ++oy)
      for (size_t ox = 0; ox < s.out.w; ++ox) {
        const float g = dyp[oy * s.out.w + ox] * scale;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) dxp[(oy * s.stride + i) * w + ox * s.stride + j] += g;
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
