#include "comm/abortable_barrier.hpp"

#include <thread>

#include "core/error.hpp"

namespace dpt {

namespace {
[[noreturn]] void aborted_error() {
  throw_error(DPT_ERROR_COMMUNICATION, "collective aborted: another device failed or the deadline passed");
}
}  // namespace

void AbortableBarrier::arrive_and_wait() {
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load()) aborted_error();
    generation = generation_.load();
    if (++waiting_ == participants_) {
      waiting_ = 0;
      generation_.fetch_add(1);
      released_.notify_all();
      return;
    }
  }
  // A peer usually arrives within microseconds, and a futex sleep/wake costs tens of them: poll first.
  for (int i = 0; i < spin_rounds_; ++i) {
    if (generation_.load(std::memory_order_acquire) != generation) return;
    if (aborted_.load(std::memory_order_relaxed)) break;
    if (i > spin_rounds_ / 2) std::this_thread::yield();  // more devices than cores: let the others run
  }
  std::unique_lock<std::mutex> lock(mutex_);
  released_.wait(lock, [&] { return generation_.load() != generation || aborted_.load(); });
  if (generation_.load() == generation) aborted_error();
}

void AbortableBarrier::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_.store(true);
  released_.notify_all();
}

void AbortableBarrier::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_.store(false);
  waiting_ = 0;
}

}  // namespace dpt
