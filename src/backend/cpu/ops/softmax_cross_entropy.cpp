#include "backend/cpu/ops/cpu_ops.hpp"
#include "interface/op_math.hpp"

#include <algorithm>
#include <cmath>

namespace dpt::cpu {

LossStats softmax_cross_entropy(const float *logits, const int32_t *labels, size_t n, size_t classes,
                                float *dlogits) {
  LossStats stats;
  for (size_t s = 0; s < n; ++s) {
    const float *z = logits + s * classes;
    if (labels[s] == kIgnoreLabel) {
      if (dlogits != nullptr) std::fill(dlogits + s * classes, dlogits + (s + 1) * classes, 0.0f);
      continue;
    }
    size_t best = 0;
    for (size_t c = 1; c < classes; ++c)
      if (z[c] > z[best]) best = c;
    const double zmax = z[best];
    double sum = 0.0;
    for (size_t c = 0; c < classes; ++c) sum += op_math::exp_double(double(z[c]) - zmax);
    const size_t label = size_t(labels[s]);
    stats.loss_sum += op_math::log_double(sum) - (double(z[label]) - zmax);
    if (best == label) ++stats.correct;
    if (dlogits != nullptr) {
      float *d = dlogits + s * classes;
      for (size_t c = 0; c < classes; ++c) d[c] = float(op_math::exp_double(double(z[c]) - zmax) / sum);
      d[label] -= 1.0f;
    }
  }
  return stats;
}

}  // namespace dpt::cpu
