#include "parallel/stage_handoff.hpp"

#include <chrono>

#include "core/error.hpp"

namespace dpt {

void StageHandoff::reset(size_t micro_batches) {
  std::lock_guard<std::mutex> lock(mutex_);
  micro_batches_ = micro_batches;
  posted_.assign(2 * boundaries_ * micro_batches, 0);
}

void StageHandoff::post(Crossing what, size_t boundary, size_t micro) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_[index(what, boundary, micro)] = 1;
  }
  posted_cv_.notify_all();
}

void StageHandoff::wait(Crossing what, size_t boundary, size_t micro) {
  std::unique_lock<std::mutex> lock(mutex_);
  const size_t i = index(what, boundary, micro);
  // The abort flag is not under the mutex: check it every few milliseconds (only an aborted pass waits
  // that long; a post wakes the waiter at once).
  while (posted_[i] == 0) {
    if (aborted_.load(std::memory_order_relaxed))
      throw_error(DPT_ERROR_COMMUNICATION, "pipeline aborted: another stage failed or the deadline passed");
    posted_cv_.wait_for(lock, std::chrono::milliseconds(5));
  }
}

}  // namespace dpt
