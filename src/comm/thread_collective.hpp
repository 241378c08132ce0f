// Collectives among the K device threads of one process, on buffers that live in each device's arena.
// Every rank calls the same operation with the same size; a rank reads its neighbours' buffers directly.
// Additions happen in a fixed order, so results are deterministic and identical on every rank.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/abortable_barrier.hpp"

namespace dpt {

enum class AllReduceAlgorithm { kRing, kNaive };

class ThreadCollective {
 public:
  explicit ThreadCollective(size_t ranks);
  size_t ranks() const { return ranks_; }

  // Sums buf over all ranks, in place, on every rank.
  void all_reduce(size_t rank, float *buf, size_t count, AllReduceAlgorithm algorithm);
  // Copies root's buf to every rank.
  void broadcast(size_t rank, float *buf, size_t count, size_t root);

  // Makes every rank waiting in (or entering) an operation throw DPT_ERROR_COMMUNICATION.
  void abort() { barrier_.abort(); }
  // Re-arms after an abort, when no rank is inside an operation.
  void reset() { barrier_.reset(); }

 private:
  void publish(size_t rank, float *buf);
  void ring(size_t rank, float *buf, size_t count);
  void naive(size_t rank, float *buf, size_t count);
  size_t chunk_begin(size_t chunk, size_t count) const { return chunk * count / ranks_; }

  size_t ranks_;
  std::vector<float *> buffers_;
  AbortableBarrier barrier_;
};

}  // namespace dpt
