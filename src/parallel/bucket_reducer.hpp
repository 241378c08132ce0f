// All-reduce of gradient buckets overlapped with backward. Each rank has a communication thread (the CPU
// counterpart of a GPU's communication stream): the device thread posts buckets as backward finishes them
// and goes on computing; the communication threads of all ranks reduce each bucket together, in bucket
// order, as soon as every rank has posted it. The reduction of a bucket adds in the same per-element order
// as one all-reduce of the whole vector (see ThreadCollective), so overlapping changes no bit of a result.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

class BucketReducer {
 public:
  // world: when set, each bucket is then all-reduced across the processes too (by rank 0's thread, which
  // then broadcasts it to the process's other ranks), with timeout_seconds per MPI operation. wire: what
  // the reductions send (hierarchical_all_reduce).
  BucketReducer(size_t ranks, std::vector<GradientBucket> buckets, AllReduceAlgorithm algorithm,
                const World *world = nullptr, double timeout_seconds = 0, WireType wire = WireType::kF32);
  ~BucketReducer();
  BucketReducer(const BucketReducer &) = delete;
  BucketReducer &operator=(const BucketReducer &) = delete;

  const std::vector<GradientBucket> &buckets() const { return buckets_; }

  // Device thread of `rank`: buckets [0, count) of `grads` are final on this rank and may be reduced.
  // count never decreases within a window. Throws DPT_ERROR_COMMUNICATION once aborted.
  void post(size_t rank, float *grads, size_t count);
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
    float *grads = nullptr;
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
  AllReduceAlgorithm algorithm_;
  WireType wire_;
  const World *world_;
  double timeout_;
  ThreadCollective collective_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace dpt
