#include "parallel/device_group.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {

// Waits on done until finished(), for at most `seconds` of the time this thread was able to run: a wake-up
// that comes much later than asked means the whole process was stopped (Ctrl-Z or SIGSTOP, then SIGCONT; a
// paused virtual machine), devices included, and that gap does not count. A device that hangs while this
// thread runs is timed as before: the thread wakes on time and counts every slice.
template <typename Finished>
bool wait_while_running(std::condition_variable &done, std::unique_lock<std::mutex> &lock, double seconds,
                        Finished finished) {
  using clock = std::chrono::steady_clock;
  constexpr clock::duration kSlice = std::chrono::milliseconds(250);
  constexpr clock::duration kLate = std::chrono::seconds(2);  // later than this: the process was stopped
  // At most a billion seconds (31 years): the count of nanoseconds must fit the clock's 64 bits.
  clock::duration left =
      std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(std::min(seconds, 1e9)));
  clock::time_point last = clock::now();
  while (!finished()) {
    if (left <= clock::duration::zero()) return false;
    const clock::duration slice = std::min(kSlice, left);
    done.wait_for(lock, slice, finished);
    const clock::time_point now = clock::now();
    const clock::duration passed = now - last;
    last = now;
    left -= passed > slice + kLate ? slice : passed;
  }
  return true;
}

}  // namespace

DeviceGroup::DeviceGroup(std::vector<Device *> devices, double timeout_seconds)
    : devices_(std::move(devices)), timeout_(timeout_seconds), collective_(devices_.size()) {
  DPT_REQUIRE(devices_.size() <= kMaxTrainerDevices, DPT_ERROR_OUT_OF_RANGE,
              "a trainer spans at most 64 devices");
  for (size_t r = 0; r < devices_.size(); ++r)
    lanes_.push_back(size_t(std::count(devices_.begin(), devices_.begin() + std::ptrdiff_t(r), devices_[r])));
}

DeviceGroup::~DeviceGroup() {
  // The owner destroys the group only once outstanding() is false (see retire_trainer); waiting here keeps
  // any other order safe.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return remaining_ == 0; });
}

bool DeviceGroup::outstanding() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return remaining_ != 0;
}

void DeviceGroup::enable_subgroups(size_t groups) {
  subgroups_.clear();
  for (size_t g = 0; g < groups; ++g)
    subgroups_.push_back(std::make_unique<ThreadCollective>(size() / groups));
}

void DeviceGroup::abort_all() {
  aborted_.store(true);
  collective_.abort();
  for (auto &g : subgroups_) g->abort();
  if (reducer_ != nullptr) reducer_->abort();
}

// An injected stall: sleeps, but returns early when the group aborts (as a real device reset would).
void DeviceGroup::stall(double seconds) {
  const double end = platform::now_seconds() + seconds;
  while (platform::now_seconds() < end && !aborted_.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void DeviceGroup::task(size_t rank) {
  try {
    const Fault fault = devices_[rank]->take_fault();
    if (fault.kind == FaultKind::kFail)
      throw_error(DPT_ERROR_DEVICE, "device " + devices_[rank]->name() + " failed (injected fault)");
    if (fault.kind == FaultKind::kStall) stall(fault.stall_seconds);
    if (fault.kind == FaultKind::kHang)
      std::this_thread::sleep_for(std::chrono::duration<double>(fault.stall_seconds));
    call_(fn_, rank);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[rank] = std::current_exception();
      if (!failed_) failed_ = true, first_failure_ = rank;
    }
    abort_all();  // peers waiting for this device in a collective must not wait forever
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (--remaining_ == 0) done_.notify_all();
}

void DeviceGroup::run_erased(void (*call)(void *, size_t), const void *fn, size_t size) {
  DPT_REQUIRE(!lost_, DPT_ERROR_INVALID_STATE, "a device of this group never returned from an earlier call");
  const size_t k = devices_.size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    call_ = call;
    std::memcpy(fn_, fn, size);  // trivially copyable: a lost task keeps reading this copy
    remaining_ = k;
    failed_ = false;
    for (size_t r = 0; r < k; ++r) errors_[r] = nullptr;
  }
  std::exception_ptr submit_error;
  for (size_t rank = 0; rank < k; ++rank) {
    try {
      devices_[rank]->submit([this, rank] { task(rank); }, lanes_[rank]);  // two words: no heap allocation
    } catch (...) {  // out of memory growing a queue: the tasks already queued must still finish
      submit_error = std::current_exception();
      abort_all();
      std::lock_guard<std::mutex> lock(mutex_);
      remaining_ -= k - rank;
      break;
    }
  }
  bool timed_out = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    auto finished = [&] { return remaining_ == 0; };
    if (timeout_ <= 0) {
      done_.wait(lock, finished);
    } else {
      if (!wait_while_running(done_, lock, timeout_, finished)) {
        timed_out = true;
        lock.unlock();
        abort_all();
        lock.lock();
        // The aborted tasks get as long again to come back; a task that does not is lost.
        if (!wait_while_running(done_, lock, timeout_, finished)) lost_ = true;
      }
    }
  }
  const bool aborted = aborted_.load();
  if (!lost_ && aborted) {  // every task has returned: re-arm for the next run
    collective_.reset();
    for (auto &g : subgroups_) g->reset();
    if (reducer_ != nullptr) reducer_->reset();
    aborted_.store(false);
  }
  if (lost_)
    throw_error(DPT_ERROR_TIMEOUT,
                "a device did not return within twice the " + std::to_string(timeout_) +
                    " s timeout; the trainer is unusable (destroying it frees its memory once the device "
                    "returns)");
  if (timed_out)
    throw_error(DPT_ERROR_TIMEOUT, "a multi-device operation exceeded the " + std::to_string(timeout_) +
                                       " s timeout and was aborted on every device");
  if (submit_error) std::rethrow_exception(submit_error);
  if (failed_) std::rethrow_exception(errors_[first_failure_]);
}

}  // namespace dpt
