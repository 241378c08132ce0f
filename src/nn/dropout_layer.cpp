#include <cstring>

#include "core/rng.hpp"
#include "nn/layers.hpp"

namespace dpt {

void DropoutLayer::forward(const float *, const float *x, float *y, float *saved, float *,
                           const PassInfo &info) const {
  const size_t per = spec().out.size(), count = info.n * per;
  if (!info.training || spec().rate == 0.0f) {
    if (y != x) std::memcpy(y, x, count * sizeof(float));
    for (size_t i = 0; i < count; ++i) saved[i] = 1.0f;
    return;
  }
  const float keep_scale = 1.0f / (1.0f - spec().rate);
  const uint64_t key = hash_combine(hash_combine(info.seed, uint64_t(Stream::kDropout)),
                                    hash_combine(info.step, info.layer_index));
  for (size_t s = 0; s < info.n; ++s) {
    const uint64_t sample_key = hash_combine(key, info.first_sample + s);
    for (size_t e = 0; e < per; ++e) {
      float m = uniform01(mix64(sample_key + e)) < spec().rate ? 0.0f : keep_scale;
      saved[s * per + e] = m;
      y[s * per + e] = x[s * per + e] * m;
    }
  }
}

void DropoutLayer::backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                            const float *saved, float *, const PassInfo &info) const {
  if (dx == nullptr) return;
  const size_t count = info.n * spec().out.size();
  for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * saved[i];
}

}  // namespace dpt
