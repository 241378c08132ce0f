// The CPU reference kernels: one file per op, each a forward and a backward over a dpt_op_call
// (modules/interface/op_call.h), found by the op's name. They are the reference every other backend is
// checked against, and the simulated CUDA module (tests/sim_cuda) runs them as its own kernels. This
// library depends on nothing of the core but header-only helpers, BLAS and the plain-C call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interface/op_call.h"

namespace dpt::cpu {

struct OpKernel {
  const char *name;
  void (*forward)(const dpt_op_call &call);
  void (*backward)(const dpt_op_call &call);
  // Bytes of dpt_op_call::scratch one call needs (the call's shapes only are read); nullptr: none.
  size_t (*scratch_bytes)(const dpt_op_call &call);
};

// The kernel of the op named name, or nullptr when the CPU backend has none.
const OpKernel *find_op(const char *name);

// y[i] += x[i].
void accumulate(float *y, const float *x, size_t count);

struct LossStats {
  double loss_sum = 0.0;
  uint64_t correct = 0;  // argmax (first maximum) equals the label
};

// The label of a target that does not count (padding): no loss, no accuracy, a zero gradient row.
constexpr int32_t kIgnoreLabel = -1;

// Softmax cross-entropy over logits [n, classes] (n rows: samples, or every position of every sample),
// summed (not averaged) over the rows, so that slices of one batch can be added up and divided once by the
// global batch's count of targets. When dlogits is not null it receives softmax(logits) - onehot(label),
// per row (not divided by n); a row labelled kIgnoreLabel gets zeros and adds nothing.
LossStats softmax_cross_entropy(const float *logits, const int32_t *labels, size_t n, size_t classes,
                                float *dlogits);

}  // namespace dpt::cpu
