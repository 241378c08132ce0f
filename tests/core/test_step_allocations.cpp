// A training step after the first allocates nothing: no device memory (checked through the arenas by
// test_determinism) and no host heap memory, counted here by replacing the global operator new.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "backend/context.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

namespace {
std::atomic<bool> counting{false};
std::atomic<size_t> allocations{0};
}  // namespace

void *operator new(size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, size_t) noexcept {
  std::free(p);
}

namespace {

void check_steady_state(dpt::AllReduceAlgorithm algorithm, size_t accumulation,
                        dpt::ShardMode shard = dpt::ShardMode::kNone, size_t pipeline_stages = 0) {
  auto context =
      std::make_shared<dpt::Context>(dpt::ContextConfig{pipeline_stages == 2 ? size_t(4) : size_t(3), 0});
  dpt::ModelSpec spec = dpt::ModelSpec::builtin("lenet");
  dpt::TrainerConfig config;
  config.allreduce = algorithm;
  config.accumulation_steps = accumulation;
  config.optimizer.momentum = 0.9f;
  config.shard = shard;
  config.pipeline_stages = pipeline_stages;
  config.micro_batches = 3;
  config.bucket_bytes =
      shard == dpt::ShardMode::kGradients || shard == dpt::ShardMode::kParameters ? 4096 : 0;
  dpt::Trainer trainer(context, spec, config);
  const size_t batch = 40;
  std::vector<float> x(batch * spec.input().size(), 0.5f);
  std::vector<int32_t> y(batch, 3);
  for (int i = 0; i < 2; ++i) trainer.step(x.data(), y.data(), batch);  // the first steps may allocate
  allocations = 0;
  counting = true;
  for (int i = 0; i < 6; ++i) trainer.step(x.data(), y.data(), batch);
  counting = false;
  if (allocations != 0)
    fail_msg("shard mode %d, %zu stages: %zu heap allocations in 6 steady-state steps", int(shard),
             pipeline_stages, allocations.load());
}

void test_no_heap_allocation_in_steady_state_steps(void **) {
  check_steady_state(dpt::AllReduceAlgorithm::kRing, 1);
  check_steady_state(dpt::AllReduceAlgorithm::kNaive, 2);
  // Sharded: the reduce-scatters, the norm's block sums, the all-gather, the staging slots, the gathers.
  check_steady_state(dpt::AllReduceAlgorithm::kRing, 1, dpt::ShardMode::kOptimizer);
  check_steady_state(dpt::AllReduceAlgorithm::kRing, 2, dpt::ShardMode::kGradients);
  check_steady_state(dpt::AllReduceAlgorithm::kNaive, 1, dpt::ShardMode::kParameters);
  // A pipeline: the micro-batches' slices and schedules, the hand-overs; 3 stages, and 2 stages x 2 replicas
  // (the stages' all-reduces).
  check_steady_state(dpt::AllReduceAlgorithm::kRing, 1, dpt::ShardMode::kNone, 3);
  check_steady_state(dpt::AllReduceAlgorithm::kRing, 2, dpt::ShardMode::kNone, 2);
}

// The counter itself works: one new, one count.
void test_counter_sees_allocations(void **) {
  allocations = 0;
  counting = true;
  std::unique_ptr<int> p(new int(7));
  counting = false;
  assert_int_equal(allocations.load(), 1);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_counter_sees_allocations),
      cmocka_unit_test(test_no_heap_allocation_in_steady_state_steps),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
