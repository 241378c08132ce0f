// Reductions of gradient buckets overlapped with backward. Each rank has a communication thread (the CPU
// counterpart of a GPU's communication stream): the device thread posts buckets as backward finishes them
// and goes on computing; the communication threads of all ranks reduce each bucket together, in bucket
// order, as soon as every rank has posted it. What reducing a bucket means is the owner's BucketReduction:
// an all-reduce of the bucket in place (HostGradientCollective), or a reduce-scatter of it into the ranks'
// shards of the gradient (ShardedGradientCollective); either adds in the same per-element order as one
// all-reduce of the whole vector (see ThreadCollective), so overlapping changes no bit of a result.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/thread_collective.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

// Reduces bucket `bucket` on rank's communication thread, with the reducer's collective (every rank calls
// it for the same bucket); returns the seconds of the reduction itself. Throws as the collective does.
using BucketReduction = std::function<double(ThreadCollective &collective, size_t rank, size_t bucket)>;

class BucketReducer {
 public:
  BucketReducer(size_t ranks, std::vector<GradientBucket> buckets, BucketReduction reduce);
  ~BucketReducer();
  BucketReducer(const BucketReducer &) = delete;
  BucketReducer &operator=(const BucketReducer &) = delete;

  const std::vector<GradientBucket> &buckets() const { return buckets_; }

  // Device thread of `rank`: buckets [0, count) are final on this rank and may be reduced. count never
  // decreases within a window. Throws DPT_ERROR_COMMUNICATION once aborted.
  void post(size_t rank, size_t count);
  // Device thread of `rank`: waits until buckets [0, count) are reduced on this rank (so every rank is
  // done reading this rank's inputs of them). Throws DPT_ERROR_COMMUNICATION when aborted.
  void wait_reduced(size_t rank, size_t count);
  // Device thread of `rank`: waits until every bucket is reduced on this rank, then starts a new window.
  // Throws DPT_ERROR_COMMUNICATION when aborted.
  void wait_all(size_t rank);
  // Of the window that wait_all() last closed, once every rank has returned from it: the seconds rank's
  // communication thread spent reducing (not counting waits for peers to post), and the part of that
  // which ran after the last rank had finished backward, i.e. was not hidden behind it.
  double reduce_seconds(size_t rank) const { return lanes_[rank]->last_reduce_seconds; }
  double exposed_seconds(size_t rank) const;

  // Wakes every waiter, which then throws; the communication threads stop between buckets.
  void abort();
  // Re-arms after an abort, once the device tasks have returned; waits for the communication threads to
  // leave the bucket they were reducing.
  void reset();

 private:
  struct Lane {
    std::mutex mutex;
    std::condition_variable changed;
    size_t posted = 0, reduced = 0;
    bool busy = false;         // inside a reduction
    bool failed = false;       // a reduction of this window was aborted
    std::exception_ptr error;  // the failure of this lane's own reduction (a timeout across processes)
    double reduce_seconds = 0, last_reduce_seconds = 0;
    double all_posted_at = 0, done_at = 0;  // clock times of the window's last post and last reduction
    std::thread thread;
  };
  void communicate(size_t rank);
  void stop();

  std::vector<GradientBucket> buckets_;
  BucketReduction reduce_;
  ThreadCollective collective_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace dpt
