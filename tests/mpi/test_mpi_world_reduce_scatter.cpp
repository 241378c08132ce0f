// World::reduce_scatter (the MPI module's MPI_Reduce_scatter in place, src/comm/world.cpp), run with mpirun
// -np 2, against World::all_reduce on the same data: each process's span of the range holds the
// all-reduce's very bits (two processes: every sum has two terms), for
//   - the whole vector, spans of different sizes (as a sharded layout cuts them);
//   - sub-ranges (gradient buckets) that cut a span, lie inside one span, or leave one process nothing;
//   - a 16-bit (bf16) wire, which all-reduces the range: the same bits as its all-reduce everywhere;
// and the floats outside this process's span of the range stay untouched outside the range.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/world.hpp"
#include "core/error.hpp"

namespace {

constexpr double kTimeout = 60.0;
int failures = 0;

void expect(bool condition, const dpt::World &world, const std::string &what) {
  if (condition) return;
  ++failures;
  std::fprintf(stderr, "process %zu: FAILED: %s\n", world.rank(), what.c_str());
}

// Different values on each process, with fractions that make the order of a sum matter.
std::vector<float> values(const dpt::World &world, size_t count) {
  std::vector<float> v(count);
  unsigned long long state = 1234567 + 7919 * world.rank();
  for (float &x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = float(int((state >> 33) % 20001) - 10000) / 997.0f;
  }
  return v;
}

void check_range(const dpt::World &world, const std::vector<size_t> &spans, size_t begin, size_t end,
                 dpt::WireType wire, const std::string &what) {
  const size_t count = spans.back();
  const std::vector<float> start = values(world, count);
  std::vector<float> reference = start, scattered = start;
  world.all_reduce(reference.data() + begin, end - begin, kTimeout, wire);
  world.reduce_scatter(scattered.data() + begin, begin, end, spans.data(), kTimeout, wire);
  const size_t lo = std::min(std::max(spans[world.rank()], begin), end);
  const size_t hi = std::min(std::max(spans[world.rank() + 1], begin), end);
  size_t wrong = 0, touched = 0;
  for (size_t i = lo; i < hi; ++i) wrong += scattered[i] != reference[i];
  for (size_t i = 0; i < count; ++i)
    if (i < begin || i >= end) touched += scattered[i] != start[i];
  expect(wrong == 0, world,
         what + ": " + std::to_string(wrong) + " of " + std::to_string(hi - lo) + " summed floats differ");
  expect(touched == 0, world, what + ": " + std::to_string(touched) + " floats outside the range changed");
  if (wire != dpt::WireType::kF32) {
    size_t other = 0;
    for (size_t i = begin; i < end; ++i) other += scattered[i] != reference[i];
    expect(other == 0, world, what + ": the 16-bit all-reduce differs outside the span");
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
    // Process 0's span is 3 blocks of 4096 floats, process 1's 2 blocks and a bit.
    const std::vector<size_t> spans = {0, 3 * 4096, 5 * 4096 + 77};
    const size_t n = spans.back();
    check_range(world, spans, 0, n, dpt::WireType::kF32, "the whole vector");
    check_range(world, spans, 1000, 20000, dpt::WireType::kF32, "a range across both spans");
    check_range(world, spans, 100, 4096, dpt::WireType::kF32, "a range inside process 0's span");
    check_range(world, spans, 3 * 4096 + 5, n - 3, dpt::WireType::kF32, "a range inside process 1's span");
    check_range(world, spans, 12288, 12288, dpt::WireType::kF32, "an empty range");
    check_range(world, spans, 0, n, dpt::WireType::kBF16, "the whole vector, bf16 wire");
    check_range(world, spans, 1000, 20000, dpt::WireType::kBF16, "a range across both spans, bf16 wire");
    double failed = failures > 0 ? 1 : 0;
    world.all_reduce(&failed, 1, kTimeout);
    if (world.rank() == 0) std::printf("World::reduce_scatter: %s\n", failed == 0 ? "ok" : "FAILED");
    return failed == 0 ? 0 : 1;
  } catch (const dpt::Error &e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
}
