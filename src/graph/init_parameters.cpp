#include "graph/init_parameters.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"

namespace dpt {

namespace {
void fill_constant(const ParamInfo &p, float *out) {
  std::fill(out, out + p.size(), p.init == ParamInit::kOne ? 1.0f : 0.0f);
}
}  // namespace

void init_parameters(const ModelSpec &spec, float *params, uint64_t seed, InitScheme scheme, float std) {
  for (size_t l = 0; l < spec.nodes().size(); ++l) {
    const Node &node = spec.nodes()[l];
    Rng rng(hash_combine(hash_combine(seed, uint64_t(Stream::kInit)), l));
    for (size_t k = 0; k < node.layout.params.size(); ++k) {
      if (node.tied[k]) continue;  // its source's values
      const ParamInfo &info = node.layout.params[k];
      float *p = params + node.param_offsets[k];
      if (info.init == ParamInit::kFanIn) {
        const double bound = 1.0 / std::sqrt(double(info.fan_in));
        for (size_t i = 0; i < info.size(); ++i)
          p[i] = scheme == InitScheme::kNormal ? float(rng.normal() * std)
                                               : float((2.0 * rng.uniform() - 1.0) * bound);
      } else {
        fill_constant(info, p);
      }
    }
  }
}

void init_buffers(const ModelSpec &spec, float *buffers) {
  for (const Node &node : spec.nodes()) {
    float *b = buffers + node.buffer_offset;
    for (const ParamInfo &info : node.layout.buffers) {
      fill_constant(info, b);
      b += info.size();
    }
  }
}

}  // namespace dpt
