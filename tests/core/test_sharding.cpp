// Sharded data parallel, ZeRO stage 1 (TrainerConfig::shard = kOptimizer): the shard layout cuts the
// parameters at whole norm blocks; the reduce-scatter leaves every rank's range with the very bits of the
// all-reduce (ring and naive, float32 and 16-bit wires) and the all-gather restores the whole vector; a
// sharded trainer produces the bits of the unsharded one (K in {2, 3, 8}, even and weighted splits, ragged
// batches, accumulation, SGD-momentum and AdamW with clipping and decay on the matrices only, buckets, a
// 16-bit wire); its checkpoints hold the unsharded state and load into any device count and mode; and under
// a memory cap the unsharded trainer runs out of memory naming the device while the sharded one trains to
// the same parameters.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/context.hpp"
#include "comm/thread_collective.hpp"
#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

using dpt_test::TestRng;

void test_layout_cuts_whole_blocks_evenly(void **) {
  const size_t b = dpt::kNormBlock;
  for (size_t count : {size_t(1), b - 1, b, 5 * b + 3, 41 * b + 100, 200 * b})
    for (size_t k : {1, 2, 3, 8}) {
      const dpt::ShardLayout layout(count, k, true);
      assert_int_equal(layout.sharded(), k > 1);
      size_t covered = 0, smallest = SIZE_MAX, largest = 0;
      for (size_t r = 0; r < k; ++r) {
        assert_int_equal(layout.begin(r), covered);  // adjacent, in rank order
        assert_true(layout.begin(r) % b == 0);
        assert_true(layout.end(r) % b == 0 || layout.end(r) == count);
        covered = layout.end(r);
        const size_t blocks = (layout.size(r) + b - 1) / b;
        smallest = std::min(smallest, blocks), largest = std::max(largest, blocks);
      }
      assert_int_equal(covered, count);
      assert_true(largest - smallest <= 1);  // as even as whole blocks allow
      const dpt::ShardLayout whole(count, k, false);
      for (size_t r = 0; r < k; ++r) assert_int_equal(whole.size(r), count);
    }
}

// Runs fn(rank) on k threads at once.
template <typename Fn>
void on_threads(size_t k, Fn fn) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < k; ++r) threads.emplace_back([&fn, r] { fn(r); });
  for (auto &t : threads) t.join();
}

// Several ring blocks (so that the ring's starting rank changes along the vector), ranges cut at norm
// blocks and at arbitrary offsets (empty ranges too).
void test_reduce_scatter_has_the_all_reduce_bits(void **) {
  const size_t n = 3 * dpt::ThreadCollective::kRingBlock + 12345;
  for (size_t k : {2, 3, 5, 8})
    for (auto algorithm : {dpt::AllReduceAlgorithm::kRing, dpt::AllReduceAlgorithm::kNaive})
      for (auto wire : {dpt::WireType::kF32, dpt::WireType::kBF16, dpt::WireType::kF16}) {
        std::vector<std::vector<float>> inputs(k), reduced(k), scattered(k);
        for (size_t r = 0; r < k; ++r) {
          TestRng rng(10 * k + r);
          inputs[r] = rng.vector(n, -1.0f, 1.0f);
        }
        reduced = inputs;
        scattered = inputs;
        dpt::ThreadCollective all(k);
        on_threads(k, [&](size_t r) { all.all_reduce(r, reduced[r].data(), n, algorithm, wire); });
        std::vector<std::vector<size_t>> cuts = {dpt::ShardLayout(n, k, true).bounds(), {0}};
        TestRng rng(k);
        for (size_t r = 1; r < k; ++r) cuts[1].push_back(r == 1 ? 0 : cuts[1].back() + rng.below(n / k));
        cuts[1].push_back(n);
        for (const auto &bounds : cuts) {
          dpt::ThreadCollective c(k);
          std::vector<std::vector<float>> bufs = scattered;
          on_threads(k,
                     [&](size_t r) { c.reduce_scatter(r, bufs[r].data(), bounds.data(), algorithm, wire); });
          for (size_t r = 0; r < k; ++r) {
            const size_t lo = bounds[r], hi = bounds[r + 1];
            if (hi > lo && std::memcmp(bufs[r].data() + lo, reduced[r].data() + lo, (hi - lo) * 4) != 0)
              fail_msg("K=%zu algorithm=%d wire=%d: rank %zu's range [%zu, %zu) differs from the all-reduce",
                       k, int(algorithm), int(wire), r, lo, hi);
            if (lo > 0 && std::memcmp(bufs[r].data(), inputs[r].data(), lo * 4) != 0)
              fail_msg("rank %zu's values before its range were changed", r);
          }
          on_threads(k, [&](size_t r) { c.all_gather(r, bufs[r].data(), bounds.data()); });
          for (size_t r = 0; r < k; ++r)
            if (std::memcmp(bufs[r].data(), reduced[r].data(), n * 4) != 0)
              fail_msg("K=%zu: after the all-gather rank %zu does not hold the whole sum", k, r);
        }
      }
}

// Dense layers of 33 K and 131 K weights: 41 norm blocks, so every device of eight owns several.
dpt::ModelSpec model() {
  dpt::ModelSpec m(dpt::Shape{1, 8, 8});
  m.add_flatten();
  m.add_dense(512);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(256);
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(5);
  return m;
}

struct Run {
  size_t devices = 2;
  bool sharded = false;
  bool adamw = false;
  size_t accumulation = 1;
  bool weighted = false;
  size_t bucket_bytes = 0;
  dpt::DType wire = dpt::DType::kF32;
};

dpt::TrainerConfig config(const Run &run) {
  dpt::TrainerConfig c;
  c.seed = 7;
  c.shard = run.sharded ? dpt::ShardMode::kOptimizer : dpt::ShardMode::kNone;
  c.accumulation_steps = run.accumulation;
  c.bucket_bytes = run.bucket_bytes;
  c.allreduce_dtype = run.wire;
  if (run.weighted) {
    c.split = dpt::SplitPolicy::kWeighted;
    for (size_t i = 0; i < run.devices; ++i) c.weights.push_back(double(1 + 2 * i));
  }
  if (run.adamw) {
    c.optimizer.kind = dpt::OptimizerKind::kAdamW;
    c.optimizer.learning_rate = 0.01f;
    c.optimizer.weight_decay = 0.05f;
    c.optimizer.decay_matrices_only = true;  // decayed and undecayed runs cross the shard boundaries
    c.optimizer.clip_norm = 0.5f;            // the norm over the shards decides the scale
  } else {
    c.optimizer.learning_rate = 0.1f;
    c.optimizer.momentum = 0.9f;
    c.optimizer.weight_decay = 0.01f;
  }
  return c;
}

std::unique_ptr<dpt::Trainer> make_trainer(const Run &run) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, 0});
  return std::make_unique<dpt::Trainer>(context, model(), config(run));
}

// Ragged batches of 13 and 7 samples: uneven (and, weighted, tiny or empty) slices.
void step(dpt::Trainer &t, size_t s) {
  const size_t n = s % 2 == 0 ? 13 : 7;
  TestRng rng(300 + s);
  const std::vector<float> x = rng.vector(n * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(n);
  for (auto &label : y) label = int32_t(rng.below(5));
  t.step(x.data(), y.data(), n);
}

// Every replica's parameters, and the checkpointed state.
struct Outcome {
  std::vector<std::vector<float>> params;
  dpt::TrainerState state;
};

Outcome train(const Run &run, size_t steps) {
  auto t = make_trainer(run);
  for (size_t s = 0; s < steps; ++s) step(*t, s);
  Outcome o;
  for (size_t r = 0; r < t->device_count(); ++r) {
    o.params.emplace_back(t->parameter_count());
    t->get_parameters(r, o.params.back().data());
  }
  o.state = t->save_state();
  return o;
}

bool same(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void test_sharded_optimizer_changes_no_bit(void **) {
  for (size_t k : {2, 3, 8})
    for (bool adamw : {false, true})
      for (size_t accumulation : {1, 2})
        for (bool weighted : {false, true}) {
          Run run{k, false, adamw, accumulation, weighted};
          const Outcome reference = train(run, 6);
          run.sharded = true;
          const Outcome sharded = train(run, 6);
          for (size_t r = 0; r < k; ++r)
            if (!same(sharded.params[r], reference.params[0]))
              fail_msg("K=%zu adamw=%d accumulation=%zu weighted=%d: replica %zu's parameters differ", k,
                       int(adamw), accumulation, int(weighted), r);
          if (!same(sharded.state.optimizer_state, reference.state.optimizer_state))
            fail_msg("K=%zu adamw=%d accumulation=%zu weighted=%d: the optimizer state differs", k,
                     int(adamw), accumulation, int(weighted));
        }
}

// With buckets the gradient is all-reduced during backward and each device updates its range of it; with
// a 16-bit wire the reduce-scatter rounds as the all-reduce does.
void test_buckets_and_wires_change_no_bit(void **) {
  for (size_t bucket_bytes : {size_t(0), size_t(64) << 10})
    for (dpt::DType wire : {dpt::DType::kF32, dpt::DType::kBF16, dpt::DType::kF16}) {
      Run run{3, false, true, 1, true, bucket_bytes, wire};
      const Outcome reference = train(run, 4);
      run.sharded = true;
      const Outcome sharded = train(run, 4);
      for (size_t r = 0; r < 3; ++r)
        if (!same(sharded.params[r], reference.params[0]))
          fail_msg("bucket_bytes=%zu wire=%d: replica %zu's parameters differ", bucket_bytes, int(wire), r);
    }
}

// A checkpoint of a sharded trainer is the unsharded trainer's (the same bytes), and it resumes in any
// device count and mode: the continuation equals the unsharded continuation on the same devices.
void test_checkpoints_do_not_depend_on_the_sharding(void **) {
  const Run sharded3{3, true, true};
  auto a = make_trainer(sharded3);
  auto b = make_trainer(Run{3, false, true});
  for (size_t s = 0; s < 3; ++s) step(*a, s), step(*b, s);
  const dpt::TrainerState state = a->save_state();
  const dpt::TrainerState plain = b->save_state();
  assert_true(same(state.parameters, plain.parameters));
  assert_true(same(state.optimizer_state, plain.optimizer_state));
  // The sharded trainer goes on as if it had never stopped.
  auto resumed = make_trainer(sharded3);
  resumed->load_state(state);
  for (size_t s = 3; s < 5; ++s) step(*a, s), step(*resumed, s);
  std::vector<float> pa(a->parameter_count()), pr(pa.size());
  a->get_parameters(2, pa.data());
  resumed->get_parameters(1, pr.data());
  assert_true(same(pa, pr));
  assert_true(same(a->save_state().optimizer_state, resumed->save_state().optimizer_state));
  // Into two devices, sharded and not, and into eight sharded devices against eight unsharded ones.
  for (size_t k : {2, 8}) {
    auto s = make_trainer(Run{k, true, true});
    auto u = make_trainer(Run{k, false, true});
    s->load_state(state);
    u->load_state(state);
    for (size_t i = 3; i < 5; ++i) step(*s, i), step(*u, i);
    std::vector<float> ps(s->parameter_count()), pu(ps.size());
    s->get_parameters(k - 1, ps.data());
    u->get_parameters(0, pu.data());
    if (!same(ps, pu)) fail_msg("K=%zu: the sharded and the unsharded continuations differ", k);
    assert_true(same(s->save_state().optimizer_state, u->save_state().optimizer_state));
  }
}

// AdamW's state is 8 bytes per parameter: each replica holds its range's share of it.
void test_each_replica_holds_its_share_of_the_state(void **) {
  for (size_t k : {1, 3, 8}) {
    auto t = make_trainer(Run{k, true, true});
    const size_t count = t->parameter_count();
    uint64_t total = 0;
    for (size_t r = 0; r < k; ++r) {
      const dpt::ReplicaMemory m = t->replica_memory(r);
      assert_int_equal(m.parameters, count * 4);
      assert_int_equal(m.gradients, count * 4);
      assert_int_equal(m.optimizer_state, t->shards().size(r) * 8);
      assert_true(m.optimizer_state <= (count / k + dpt::kNormBlock) * 8);
      total += m.optimizer_state;
    }
    assert_int_equal(total, count * 8);
  }
  dpt_test::expect_error(
      [] {
        make_trainer(Run{2, true, true})->replica_memory(2);
      },
      DPT_ERROR_OUT_OF_RANGE, "replica 2 of 2");
}

// Wide enough that parameters, gradients and AdamW's state (16 bytes per parameter) dominate: under a cap
// between the sharded and the unsharded footprint, the unsharded trainer cannot be created and names the
// device; the sharded one trains to the very parameters of the unsharded one without the cap.
void test_sharding_fits_where_replication_does_not(void **) {
  dpt::ModelSpec wide(dpt::Shape{1, 8, 8});
  wide.add_flatten();
  wide.add_dense(1024);
  wide.add_activation(dpt::Activation::kRelu);
  wide.add_dense(1024);
  wide.add_activation(dpt::Activation::kRelu);
  wide.add_dense(5);
  const uint64_t count = wide.parameter_count();  // about 1.12 M: 18 MB replicated, 11.2 MB + 2.2 MB sharded
  const uint64_t cap = count * 13 + (2u << 20);
  Run run{4, false, true};
  auto capped = std::make_shared<dpt::Context>(dpt::ContextConfig{4, cap});
  const std::string message = dpt_test::expect_error([&] { dpt::Trainer(capped, wide, config(run)); },
                                                     DPT_ERROR_OUT_OF_MEMORY, "the unsharded trainer");
  assert_non_null(std::strstr(message.c_str(), "cpu:"));  // names the device
  run.sharded = true;
  dpt::Trainer sharded(capped, wide, config(run));
  run.sharded = false;
  dpt::Trainer reference(std::make_shared<dpt::Context>(dpt::ContextConfig{4, 0}), wide, config(run));
  for (size_t s = 0; s < 3; ++s) step(sharded, s), step(reference, s);
  std::vector<float> ps(count), pr(count);
  sharded.get_parameters(3, ps.data());
  reference.get_parameters(0, pr.data());
  assert_true(same(ps, pr));
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_cuts_whole_blocks_evenly),
      cmocka_unit_test(test_reduce_scatter_has_the_all_reduce_bits),
      cmocka_unit_test(test_sharded_optimizer_changes_no_bit),
      cmocka_unit_test(test_buckets_and_wires_change_no_bit),
      cmocka_unit_test(test_checkpoints_do_not_depend_on_the_sharding),
      cmocka_unit_test(test_each_replica_holds_its_share_of_the_state),
      cmocka_unit_test(test_sharding_fits_where_replication_does_not),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
