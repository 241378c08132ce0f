// "dropout": inverted dropout with a counter-based mask: the mask of (step, node, global sample, element)
// is the same whichever device computes it.
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "interface/op_math.hpp"

namespace dpt::cpu {

namespace {

void forward(const dpt_op_call &c) {
  const size_t per = sample_size(c.output), count = n(c) * per;
  const float rate = float(c.reals[0]);
  const float *x = in(c);
  float *y = out(c), *mask = static_cast<float *>(c.saved);
  if (c.training == 0 || rate == 0.0f) {
    if (y != x) std::memcpy(y, x, count * sizeof(float));
    for (size_t i = 0; i < count; ++i) mask[i] = 1.0f;
    return;
  }
  const float keep_scale = 1.0f / (1.0f - rate);
  const uint64_t key = op_math::dropout_key(c.seed, c.step, c.node);
  for (size_t s = 0; s < n(c); ++s) {
    const uint64_t sample_key = op_math::dropout_sample_key(key, c.first_sample + s);
    for (size_t e = 0; e < per; ++e) {
      const float m = op_math::dropout_factor(sample_key, e, rate, keep_scale);
      mask[s * per + e] = m;
      y[s * per + e] = x[s * per + e] * m;
    }
  }
}

void backward(const dpt_op_call &c) {
  float *d = dx(c);
  if (d == nullptr) return;
  const float *mask = static_cast<const float *>(c.saved);
  for (size_t i = 0, e = n(c) * sample_size(c.output); i < e; ++i) d[i] = dy(c)[i] * mask[i];
}

}  // namespace

extern const OpKernel kDropout = {"dropout", forward, backward, nullptr};

}  // namespace dpt::cpu
