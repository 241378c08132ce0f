// Weight decay by parameter group: with OptimizerConfig::decay_matrices_only, weight decay applies to the
// weight matrices (ParamInfo::matrix: dense, linear, conv2d) and not to biases, norms and embedding
// tables, as GPT recipes (nanoGPT's configure_optimizers) group them. A parameter tied to another
// (ModelSpec::tie) is one tensor: decayed when either node holds it as a weight matrix.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/device_kernels.hpp"
#include "graph/model_spec.hpp"
#include "optim/optimizer.hpp"

namespace dpt {

// A run of parameters in the flat vector that weight decay applies to.
struct DecaySegment {
  size_t offset = 0, count = 0;
};

// The decayed runs of spec's parameters under config (one run of all of them unless
// decay_matrices_only), adjacent runs merged.
std::vector<DecaySegment> decayed_segments(const ModelSpec &spec, const OptimizerConfig &config);

// apply_update over params[begin, end) (the whole flat vector, or the shard of it one device updates) with
// weight decay on the decayed runs only; params, grads and state point at the range's (params[0] is
// element begin; state_floats_per_parameter * (end - begin) floats of state, laid out as apply_update's for
// that count).
// The range decayed as a whole: apply_update itself (the same bits as before parameter groups). Otherwise
// AdamW first multiplies the decayed runs by 1 - lr * weight_decay (the decoupled decay apply_update starts
// with, so each element sees the same operations) and then updates every parameter without decay; SGD,
// whose L2 decay enters the gradient, updates each run with or without it (its state is one float per
// parameter). Every operation is per element: a range gets the bits of the same elements in a whole update.
void apply_grouped_update(DeviceKernels &kernels, const OptimizerConfig &config,
                          const std::vector<DecaySegment> &decayed, uint64_t t, float lr, float grad_scale,
                          float *params, const float *grads, float *state, size_t begin, size_t end);

}  // namespace dpt
