// Collectives among the K device threads of one process, on buffers that live in each device's arena.
// Every rank calls the same operation with the same range; a rank reads (and the ring also writes) its
// neighbours' buffers directly. Additions happen in a fixed order that depends only on an element's index,
// so results are deterministic, identical on every rank, and the same whether a buffer is reduced whole or
// in pieces (gradient buckets). With a 16-bit wire type every rank's contribution is rounded to it where
// it is first read and the finished sums as they are written: what a 16-bit collective delivers (the
// partial sums stay float32, which shared memory allows).
#pragma once

#include <cstddef>
#include <vector>

#include "comm/abortable_barrier.hpp"
#include "comm/wire_type.hpp"

namespace dpt {

enum class AllReduceAlgorithm { kRing, kNaive };

class ThreadCollective {
 public:
  // The ring assigns elements to its K chunks in interleaved blocks of this many floats (256 KiB: smaller
  // blocks measured up to 1.5x slower at 64 MiB), so that any range of at least K blocks is shared evenly and
  // an element's chunk does not depend on the range.
  static constexpr size_t kRingBlock = 65536;

  // spin_rounds: see AbortableBarrier.
  explicit ThreadCollective(size_t ranks, int spin_rounds = 2000);
  size_t ranks() const { return ranks_; }

  // Sums buf[0, count) over all ranks, in place, on every rank. Returns the seconds from the moment every
  // rank had arrived to the end: the reduction itself, without waiting for late peers.
  double all_reduce(size_t rank, float *buf, size_t count, AllReduceAlgorithm algorithm,
                    WireType wire = WireType::kF32) {
    return all_reduce_range(rank, buf, 0, count, algorithm, wire);
  }
  // Sums buf[begin, end) over all ranks; buf is the start of the whole buffer on every rank. Reducing
  // [0, n) in pieces gives the same bits as reducing it at once. Returns seconds as all_reduce().
  double all_reduce_range(size_t rank, float *buf, size_t begin, size_t end, AllReduceAlgorithm algorithm,
                          WireType wire = WireType::kF32);
  // Sharded data parallel: afterwards buf[bounds[rank], bounds[rank + 1]) holds the sum over all ranks,
  // the very bits all_reduce(algorithm, wire) would leave there (each element added in the same order:
  // the ring's, starting at the rank whose ring chunk holds it, or rank order for kNaive); the rest of
  // buf is left as it was. bounds: ranks + 1 ascending offsets (the same on every rank). Each rank reads
  // its range of every peer's buffer directly: as many bytes as the ring's reduce-scatter moves, in one
  // step. Returns seconds as all_reduce().
  double reduce_scatter(size_t rank, float *buf, const size_t *bounds, AllReduceAlgorithm algorithm,
                        WireType wire = WireType::kF32);
  // reduce_scatter of the part [begin, end) of buf (a gradient bucket): afterwards buf[i] holds the sum,
  // with reduce_scatter's bits, for every i in [begin, end) that the rank owns. The work is cut as the ring
  // cuts it, not by owner: rank r sums the elements of ring chunk r and writes each sum into its owner's
  // buffer, so that every rank takes its share of a bucket that lies in one rank's range.
  double reduce_scatter_range(size_t rank, float *buf, size_t begin, size_t end, const size_t *bounds,
                              AllReduceAlgorithm algorithm, WireType wire = WireType::kF32);
  // Sharded gradients: every rank's `bucket` holds the elements [begin, end) of its gradient (bucket[0] is
  // element begin). Afterwards rank's `shard` (shard[0] is element bounds[rank]) holds, in the part of
  // [begin, end) that the rank owns, the sum over all ranks with reduce_scatter's bits, stored
  // (accumulate false) or added to what the shard held (accumulate true: the sum first, then one addition).
  // The work is cut as in reduce_scatter_range. One rank: its bucket copied (or added) into its shard.
  double reduce_scatter_bucket(size_t rank, const float *bucket, size_t begin, size_t end,
                               const size_t *bounds, float *shard, bool accumulate,
                               AllReduceAlgorithm algorithm, WireType wire = WireType::kF32);
  // The inverse: afterwards every rank's buf holds, in each range [bounds[q], bounds[q + 1]), rank q's
  // values of it (each rank copies the ranges it does not own from their owners).
  void all_gather(size_t rank, float *buf, const size_t *bounds);
  // Sums values[0, count) over all ranks in rank order, in place: rank 0 adds, the others copy. For a few
  // numbers (batch statistics) in the middle of a pass; the same bits on every rank.
  void all_reduce_doubles(size_t rank, double *values, size_t count);
  // Waits until every rank has arrived (throws DPT_ERROR_COMMUNICATION when aborted).
  void barrier(size_t /*rank*/) {
    if (ranks_ > 1) barrier_.arrive_and_wait();
  }
  // Copies root's buf to every rank.
  void broadcast(size_t rank, float *buf, size_t count, size_t root);

  // Makes every rank waiting in (or entering) an operation throw DPT_ERROR_COMMUNICATION.
  void abort() { barrier_.abort(); }
  // Re-arms after an abort, when no rank is inside an operation.
  void reset() { barrier_.reset(); }

 private:
  void publish(size_t rank, float *buf);
  void ring(size_t rank, float *buf, size_t begin, size_t end, WireType wire);
  // The reduce-scatters' sums: out[i - lo] (=, or += the sum) for i in [lo, hi), where rank q's value of
  // element i is buffers_[q][i - base].
  void sum_range(size_t base, size_t lo, size_t hi, float *out, bool accumulate, AllReduceAlgorithm algorithm,
                 WireType wire);
  void naive(size_t rank, float *buf, size_t begin, size_t end, WireType wire);
  // The reduce-scatters of a bucket: rank sums the elements of its ring chunk in [begin, end) (rank q's
  // value of element i is buffers_[q][i - base]) into their owners' outputs (element i of owner q is
  // outputs_[q][i - bounds[q]]).
  void sum_chunk_into_owners(size_t rank, size_t base, size_t begin, size_t end, const size_t *bounds,
                             bool accumulate, AllReduceAlgorithm algorithm, WireType wire);

  size_t ranks_;
  std::vector<float *> buffers_;
  std::vector<float *> outputs_;  // the reduce-scatters' destinations, each rank's range
  AbortableBarrier barrier_;
};

}  // namespace dpt
