#include "parallel/bucket_reducer.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {
[[noreturn]] void aborted_error() {
  throw_error(DPT_ERROR_COMMUNICATION,
              "gradient all-reduce aborted: another device failed or the deadline passed");
}
}  // namespace

BucketReducer::BucketReducer(size_t ranks, std::vector<GradientBucket> buckets, BucketReduction reduce)
    // The communication threads share cores with busy device threads: they sleep rather than poll.
    : buckets_(std::move(buckets)), reduce_(std::move(reduce)), collective_(ranks, 0) {
  for (size_t r = 0; r < ranks; ++r) lanes_.push_back(std::make_unique<Lane>());
  try {
    for (size_t r = 0; r < ranks; ++r) lanes_[r]->thread = std::thread([this, r] { communicate(r); });
  } catch (...) {  // out of memory or threads: stop the threads already started
    stop();
    throw_error(DPT_ERROR_OUT_OF_MEMORY, "cannot start the gradient communication threads");
  }
}

BucketReducer::~BucketReducer() {
  stop();
}

void BucketReducer::stop() {
  stopping_.store(true);
  abort();  // wakes every lane
  for (auto &lane : lanes_)
    if (lane->thread.joinable()) lane->thread.join();
}

void BucketReducer::communicate(size_t rank) {
  Lane &lane = *lanes_[rank];
  for (;;) {
    size_t bucket;
    {
      std::unique_lock<std::mutex> lock(lane.mutex);
      lane.changed.wait(lock,
                        [&] { return stopping_.load() || (!aborted_.load() && lane.posted > lane.reduced); });
      if (stopping_.load()) return;
      bucket = lane.reduced;
      lane.busy = true;
    }
    bool ok = true;
    double seconds = 0;
    std::exception_ptr error;
    try {
      seconds = reduce_(collective_, rank, bucket);
    } catch (...) {  // the window is lost; the device thread hears of it in wait_all()
      ok = false;
      error = std::current_exception();
      abort();  // peers waiting for this rank must not wait forever
    }
    const double now = platform::now_seconds();
    std::lock_guard<std::mutex> lock(lane.mutex);
    lane.busy = false;
    if (ok) {
      ++lane.reduced;
      lane.reduce_seconds += seconds;
      lane.done_at = now;
    } else {
      lane.failed = true;
      lane.error = error;
    }
    lane.changed.notify_all();
  }
}

void BucketReducer::post(size_t rank, size_t count) {
  Lane &lane = *lanes_[rank];
  std::lock_guard<std::mutex> lock(lane.mutex);
  if (aborted_.load()) aborted_error();
  if (count <= lane.posted) return;
  lane.posted = count;
  if (count == buckets_.size()) lane.all_posted_at = platform::now_seconds();
  lane.changed.notify_all();
}

void BucketReducer::wait_reduced(size_t rank, size_t count) {
  Lane &lane = *lanes_[rank];
  std::unique_lock<std::mutex> lock(lane.mutex);
  lane.changed.wait(lock, [&] { return lane.reduced >= count || lane.failed || aborted_.load(); });
  if (lane.reduced < count) {
    if (lane.error) std::rethrow_exception(lane.error);
    aborted_error();
  }
}

void BucketReducer::wait_all(size_t rank) {
  Lane &lane = *lanes_[rank];
  std::unique_lock<std::mutex> lock(lane.mutex);
  lane.changed.wait(lock, [&] { return lane.reduced == buckets_.size() || lane.failed || aborted_.load(); });
  if (lane.reduced != buckets_.size()) {
    if (lane.error) std::rethrow_exception(lane.error);  // this rank's own failure: the root cause
    aborted_error();
  }
  lane.posted = lane.reduced = 0;
  lane.last_reduce_seconds = lane.reduce_seconds;
  lane.reduce_seconds = 0;
}

double BucketReducer::exposed_seconds(size_t rank) const {
  double last_post = 0;
  for (const auto &lane : lanes_) last_post = std::max(last_post, lane->all_posted_at);
  return std::max(0.0, lanes_[rank]->done_at - last_post);
}

void BucketReducer::abort() {
  aborted_.store(true);
  collective_.abort();
  for (auto &lane : lanes_) {
    std::lock_guard<std::mutex> lock(lane->mutex);
    lane->changed.notify_all();
  }
}

void BucketReducer::reset() {
  for (auto &lane : lanes_) {
    std::unique_lock<std::mutex> lock(lane->mutex);
    lane->changed.wait(lock, [&] { return !lane->busy; });
  }
  collective_.reset();
  for (auto &lane : lanes_) {
    std::lock_guard<std::mutex> lock(lane->mutex);
    lane->posted = lane->reduced = 0;
    lane->failed = false;
    lane->error = nullptr;
    lane->reduce_seconds = 0;
  }
  aborted_.store(false);
}

}  // namespace dpt
