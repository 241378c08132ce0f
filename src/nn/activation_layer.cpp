#include <cmath>

#include "nn/layers.hpp"

namespace dpt {

void ActivationLayer::forward(const float *, const float *x, float *y, float *, float *,
                              const PassInfo &info) const {
  const size_t count = info.n * spec().out.size();
  switch (spec().kind) {
    case LayerKind::kRelu:
      for (size_t i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      break;
    case LayerKind::kSigmoid:
      for (size_t i = 0; i < count; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    default:
      for (size_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
      break;
  }
}

void ActivationLayer::backward(const float *, const float *, const float *y, const float *dy, float *dx,
                               float *, const float *, float *, const PassInfo &info) const {
  if (dx == nullptr) return;
  const size_t count = info.n * spec().out.size();
  switch (spec().kind) {
    case LayerKind::kRelu:
      for (size_t i = 0; i < count; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      break;
    case LayerKind::kSigmoid:
      for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      break;
    default:
      for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      break;
  }
}

}  // namespace dpt
