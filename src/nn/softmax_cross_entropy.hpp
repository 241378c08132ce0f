// Softmax cross-entropy over logits [n, classes]: summed (not averaged) over the samples, so that slices
// of one batch can be added up and divided by the global batch size once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt {

struct LossStats {
  double loss_sum = 0.0;
  uint64_t correct = 0;  // argmax (first maximum) equals the label
};

// When dlogits is not null it receives softmax(logits) - onehot(label), per sample (not divided by n).
LossStats softmax_cross_entropy(const float *logits, const int32_t *labels, size_t n, size_t classes,
                                float *dlogits);

}  // namespace dpt
