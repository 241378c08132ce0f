// The parameters that tied slots read and add into (ModelSpec::tie), each once, packed one after another:
// the layout of the sharded modes' per-device copies of their values (ParameterGatherer) and of a backward
// pass's contributions to their gradients (ShardedGradientCollective). A tied slot belongs to a later node
// than its source, so in a bucketed pass it is visited far from the source's bucket: these small copies
// stand in for the source there.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/model_spec.hpp"

namespace dpt {

class TiedSources {
 public:
  struct Source {
    size_t offset = 0;  // of its first element in the flat parameter vector
    size_t count = 0;   // its floats
    size_t packed = 0;  // of its first element in the packed copy
  };

  explicit TiedSources(const ModelSpec &spec);

  bool empty() const { return sources_.empty(); }
  size_t floats() const { return floats_; }
  const std::vector<Source> &sources() const { return sources_; }
  // The index in sources() of the source whose first element is flat element `offset` (a tied slot's
  // param_offsets entry).
  size_t index(size_t offset) const;

 private:
  std::vector<Source> sources_;  // by offset
  size_t floats_ = 0;
};

}  // namespace dpt
