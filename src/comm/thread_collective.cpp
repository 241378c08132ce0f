#include "comm/thread_collective.hpp"

#include <cstring>

namespace dpt {

ThreadCollective::ThreadCollective(size_t ranks) : ranks_(ranks), buffers_(ranks, nullptr), barrier_(ranks) {}

void ThreadCollective::publish(size_t rank, float *buf) {
  buffers_[rank] = buf;
  barrier_.arrive_and_wait();  // every buffer is known and every rank has finished writing its input
}

void ThreadCollective::all_reduce(size_t rank, float *buf, size_t count, AllReduceAlgorithm algorithm) {
  if (ranks_ == 1) return;
  publish(rank, buf);
  if (algorithm == AllReduceAlgorithm::kRing) {
    ring(rank, buf, count);
  } else {
    naive(rank, buf, count);
  }
}

// Ring all-reduce in shared memory. The buffer is cut into K chunks. Reduce-scatter: in step s, rank r adds
// chunk (r - s - 1) of rank r-1 into its own; rank r+1 meanwhile reads chunk (r - s) of rank r, a different
// chunk, so there is no race. After K-1 steps rank r holds the full sum of chunk r+1. All-gather: in step s,
// rank r copies the finished chunk (r - s) from rank r-1. Each chunk is summed starting at the rank with its
// index and going round the ring: a fixed order.
void ThreadCollective::ring(size_t rank, float *buf, size_t count) {
  const size_t k = ranks_;
  const float *left = buffers_[(rank + k - 1) % k];
  for (size_t s = 0; s + 1 < k; ++s) {
    size_t chunk = (rank + 2 * k - s - 1) % k;
    size_t begin = chunk_begin(chunk, count), end = chunk_begin(chunk + 1, count);
    float *__restrict dst = buf;
    const float *__restrict src = left;
    for (size_t i = begin; i < end; ++i) dst[i] += src[i];
    barrier_.arrive_and_wait();
  }
  for (size_t s = 0; s + 1 < k; ++s) {
    size_t chunk = (rank + k - s) % k;
    size_t begin = chunk_begin(chunk, count), end = chunk_begin(chunk + 1, count);
    if (end > begin) std::memcpy(buf + begin, left + begin, (end - begin) * sizeof(float));
    barrier_.arrive_and_wait();
  }
}

// Textbook: device 0 sums every buffer in rank order, then every other rank copies the result.
void ThreadCollective::naive(size_t rank, float *buf, size_t count) {
  if (rank == 0) {
    for (size_t r = 1; r < ranks_; ++r) {
      const float *__restrict src = buffers_[r];
      float *__restrict dst = buf;
      for (size_t i = 0; i < count; ++i) dst[i] += src[i];
    }
  }
  barrier_.arrive_and_wait();
  if (rank != 0 && count != 0) std::memcpy(buf, buffers_[0], count * sizeof(float));
  barrier_.arrive_and_wait();  // nobody reuses buffer 0 before every copy is done
}

void ThreadCollective::broadcast(size_t rank, float *buf, size_t count, size_t root) {
  if (ranks_ == 1) return;
  publish(rank, buf);
  if (rank != root && count != 0) std::memcpy(buf, buffers_[root], count * sizeof(float));
  barrier_.arrive_and_wait();
}

}  // namespace dpt
