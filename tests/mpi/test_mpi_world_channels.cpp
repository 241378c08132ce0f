// The World's channels (src/comm/world.hpp, the MPI module's duplicated communicators), run with mpirun -np
// 2: two threads of each process call collectives at the same time, one on the main channel (small sums of
// doubles, as batch norm's statistics from a device thread), one on the buckets' channel (float sums and
// reduce-scatters of a bucket's size, as a communication thread), and the processes post them in different
// interleavings (process 0's statistics thread runs ahead, process 1's bucket thread). Every result is an
// exact integer sum: a collective that met another thread's on a shared communicator would give other
// values, fail in MPI, or hang until the timeout.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/world.hpp"
#include "core/error.hpp"

namespace {

constexpr double kTimeout = 30.0;
constexpr int kStatisticsRounds = 300, kBucketRounds = 40;
constexpr size_t kBucket = 1 << 17;

// Counts its wrong results; a thrown error (timeout, MPI failure) counts as one.
struct Outcome {
  int wrong = 0;
  std::string error;
};

void pause_if(bool slow) {
  if (slow) std::this_thread::sleep_for(std::chrono::microseconds(300));
}

// Round r: process p contributes (p + 1) * (r + 1) + i to element i of 3; the sum is 3 (r + 1) + 2 i.
void statistics(const dpt::World &world, bool slow, Outcome &out) {
  try {
    for (int r = 0; r < kStatisticsRounds; ++r) {
      double values[3];
      for (int i = 0; i < 3; ++i) values[i] = double(world.rank() + 1) * (r + 1) + i;
      world.all_reduce(values, 3, kTimeout);
      for (int i = 0; i < 3; ++i) out.wrong += values[i] != 3.0 * (r + 1) + 2.0 * i;
      pause_if(slow);
    }
  } catch (const dpt::Error &e) {
    out.error = e.what();
  }
}

// Round r: process p contributes (p + 1) + (i + r) % 97 to element i; even rounds all-reduce the bucket,
// odd rounds reduce-scatter it (process 0 keeps the first third, process 1 the rest).
void buckets(const dpt::World &world, bool slow, Outcome &out) {
  try {
    std::vector<float> bucket(kBucket);
    const size_t spans[3] = {0, kBucket / 3, kBucket};
    for (int r = 0; r < kBucketRounds; ++r) {
      for (size_t i = 0; i < kBucket; ++i) bucket[i] = float(world.rank() + 1) + float((i + r) % 97);
      size_t lo = 0, hi = kBucket;
      if (r % 2 == 0) {
        world.all_reduce(bucket.data(), kBucket, kTimeout);
      } else {
        world.reduce_scatter(bucket.data(), 0, kBucket, spans, kTimeout);
        lo = spans[world.rank()], hi = spans[world.rank() + 1];
      }
      for (size_t i = lo; i < hi; ++i) out.wrong += bucket[i] != 3.0f + 2.0f * float((i + r) % 97);
      pause_if(slow);
    }
  } catch (const dpt::Error &e) {
    out.error = e.what();
  }
}

}  // namespace

int main() {
  setenv("DPTRAIN_BACKEND_PATH", DPT_TEST_MODULE_DIR, 0);
  try {
    const dpt::World &world = dpt::World::get();
    if (world.size() != 2) {
      std::fprintf(stderr, "run with mpirun -np 2 (got %zu processes)\n", world.size());
      return 1;
    }
    const dpt::World &bucket_world = world.channel(dpt::WorldChannel::kBuckets);
    const bool first = world.rank() == 0;
    Outcome a, b;
    std::thread statistics_thread(statistics, std::cref(world), !first, std::ref(a));
    std::thread bucket_thread(buckets, std::cref(bucket_world), first, std::ref(b));
    statistics_thread.join();
    bucket_thread.join();
    int failures = 0;
    for (const Outcome *o : {&a, &b}) {
      const char *which = o == &a ? "main channel (statistics)" : "buckets' channel";
      if (!o->error.empty())
        ++failures,
            std::fprintf(stderr, "process %zu: FAILED: %s: %s\n", world.rank(), which, o->error.c_str());
      if (o->wrong != 0)
        ++failures,
            std::fprintf(stderr, "process %zu: FAILED: %s: %d wrong sums\n", world.rank(), which, o->wrong);
    }
    if (!a.error.empty() || !b.error.empty()) return 1;  // MPI is unusable after a failed collective
    double failed = failures;
    world.all_reduce(&failed, 1, kTimeout);
    if (world.rank() == 0)
      std::printf("World channels, two threads at once: %s (%d statistics sums, %d bucket sums)\n",
                  failed == 0 ? "ok" : "FAILED", kStatisticsRounds, kBucketRounds);
    return failed == 0 ? 0 : 1;
  } catch (const dpt::Error &e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
}
