#include "parallel/process_link.hpp"

#include "core/platform.hpp"

namespace dpt {

ProcessLink::ProcessLink(PipelineNeighbours neighbours, size_t stages, size_t devices)
    : n_(neighbours), sends_(devices) {
  if (n_.world == nullptr) n_.first_stage = 0;
  if (n_.world == nullptr || n_.total_stages == 0) n_.total_stages = stages;
  previous_ = n_.first_stage > 0;
  next_ = n_.first_stage + stages < n_.total_stages;
}

double ProcessLink::receive(bool from_next, Crossing what, size_t r, float *to, size_t count) const {
  if (count == 0) return 0;  // the sender skips an empty slice alike
  const double start = platform::now_seconds();
  n_.world->wait_message(neighbour(from_next), tag(what, r), n_.timeout_seconds);
  const double waited = platform::now_seconds() - start;
  n_.world->receive(to, count * sizeof(float), neighbour(from_next), tag(what, r), n_.timeout_seconds);
  return waited;
}

void ProcessLink::send(size_t d, bool to_next, Crossing what, size_t r, const float *from, size_t count) {
  if (count > 0)
    sends_[d].push_back(n_.world->start_send(from, count * sizeof(float), neighbour(to_next), tag(what, r)));
}

void ProcessLink::finish(size_t d, bool abandon) {
  std::vector<void *> &sends = sends_[d];
  for (size_t i = 0; i < sends.size(); ++i) {
    try {
      n_.world->finish_send(sends[i], n_.timeout_seconds, abandon);
    } catch (...) {  // the rest are withdrawn (and their handles freed); the first error is the pass's
      for (size_t j = i + 1; j < sends.size(); ++j) n_.world->finish_send(sends[j], 0, true);
      sends.clear();
      throw;
    }
  }
  sends.clear();
}

}  // namespace dpt
