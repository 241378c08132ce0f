#include "optim/parameter_groups.hpp"

#include <algorithm>

namespace dpt {

std::vector<DecaySegment> decayed_segments(const ModelSpec &spec, const OptimizerConfig &config) {
  std::vector<DecaySegment> runs;
  if (!config.decay_matrices_only) {
    if (spec.parameter_count() > 0) runs.push_back({0, spec.parameter_count()});
    return runs;
  }
  // Each own tensor once, in flat order; a tied parameter decays its source when it is a matrix there (the
  // LM head tied to the token embedding: nanoGPT decays that shared matrix).
  std::vector<DecaySegment> matrices;
  for (const Node &node : spec.nodes())
    for (size_t k = 0; k < node.layout.params.size(); ++k)
      if (node.layout.params[k].matrix)
        matrices.push_back({node.param_offsets[k], node.layout.params[k].size()});
  std::sort(matrices.begin(), matrices.end(),
            [](const DecaySegment &a, const DecaySegment &b) { return a.offset < b.offset; });
  for (const DecaySegment &m : matrices) {
    if (!runs.empty() && runs.back().offset + runs.back().count > m.offset) continue;  // tied: seen
    if (!runs.empty() && runs.back().offset + runs.back().count == m.offset)
      runs.back().count += m.count;
    else
      runs.push_back(m);
  }
  return runs;
}

void apply_grouped_update(DeviceKernels &kernels, const OptimizerConfig &config,
                          const std::vector<DecaySegment> &decayed, uint64_t t, float lr, float grad_scale,
                          float *params, const float *grads, float *state, size_t begin, size_t end) {
  if (end <= begin) return;
  // The decayed runs clipped to [begin, end), visited in place: the update allocates nothing.
  auto for_each_run = [&](auto &&fn) {
    for (const DecaySegment &s : decayed) {
      const size_t lo = std::max(s.offset, begin), hi = std::min(s.offset + s.count, end);
      if (lo < hi) fn(lo, hi);
    }
  };
  size_t runs = 0, covered = 0;
  for_each_run([&](size_t lo, size_t hi) { ++runs, covered += hi - lo; });
  const bool all = runs == 1 && covered == end - begin;
  if (config.weight_decay == 0.0f || all) {
    kernels.apply_update(config, t, lr, grad_scale, params, grads, state, end - begin);
    return;
  }
  OptimizerConfig plain = config;
  plain.weight_decay = 0.0f;
  if (config.kind == OptimizerKind::kAdamW) {
    const float decay = 1.0f - lr * config.weight_decay;
    for_each_run([&](size_t lo, size_t hi) { kernels.scale(params + (lo - begin), hi - lo, decay); });
    kernels.apply_update(plain, t, lr, grad_scale, params, grads, state, end - begin);
    return;
  }
  // SGD: runs alternate between decayed and not; state (momentum) is one float per parameter, or none.
  const bool has_state = state_floats_per_parameter(config) > 0;
  size_t at = begin;
  auto update = [&](const OptimizerConfig &c, size_t lo, size_t hi) {
    if (hi > lo)
      kernels.apply_update(c, t, lr, grad_scale, params + (lo - begin), grads + (lo - begin),
                           has_state ? state + (lo - begin) : state, hi - lo);
  };
  for_each_run([&](size_t lo, size_t hi) {
    update(plain, at, lo);
    update(config, lo, hi);
    at = hi;
  });
  update(plain, at, end);
}

}  // namespace dpt
