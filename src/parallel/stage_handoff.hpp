// The hand-over between adjacent pipeline stages during one pass: which micro-batches' activations have
// crossed each boundary forward and which gradients have crossed it back. A stage posts after writing the
// values into the boundary's buffer and waits before reading them; a wait ends with
// DPT_ERROR_COMMUNICATION once the device group aborts (a peer failed or the deadline passed), so a stage
// never waits for a peer that is gone.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dpt {

enum class Crossing { kActivations, kGradients };

class StageHandoff {
 public:
  StageHandoff(size_t boundaries, const std::atomic<bool> &aborted)
      : boundaries_(boundaries), aborted_(aborted) {}

  // Caller thread, before a pass of micro_batches micro-batches (allocates only when there are more than
  // before).
  void reset(size_t micro_batches);
  void post(Crossing what, size_t boundary, size_t micro);
  void wait(Crossing what, size_t boundary, size_t micro);

 private:
  size_t index(Crossing what, size_t boundary, size_t micro) const {
    return (size_t(what) * boundaries_ + boundary) * micro_batches_ + micro;
  }

  size_t boundaries_, micro_batches_ = 0;
  const std::atomic<bool> &aborted_;
  std::mutex mutex_;
  std::condition_variable posted_cv_;
  std::vector<uint8_t> posted_;
};

}  // namespace dpt
