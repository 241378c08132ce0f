// The devices of one trainer, run together: one task per device, a collective among them, and a deadline.
// A device that fails aborts the collective so its peers stop waiting for it; a deadline that passes
// aborts everything; either way every task has returned before run() does (or the group is "lost").
#pragma once

#include <array>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/device.hpp"
#include "comm/thread_collective.hpp"
#include "parallel/bucket_reducer.hpp"

namespace dpt {

// Most devices one trainer can span.
constexpr size_t kMaxTrainerDevices = 64;

class DeviceGroup {
 public:
  // timeout_seconds: deadline of each run(); 0 = none.
  DeviceGroup(std::vector<Device *> devices, double timeout_seconds);
  ~DeviceGroup();
  DeviceGroup(const DeviceGroup &) = delete;
  DeviceGroup &operator=(const DeviceGroup &) = delete;

  size_t size() const { return devices_.size(); }
  ThreadCollective &collective() { return collective_; }
  // The communication threads that reduce gradient buckets during backward; aborted and re-armed with the
  // group. Created by the trainer when it overlaps (bucket size > 0 and more than one device).
  void enable_bucket_reducer(std::vector<GradientBucket> buckets, AllReduceAlgorithm algorithm,
                             const World *world) {
    reducer_ =
        std::make_unique<BucketReducer>(devices_.size(), std::move(buckets), algorithm, world, timeout_);
  }
  BucketReducer *bucket_reducer() { return reducer_.get(); }

  // Runs fn(rank) on every device at once and waits. Throws the first failure (a device's own error before
  // the communication errors of the peers it aborted), or DPT_ERROR_TIMEOUT when the deadline passed.
  template <typename Fn>
  void run(Fn &&fn) {
    using F = std::remove_reference_t<Fn>;
    run_erased([](void *f, size_t rank) { (*static_cast<F *>(f))(rank); }, &fn);
  }

  // True once a task did not return even after the abort and a second deadline: its memory may still be
  // in use, so the owner must not free what the tasks touch.
  bool lost() const { return lost_; }

 private:
  void run_erased(void (*call)(void *, size_t), void *fn);
  void task(size_t rank);
  void abort_all();
  void stall(double seconds);

  std::vector<Device *> devices_;
  double timeout_;
  ThreadCollective collective_;
  std::unique_ptr<BucketReducer> reducer_;
  // The state of the current run(), kept here rather than on run()'s stack: a task that outlives a timeout
  // must still find it.
  std::mutex mutex_;
  std::condition_variable done_;
  size_t remaining_ = 0;
  void (*call_)(void *, size_t) = nullptr;
  void *fn_ = nullptr;
  std::array<std::exception_ptr, kMaxTrainerDevices> errors_;
  size_t first_failure_ = 0;
  bool failed_ = false;
  std::atomic<bool> aborted_{false};
  bool lost_ = false;
};

}  // namespace dpt
