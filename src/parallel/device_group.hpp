// The devices of one trainer, run together: one task per device, a collective among them, and a deadline.
// A device that fails aborts the collective so its peers stop waiting for it; a deadline that passes
// aborts everything (collectives, and the passes, which stop at the next layer); either way every task has
// returned before run() does, or the group is "lost": a task did not return even after the abort and a
// second deadline. A lost task may still run after run() returned, so a task may reach only what its
// owner keeps alive while outstanding() is true: run() keeps its own copy of the task function, and the
// function captures values and pointers to the owner's memory, never the caller's stack or buffers.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <type_traits>
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
  // group. Created by the HostGradientCollective when it overlaps (bucket size > 0 and more than one device
  // or process).
  void enable_bucket_reducer(std::vector<GradientBucket> buckets, BucketReduction reduce) {
    reducer_ = std::make_unique<BucketReducer>(devices_.size(), std::move(buckets), std::move(reduce));
  }
  BucketReducer *bucket_reducer() { return reducer_.get(); }
  // Collectives among consecutive ranks, `groups` groups of size() / groups ranks (a pipeline stage's
  // data-parallel replicas); aborted and re-armed with the group.
  void enable_subgroups(size_t groups);
  ThreadCollective &subgroup(size_t group) { return *subgroups_[group]; }

  // Runs fn(rank) on every device at once and waits. Throws the first failure (a device's own error before
  // the communication errors of the peers it aborted), or DPT_ERROR_TIMEOUT when the deadline passed.
  // fn is copied into the group (see the top of this file): capture by value, never [&].
  template <typename Fn>
  void run(const Fn &fn) {
    static_assert(std::is_trivially_copyable_v<Fn> && std::is_trivially_destructible_v<Fn> &&
                      sizeof(Fn) <= kTaskBytes && alignof(Fn) <= alignof(std::max_align_t),
                  "a device task captures a few values and pointers by value");
    run_erased([](void *f, size_t rank) { (*static_cast<Fn *>(f))(rank); }, &fn, sizeof(Fn));
  }

  // True once a task did not return even after the abort and a second deadline. The group refuses to
  // run again.
  bool lost() const { return lost_; }
  // True while a task of the last run() has not returned (only after a lost run): the owner must keep
  // everything the tasks reach alive until it is false.
  bool outstanding() const;
  // Set while the group is aborting; passes check it between layers (PassInfo::cancel) and stop.
  const std::atomic<bool> &aborted() const { return aborted_; }

 private:
  static constexpr size_t kTaskBytes = 64;

  void run_erased(void (*call)(void *, size_t), const void *fn, size_t size);
  void task(size_t rank);
  void abort_all();
  void stall(double seconds);

  std::vector<Device *> devices_;
  std::vector<size_t>
      lanes_;  // rank r runs on worker lanes_[r] of its device: its index among the ranks there
  double timeout_;
  ThreadCollective collective_;
  std::unique_ptr<BucketReducer> reducer_;
  std::vector<std::unique_ptr<ThreadCollective>> subgroups_;
  // The state of the current run(), kept here rather than on run()'s stack: a task that outlives a timeout
  // must still find it.
  mutable std::mutex mutex_;
  std::condition_variable done_;
  size_t remaining_ = 0;
  void (*call_)(void *, size_t) = nullptr;
  alignas(std::max_align_t) unsigned char fn_[kTaskBytes];  // the running task function's own copy
  std::array<std::exception_ptr, kMaxTrainerDevices> errors_;
  size_t first_failure_ = 0;
  bool failed_ = false;
  std::atomic<bool> aborted_{false};
  bool lost_ = false;
};

}  // namespace dpt
