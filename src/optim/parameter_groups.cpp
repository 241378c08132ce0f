#include "optim/parameter_groups.hpp"

namespace dpt {

std::vector<DecaySegment> decayed_segments(const ModelSpec &spec, const OptimizerConfig &config) {
  std::vector<DecaySegment> runs;
  if (!config.decay_matrices_only) {
    if (spec.parameter_count() > 0) runs.push_back({0, spec.parameter_count()});
    return runs;
  }
  for (const Node &node : spec.nodes()) {
    size_t offset = node.param_offset;
    for (const ParamInfo &p : node.layout.params) {
      if (p.matrix) {
        if (!runs.empty() && runs.back().offset + runs.back().count == offset)
          runs.back().count += p.size();
        else
          runs.push_back({offset, p.size()});
      }
      offset += p.size();
    }
  }
  return runs;
}

void apply_grouped_update(DeviceKernels &kernels, const OptimizerConfig &config,
                          const std::vector<DecaySegment> &decayed, uint64_t t, float lr, float grad_scale,
                          float *params, const float *grads, float *state, size_t count) {
  const bool all = decayed.size() == 1 && decayed[0].offset == 0 && decayed[0].count == count;
  if (config.weight_decay == 0.0f || all) {
    kernels.apply_update(config, t, lr, grad_scale, params, grads, state, count);
    return;
  }
  OptimizerConfig plain = config;
  plain.weight_decay = 0.0f;
  if (config.kind == OptimizerKind::kAdamW) {
    const float decay = 1.0f - lr * config.weight_decay;
    for (const DecaySegment &s : decayed) kernels.scale(params + s.offset, s.count, decay);
    kernels.apply_update(plain, t, lr, grad_scale, params, grads, state, count);
    return;
  }
  // SGD: runs alternate between decayed and not; state (momentum) is one float per parameter, or none.
  const bool has_state = state_floats_per_parameter(config) > 0;
  size_t at = 0;
  auto update = [&](const OptimizerConfig &c, size_t begin, size_t end) {
    if (end > begin)
      kernels.apply_update(c, t, lr, grad_scale, params + begin, grads + begin,
                           has_state ? state + begin : state, end - begin);
  };
  for (const DecaySegment &s : decayed) {
    update(plain, at, s.offset);
    update(config, s.offset, s.offset + s.count);
    at = s.offset + s.count;
  }
  update(plain, at, count);
}

}  // namespace dpt
