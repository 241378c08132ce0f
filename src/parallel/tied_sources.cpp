#include "parallel/tied_sources.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dpt {

TiedSources::TiedSources(const ModelSpec &spec) {
  for (const Node &node : spec.nodes())
    for (size_t k = 0; k < node.layout.params.size(); ++k)
      if (node.tied[k]) sources_.push_back(Source{node.param_offsets[k], node.layout.params[k].size(), 0});
  std::sort(sources_.begin(), sources_.end(),
            [](const Source &a, const Source &b) { return a.offset < b.offset; });
  sources_.erase(std::unique(sources_.begin(), sources_.end(),
                             [](const Source &a, const Source &b) { return a.offset == b.offset; }),
                 sources_.end());
  for (Source &s : sources_) s.packed = floats_, floats_ += s.count;
}

size_t TiedSources::index(size_t offset) const {
  const auto it = std::lower_bound(sources_.begin(), sources_.end(), offset,
                                   [](const Source &s, size_t o) { return s.offset < o; });
  DPT_REQUIRE(it != sources_.end() && it->offset == offset, DPT_ERROR_INTERNAL,
              "no tied parameter starts at element " + std::to_string(offset));
  return size_t(it - sources_.begin());
}

}  // namespace dpt
