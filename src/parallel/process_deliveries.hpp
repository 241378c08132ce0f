// The process scope's sends and receives (ProcessRoutes, parallel/shard_layout.hpp) as the backend module's
// messages (CudaCollective::exchange), for the data-parallel and the pipeline GPU collectives alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "interface/backend_interface.h"
#include "parallel/shard_layout.hpp"

namespace dpt {

// The part of each message within [begin, end) of the vector (a gradient bucket; the whole by default),
// messages with nothing there left out; local rank r's vector starts at buffers[r].
inline std::vector<dpt_backend_message> deliveries_within(const std::vector<ProcessRoutes::Message> &messages,
                                                          const std::vector<float *> &buffers,
                                                          size_t begin = 0, size_t end = SIZE_MAX) {
  std::vector<dpt_backend_message> out;
  for (const ProcessRoutes::Message &m : messages) {
    const size_t lo = std::max(m.begin, begin), hi = std::min(m.end, end);
    if (lo < hi)
      out.push_back({int32_t(m.local), int32_t(m.peer), m.receive ? 1 : 0, buffers[m.local] + lo, hi - lo});
  }
  return out;
}

}  // namespace dpt
