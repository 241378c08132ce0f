// A reusable barrier for the device threads of a collective that can be aborted: when one device fails or
// a deadline passes, abort() wakes every waiter, which then throws DPT_ERROR_COMMUNICATION instead of
// waiting forever for a peer that will never arrive.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace dpt {

class AbortableBarrier {
 public:
  // spin_rounds: how long a waiter polls before it sleeps. Polling pays when every participant has a core
  // of its own (device threads between phases); threads that share cores with busy ones should not poll.
  explicit AbortableBarrier(size_t participants, int spin_rounds = 2000)
      : participants_(participants), spin_rounds_(spin_rounds) {}

  // Blocks until all participants have arrived; throws DPT_ERROR_COMMUNICATION once aborted.
  void arrive_and_wait();
  void abort();
  // Re-arms after an abort, once no thread is inside arrive_and_wait().
  void reset();

 private:
  const size_t participants_;
  const int spin_rounds_;
  std::mutex mutex_;
  std::condition_variable released_;
  size_t waiting_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> aborted_{false};
};

}  // namespace dpt
