#include "comm/thread_collective.hpp"

#include <algorithm>
#include <cstring>

#include "core/platform.hpp"

namespace dpt {

namespace {

// Calls fn(lo, hi) for every run of [begin, end) that belongs to ring chunk `chunk` of k: the blocks whose
// index is congruent to chunk modulo k.
template <typename Fn>
void for_each_run(size_t chunk, size_t k, size_t begin, size_t end, Fn &&fn) {
  constexpr size_t b = ThreadCollective::kRingBlock;
  if (begin >= end) return;
  size_t block = begin / b;
  block += (chunk + k - block % k) % k;  // the first block of this chunk at or after begin's block
  for (; block * b < end; block += k) fn(std::max(block * b, begin), std::min((block + 1) * b, end));
}

}  // namespace

ThreadCollective::ThreadCollective(size_t ranks, int spin_rounds)
    : ranks_(ranks), buffers_(ranks, nullptr), outputs_(ranks, nullptr), barrier_(ranks, spin_rounds) {}

void ThreadCollective::publish(size_t rank, float *buf) {
  buffers_[rank] = buf;
  barrier_.arrive_and_wait();  // every buffer is known and every rank has finished writing its input
}

double ThreadCollective::all_reduce_range(size_t rank, float *buf, size_t begin, size_t end,
                                          AllReduceAlgorithm algorithm, WireType wire) {
  if (ranks_ == 1) return 0.0;
  publish(rank, buf);
  const double t0 = platform::now_seconds();
  if (algorithm == AllReduceAlgorithm::kRing) {
    ring(rank, buf, begin, end, wire);
  } else {
    naive(rank, buf, begin, end, wire);
  }
  return platform::now_seconds() - t0;
}

// Ring all-reduce in shared memory, as NCCL's ring does it over links. The range is cut into K chunks.
// Reduce-scatter: in step s, rank r adds chunk (r - s - 1) of rank r-1 into its own; rank r+1 meanwhile
// reads chunk (r - s) of rank r, a different chunk, so there is no race. The last step also writes the
// finished sum into rank r+1's buffer (NCCL's "reduce-copy-send"), which saves the first all-gather step:
// rank r+1 is then working on chunk r+2 and rank r+2 reads chunk r+3 of it, neither of which is chunk
// r+1 unless K = 2, where the reader is rank r itself. All-gather: in step s (from 1), rank r copies the
// finished chunk (r - s) from rank r-1. Chunk c is summed starting at rank c and going round the ring: a
// fixed order per element. A 16-bit wire rounds each rank's contribution where it is first read (a rank's
// own chunk in the step that adds into it; its neighbour's in step 0, where that is a contribution too,
// afterwards a partial sum) and each finished sum as it is written: no pass of its own.
void ThreadCollective::ring(size_t rank, float *buf, size_t begin, size_t end, WireType wire) {
  const size_t k = ranks_;
  const float *left = buffers_[(rank + k - 1) % k];
  float *right = buffers_[(rank + 1) % k];
  for (size_t s = 0; s + 1 < k; ++s) {
    const size_t chunk = (rank + 2 * k - s - 1) % k;
    if (s + 2 < k) {
      for_each_run(chunk, k, begin, end, [&](size_t lo, size_t hi) {
        if (wire != WireType::kF32) {
          accumulate_for_wire(buf + lo, left + lo, hi - lo, true, s == 0, wire);
          return;
        }
        float *__restrict dst = buf;
        const float *__restrict src = left;
        for (size_t i = lo; i < hi; ++i) dst[i] += src[i];
      });
    } else {
      // For K = 2 right == left: each element is read before it is written, by this thread only.
      for_each_run(chunk, k, begin, end, [&](size_t lo, size_t hi) {
        if (wire != WireType::kF32) {
          finish_sums_for_wire(buf + lo, right + lo, left + lo, hi - lo, s == 0, wire);
          return;
        }
        float *__restrict dst = buf;
        float *next = right;
        const float *src = left;
        for (size_t i = lo; i < hi; ++i) {
          const float v = dst[i] + src[i];
          dst[i] = v;
          next[i] = v;
        }
      });
    }
    barrier_.arrive_and_wait();
  }
  for (size_t s = 1; s + 1 < k; ++s) {
    const size_t chunk = (rank + k - s) % k;
    for_each_run(chunk, k, begin, end,
                 [&](size_t lo, size_t hi) { std::memcpy(buf + lo, left + lo, (hi - lo) * sizeof(float)); });
    barrier_.arrive_and_wait();
  }
}

double ThreadCollective::reduce_scatter(size_t rank, float *buf, const size_t *bounds,
                                        AllReduceAlgorithm algorithm, WireType wire) {
  if (ranks_ == 1) return 0.0;
  publish(rank, buf);
  const double t0 = platform::now_seconds();
  // In place: sum_range reads a tile of the own buffer (a contribution) before it writes it, and no peer
  // reads this range of it.
  sum_range(0, bounds[rank], bounds[rank + 1], buf + bounds[rank], false, algorithm, wire);
  barrier_.arrive_and_wait();  // every range is read before any rank writes its buffer again
  return platform::now_seconds() - t0;
}

double ThreadCollective::reduce_scatter_bucket(size_t rank, const float *bucket, size_t begin, size_t end,
                                               const size_t *bounds, float *shard, bool accumulate,
                                               AllReduceAlgorithm algorithm, WireType wire) {
  if (ranks_ == 1) {  // the bucket is the sum (unrounded, as reduce_scatter leaves one rank's buffer)
    const size_t lo = std::max(begin, bounds[0]), hi = std::min(end, bounds[1]);
    const float *from = bucket + (lo - begin);
    float *to = shard + (lo - bounds[0]);
    if (lo < hi && accumulate)
      for (size_t i = 0; i < hi - lo; ++i) to[i] += from[i];
    else if (lo < hi && to != from)
      std::memmove(to, from, (hi - lo) * sizeof(float));
    return 0.0;
  }
  outputs_[rank] = shard;
  publish(rank, const_cast<float *>(bucket));  // read only
  const double t0 = platform::now_seconds();
  sum_chunk_into_owners(rank, begin, begin, end, bounds, accumulate, algorithm, wire);
  barrier_.arrive_and_wait();  // every rank's bucket is read and every sum written before any is used
  return platform::now_seconds() - t0;
}

double ThreadCollective::reduce_scatter_range(size_t rank, float *buf, size_t begin, size_t end,
                                              const size_t *bounds, AllReduceAlgorithm algorithm,
                                              WireType wire) {
  if (ranks_ == 1) return 0.0;
  outputs_[rank] = buf + bounds[rank];
  publish(rank, buf);
  const double t0 = platform::now_seconds();
  // In place: each element is read (a tile of every buffer, before the tile's sum is written) and written
  // by one rank only.
  sum_chunk_into_owners(rank, 0, begin, end, bounds, false, algorithm, wire);
  barrier_.arrive_and_wait();  // every sum is written before any owner uses it
  return platform::now_seconds() - t0;
}

void ThreadCollective::sum_chunk_into_owners(size_t rank, size_t base, size_t begin, size_t end,
                                             const size_t *bounds, bool accumulate,
                                             AllReduceAlgorithm algorithm, WireType wire) {
  size_t owner = 0;
  for_each_run(rank, ranks_, begin, end, [&](size_t lo, size_t hi) {
    while (lo < hi) {
      while (bounds[owner + 1] <= lo) ++owner;  // the runs ascend; an empty range is skipped
      const size_t stop = std::min(hi, bounds[owner + 1]);
      sum_range(base, lo, stop, outputs_[owner] + (lo - bounds[owner]), accumulate, algorithm, wire);
      lo = stop;
    }
  });
}

// In tiles, each summed on the stack in the order of its ring chunk (the all-reduce's order: starting at
// the rank whose ring chunk holds the tile, or at rank 0 for kNaive) and then stored.
void ThreadCollective::sum_range(size_t base, size_t lo, size_t hi, float *out, bool accumulate,
                                 AllReduceAlgorithm algorithm, WireType wire) {
  const size_t k = ranks_;
  constexpr size_t kTile = 1024;  // divides kRingBlock: a tile lies in one ring chunk
  alignas(64) float sum[kTile];
  for (size_t at = lo, next; at < hi; at = next) {
    next = std::min(hi, (at / kTile + 1) * kTile);
    const size_t n = next - at;
    const size_t first = algorithm == AllReduceAlgorithm::kRing ? (at / kRingBlock) % k : 0;
    if (k == 2 && wire == WireType::kF32) {
      // One pass, no tile on the stack: each element is read from both buffers before out's is written
      // (out may be one of them, at the same index), the two-rank sum's bits.
      const float *a = buffers_[first] + (at - base), *b = buffers_[1 - first] + (at - base);
      float *dst = out + (at - lo);
      if (accumulate)
        for (size_t i = 0; i < n; ++i) dst[i] += a[i] + b[i];
      else
        for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
      continue;
    }
    std::memcpy(sum, buffers_[first] + (at - base), n * sizeof(float));
    round_for_wire(sum, n, wire);
    for (size_t j = 1; j < k; ++j) {
      const float *src = buffers_[(first + j) % k] + (at - base);
      if (wire != WireType::kF32)
        accumulate_for_wire(sum, src, n, false, true, wire);
      else
        for (size_t i = 0; i < n; ++i) sum[i] += src[i];
    }
    round_for_wire(sum, n, wire);
    float *dst = out + (at - lo);
    if (accumulate)
      for (size_t i = 0; i < n; ++i) dst[i] += sum[i];
    else
      std::memcpy(dst, sum, n * sizeof(float));
  }
}

void ThreadCollective::all_gather(size_t rank, float *buf, const size_t *bounds) {
  if (ranks_ == 1) return;
  publish(rank, buf);
  for (size_t q = 0; q < ranks_; ++q)
    if (q != rank && bounds[q + 1] > bounds[q])
      std::memcpy(buf + bounds[q], buffers_[q] + bounds[q], (bounds[q + 1] - bounds[q]) * sizeof(float));
  barrier_.arrive_and_wait();  // no owner changes its range before every copy of it is done
}

void ThreadCollective::all_reduce_doubles(size_t rank, double *values, size_t count) {
  if (ranks_ == 1) return;
  publish(rank, reinterpret_cast<float *>(values));
  if (rank == 0)
    for (size_t r = 1; r < ranks_; ++r) {
      const double *other = reinterpret_cast<const double *>(buffers_[r]);
      for (size_t i = 0; i < count; ++i) values[i] += other[i];
    }
  barrier_.arrive_and_wait();
  if (rank != 0) std::memcpy(values, buffers_[0], count * sizeof(double));
  barrier_.arrive_and_wait();  // rank 0's values are read by all before a next call can change them
}

// Textbook: device 0 sums every buffer in rank order, then every other rank copies the result.
void ThreadCollective::naive(size_t rank, float *buf, size_t begin, size_t end, WireType wire) {
  if (rank == 0) {
    for (size_t r = 1; r < ranks_; ++r) {
      if (wire != WireType::kF32) {  // each contribution rounded as it is read
        accumulate_for_wire(buf + begin, buffers_[r] + begin, end - begin, r == 1, true, wire);
        continue;
      }
      const float *__restrict src = buffers_[r];
      float *__restrict dst = buf;
      for (size_t i = begin; i < end; ++i) dst[i] += src[i];
    }
    round_for_wire(buf + begin, end - begin, wire);
  }
  barrier_.arrive_and_wait();
  if (rank != 0 && end > begin) std::memcpy(buf + begin, buffers_[0] + begin, (end - begin) * sizeof(float));
  barrier_.arrive_and_wait();  // nobody reuses buffer 0 before every copy is done
}

void ThreadCollective::broadcast(size_t rank, float *buf, size_t count, size_t root) {
  if (ranks_ == 1) return;
  publish(rank, buf);
  if (rank != root && count != 0) std::memcpy(buf, buffers_[root], count * sizeof(float));
  barrier_.arrive_and_wait();
}

}  // namespace dpt
