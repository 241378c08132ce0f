// Sharded data parallel, ZeRO stage 1 (TrainerConfig::shard = kOptimizer): the shard layout cuts the
// parameters at whole norm blocks; the reduce-scatter leaves every rank's range with the very bits of the
// all-reduce (ring and naive, float32 and 16-bit wires) and the all-gather restores the whole vector; a
// sharded trainer produces the bits of the unsharded one (K in {2, 3, 8}, even and weighted splits, ragged
// batches, accumulation, SGD-momentum and AdamW with clipping and decay on the matrices only, buckets, a
// 16-bit wire); the process scope's routes over one communicator of every process's devices (GPUs) bring each
// piece's sum to every owner of it; its checkpoints hold the unsharded state and load into any device count
// and mode; and under a memory cap the unsharded trainer runs out of memory naming the device while the
// sharded one trains to the same parameters.
#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The process scope's routes over one communicator of every process's devices (process_routes), played
// out on plain vectors: rank g's gradient is g + 1 everywhere; each reduce range (the same on every process)
// gets the sum at its root, every send is matched by its peer's receive of the same piece in the same
// order, and afterwards every rank holds the sum exactly on its own range of its process's layout, and the
// roots are spread over the processes.
void test_process_scope_routes_reach_every_owner(void **) {
  const size_t b = dpt::kNormBlock;
  const std::vector<std::vector<size_t>> jobs = {{2, 2}, {2, 3}, {1, 2}, {3, 1, 2}, {4, 4}, {2, 2, 2, 2}};
  for (const std::vector<size_t> &devices : jobs)
    for (size_t count : {size_t(100), 3 * b + 5, 41 * b + 100}) {
      const size_t processes = devices.size();
      std::vector<size_t> first(1, 0);
      for (size_t d : devices) first.push_back(first.back() + d);
      const size_t world = first.back(), sum = world * (world + 1) / 2;
      std::vector<std::vector<float>> grads(world, std::vector<float>(count));
      for (size_t g = 0; g < world; ++g) std::fill(grads[g].begin(), grads[g].end(), float(g + 1));
      std::vector<dpt::ProcessRoutes> routes;
      for (size_t p = 0; p < processes; ++p) routes.push_back(dpt::process_routes(count, devices, p));
      const std::vector<size_t> &bounds = routes[0].reduce_bounds;
      assert_int_equal(bounds.size(), world + 1);
      assert_int_equal(bounds.front(), 0);
      assert_int_equal(bounds.back(), count);
      std::vector<size_t> rooted(processes, 0);  // elements each process is root of
      for (size_t p = 0; p < processes; ++p) {
        assert_int_equal(routes[p].first_rank, first[p]);
        assert_true(routes[p].reduce_bounds == bounds);
        for (size_t r = 0; r < devices[p]; ++r) {
          const size_t g = first[p] + r;
          assert_true(bounds[g] <= bounds[g + 1]);
          for (size_t i = bounds[g]; i < bounds[g + 1]; ++i) grads[g][i] = float(sum);
          rooted[p] += bounds[g + 1] - bounds[g];
        }
      }
      // Each sender's messages to one peer in order, against that peer's receives from it in order.
      for (size_t p = 0; p < processes; ++p)
        for (const dpt::ProcessRoutes::Message &m : routes[p].messages) {
          if (m.receive) continue;
          const size_t from = first[p] + m.local, to = m.peer;
          size_t q = 0;
          while (first[q + 1] <= to) ++q;
          assert_true(q != p);
          size_t k = 0;  // m's place among from's sends to `to`
          for (const dpt::ProcessRoutes::Message &n : routes[p].messages) {
            if (&n == &m) break;
            if (!n.receive && n.local == m.local && n.peer == to) ++k;
          }
          const dpt::ProcessRoutes::Message *match = nullptr;
          for (const dpt::ProcessRoutes::Message &n : routes[q].messages)
            if (n.receive && first[q] + n.local == to && n.peer == from && k-- == 0) {
              match = &n;
              break;
            }
          assert_non_null(match);
          assert_int_equal(match->begin, m.begin);
          assert_int_equal(match->end, m.end);
          for (size_t i = m.begin; i < m.end; ++i) grads[to][i] = grads[from][i];
        }
      size_t receives = 0, sends = 0;
      for (const dpt::ProcessRoutes &r : routes)
        for (const dpt::ProcessRoutes::Message &m : r.messages) (m.receive ? receives : sends) += 1;
      assert_int_equal(receives, sends);
      for (size_t p = 0; p < processes; ++p) {
        const dpt::ShardLayout layout(count, devices[p], true);
        for (size_t r = 0; r < devices[p]; ++r)
          for (size_t i = layout.begin(r); i < layout.end(r); ++i)
            assert_true(grads[first[p] + r][i] == float(sum));
      }
      if (count > 40 * b)  // every process roots its even share, to a block
        for (size_t p = 0; p < processes; ++p) assert_true(rooted[p] + 2 * b * world >= count / processes);
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
          // A bucket [b0, b1) of the vector into each rank's shard: stored, then added a second time.
          const size_t b0 = n / 7, b1 = n - n / 5;
          std::vector<std::vector<float>> shard(k);
          for (size_t r = 0; r < k; ++r) shard[r].assign(bounds[r + 1] - bounds[r], -7.0f);
          for (bool accumulate : {false, true})
            on_threads(k, [&](size_t r) {
              c.reduce_scatter_bucket(r, inputs[r].data() + b0, b0, b1, bounds.data(), shard[r].data(),
                                      accumulate, algorithm, wire);
            });
          for (size_t r = 0; r < k; ++r)
            for (size_t i = bounds[r]; i < bounds[r + 1]; ++i) {
              const float want = i >= b0 && i < b1 ? reduced[0][i] + reduced[0][i] : -7.0f;
              if (std::memcmp(&shard[r][i - bounds[r]], &want, 4) != 0)
                fail_msg("K=%zu algorithm=%d wire=%d: bucket element %zu of rank %zu's shard is %g, not %g",
                         k, int(algorithm), int(wire), i, r, double(shard[r][i - bounds[r]]), double(want));
            }
          // The bucket in place (the sharded optimizer's buckets): the sums where the rank owns them, every
          // other element (the peers' ranges, outside the bucket) as it was.
          std::vector<std::vector<float>> in_place = inputs;
          on_threads(k, [&](size_t r) {
            c.reduce_scatter_range(r, in_place[r].data(), b0, b1, bounds.data(), algorithm, wire);
          });
          for (size_t r = 0; r < k; ++r)
            for (size_t i = 0; i < n; ++i) {
              const bool summed = i >= b0 && i < b1 && i >= bounds[r] && i < bounds[r + 1];
              const float want = summed ? reduced[0][i] : inputs[r][i];
              if (std::memcmp(&in_place[r][i], &want, 4) != 0)
                fail_msg("K=%zu algorithm=%d wire=%d: element %zu of rank %zu is %g in place, not %g", k,
                         int(algorithm), int(wire), i, r, double(in_place[r][i]), double(want));
            }
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

// model() with a tied layer: a third dense layer whose weight is the second's (ModelSpec::tie), so that
// the weight's gradient has two writers, in one bucket or in two.
dpt::ModelSpec tied_model() {
  dpt::ModelSpec m(dpt::Shape{1, 8, 8});
  m.add_flatten();
  for (int layer = 0; layer < 3; ++layer) {  // nodes 1, 3 and 5, each followed by its activation
    m.add_dense(256);
    m.add_activation(layer == 0 ? dpt::Activation::kRelu : dpt::Activation::kTanh);
  }
  m.add_dense(5);
  m.tie("5.weight", "3.weight");
  return m;
}

struct Run {
  size_t devices = 2;
  dpt::ShardMode shard = dpt::ShardMode::kNone;
  bool adamw = false;
  size_t accumulation = 1;
  bool weighted = false;
  size_t bucket_bytes = 0;
  dpt::DType wire = dpt::DType::kF32;
  bool tied = false;  // tied_model() instead of model()
};

dpt::TrainerConfig config(const Run &run) {
  dpt::TrainerConfig c;
  c.seed = 7;
  c.shard = run.shard;
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
  return std::make_unique<dpt::Trainer>(context, run.tied ? tied_model() : model(), config(run));
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
          Run run{k, dpt::ShardMode::kNone, adamw, accumulation, weighted};
          const Outcome reference = train(run, 6);
          run.shard = dpt::ShardMode::kOptimizer;
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

// With buckets each bucket is reduce-scattered during backward into the ranges' owners, which update their
// ranges of it; with a 16-bit wire the reduce-scatter rounds as the all-reduce does.
void test_buckets_and_wires_change_no_bit(void **) {
  for (size_t bucket_bytes : {size_t(0), size_t(64) << 10})
    for (dpt::DType wire : {dpt::DType::kF32, dpt::DType::kBF16, dpt::DType::kF16}) {
      Run run{3, dpt::ShardMode::kNone, true, 1, true, bucket_bytes, wire};
      const Outcome reference = train(run, 4);
      run.shard = dpt::ShardMode::kOptimizer;
      const Outcome sharded = train(run, 4);
      for (size_t r = 0; r < 3; ++r)
        if (!same(sharded.params[r], reference.params[0]))
          fail_msg("bucket_bytes=%zu wire=%d: replica %zu's parameters differ", bucket_bytes, int(wire), r);
    }
}

// Trains `run` unsharded, then in `mode` with the whole gradient as one bucket, a bucket per layer and
// buckets of `between` bytes: every replica's parameters and the optimizer state must be the unsharded bits.
void expect_unsharded_bits(Run run, dpt::ShardMode mode, size_t between) {
  run.shard = dpt::ShardMode::kNone;
  const Outcome reference = train(run, 6);
  run.shard = mode;
  for (size_t bucket_bytes : {size_t(0), size_t(1), between}) {
    run.bucket_bytes = bucket_bytes;
    const Outcome sharded = train(run, 6);
    char what[160];
    std::snprintf(what, sizeof what, "K=%zu adamw=%d weighted=%d tied=%d mode=%d bucket_bytes=%zu",
                  run.devices, int(run.adamw), int(run.weighted), int(run.tied), int(mode), bucket_bytes);
    for (size_t r = 0; r < run.devices; ++r)
      if (!same(sharded.params[r], reference.params[0])) {
        size_t i = 0;
        while (i < sharded.params[r].size() && sharded.params[r][i] == reference.params[0][i]) ++i;
        print_error("first difference at %zu of %zu: %g vs %g\n", i, sharded.params[r].size(),
                    double(sharded.params[r][i]), double(reference.params[0][i]));
        fail_msg("%s: replica %zu's parameters differ", what, r);
      }
    if (!same(sharded.state.optimizer_state, reference.state.optimizer_state))
      fail_msg("%s: the optimizer state differs", what);
  }
}

// The optimizer sharded (ZeRO-1) with its gradient reduce-scattered bucket by bucket during backward: the
// unsharded bits with a bucket per layer and with two layers in a bucket (the ranges' bounds, at norm blocks,
// fall inside buckets), over accumulation windows and clipping.
void test_sharded_optimizer_buckets_change_no_bit(void **) {
  for (size_t k : {2, 3, 8})
    for (bool adamw : {false, true})
      for (size_t accumulation : {1, 2})
        expect_unsharded_bits(Run{k, dpt::ShardMode::kNone, adamw, accumulation, k == 3},
                              dpt::ShardMode::kOptimizer, size_t(20) << 10);
}

// Sharded gradients (ZeRO-2) and sharded parameters (ZeRO-3) with one micro-batch per window: the very
// bits of unsharded training, with the whole gradient as one bucket, a bucket per layer and buckets in
// between, and with 16-bit wires.
void test_sharded_gradients_change_no_bit(void **) {
  for (size_t k : {2, 3, 8})
    for (bool adamw : {false, true})
      for (bool weighted : {false, true})
        for (dpt::ShardMode mode : {dpt::ShardMode::kGradients, dpt::ShardMode::kParameters})
          expect_unsharded_bits(Run{k, dpt::ShardMode::kNone, adamw, 1, weighted}, mode, size_t(64) << 10);
  for (dpt::DType wire : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const Outcome reference = train(Run{3, dpt::ShardMode::kNone, true, 1, true, 0, wire}, 4);
    const Outcome sharded = train(Run{3, dpt::ShardMode::kParameters, true, 1, true, 4096, wire}, 4);
    for (size_t r = 0; r < 3; ++r)
      if (!same(sharded.params[r], reference.params[0]))
        fail_msg("wire=%d: replica %zu differs", int(wire), r);
  }
}

// With accumulation each micro-batch's sum is added into the shard (the unsharded trainer sums the
// micro-batches on each device first): one more float32 rounding per micro-batch, no more. The replicas
// still agree bit for bit. SGD with momentum: AdamW's first steps move a parameter by about lr times the
// sign of its gradient, so a gradient that nearly cancels (a sum of opposite terms, rounded differently)
// can move it the other way: no tolerance below lr holds for it.
void test_sharded_gradients_with_accumulation(void **) {
  for (size_t k : {2, 3})
    for (bool adamw : {false}) {
      const Outcome reference = train(Run{k, dpt::ShardMode::kNone, adamw, 2, true}, 6);
      const Outcome sharded = train(Run{k, dpt::ShardMode::kGradients, adamw, 2, true, 4096}, 6);
      dpt_test::Comparison cmp("K=" + std::to_string(k) + " adamw=" + std::to_string(adamw), 1e-5, 1e-2);
      for (size_t i = 0; i < reference.params[0].size(); ++i)
        cmp.add(sharded.params[0][i], reference.params[0][i], std::to_string(i));
      cmp.finish();
      for (size_t r = 1; r < k; ++r) assert_true(same(sharded.params[r], sharded.params[0]));
    }
}

// A NaN in one device's slice: its backward is skipped, its buckets still reach the peers (as zeros), the
// window is discarded everywhere, and training goes on as the unsharded trainer's.
void test_sharded_gradients_discard_a_nonfinite_window(void **) {
  auto sharded = make_trainer(Run{3, dpt::ShardMode::kGradients, true, 1, false, 4096});
  auto plain = make_trainer(Run{3, dpt::ShardMode::kNone, true});
  TestRng rng(5);
  std::vector<float> x = rng.vector(13 * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(13, 1);
  x[12 * 64 + 3] = std::nanf("");  // the last sample lives on the last device
  const dpt::StepStats s = sharded->step(x.data(), y.data(), 13);
  plain->step(x.data(), y.data(), 13);
  assert_true(s.skipped_nonfinite);
  for (size_t i = 1; i < 4; ++i) step(*sharded, i), step(*plain, i);
  std::vector<float> a(plain->parameter_count()), b(a.size());
  sharded->get_parameters(2, a.data());
  plain->get_parameters(0, b.data());
  assert_true(same(a, b));
}

// Evaluation and prediction of a batch of 11 give the same bits on both trainers.
void expect_same_evaluation(dpt::Trainer &sharded, dpt::Trainer &plain) {
  TestRng rng(77);
  const size_t n = 11;
  const std::vector<float> x = rng.vector(n * 64, -1.0f, 1.0f);
  std::vector<int32_t> y(n);
  for (auto &label : y) label = int32_t(rng.below(5));
  const dpt::EvalStats a = sharded.evaluate(x.data(), y.data(), n), b = plain.evaluate(x.data(), y.data(), n);
  assert_true(a.loss_sum == b.loss_sum);
  assert_int_equal(a.correct, b.correct);
  std::vector<float> la(n * 5), lb(n * 5);
  sharded.predict(x.data(), n, la.data());
  plain.predict(x.data(), n, lb.data());
  assert_true(same(la, lb));
}

// Sharded parameters: evaluation and prediction gather them as training does (the unsharded results, bit
// for bit); get_parameters gathers the ranges of every device, set_parameters cuts them; the auto split's
// probes read them too.
void test_sharded_parameters_evaluate_predict_and_copy(void **) {
  auto sharded = make_trainer(Run{3, dpt::ShardMode::kParameters, true, 1, true, 4096});
  auto plain = make_trainer(Run{3, dpt::ShardMode::kNone, true, 1, true});
  for (size_t i = 0; i < 3; ++i) step(*sharded, i), step(*plain, i);
  expect_same_evaluation(*sharded, *plain);
  assert_int_equal(sharded->parameter_checksum(), plain->parameter_checksum());
  TestRng rng(77);
  const std::vector<float> values = rng.vector(sharded->parameter_count(), -0.1f, 0.1f);
  sharded->set_parameters(values.data());
  std::vector<float> back(values.size());
  for (size_t r = 0; r < 3; ++r) {
    sharded->get_parameters(r, back.data());
    assert_true(same(back, values));
  }
  // The auto split measures each device with the gathered parameters; its split differs from run to run,
  // so it is compared with the unsharded auto split within the K-device tolerance.
  Run run{3, dpt::ShardMode::kParameters, false, 1, false, 4096};
  dpt::TrainerConfig c = config(run);
  c.split = dpt::SplitPolicy::kAuto;
  dpt::Trainer auto_sharded(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), model(), c);
  c.shard = dpt::ShardMode::kNone;
  dpt::Trainer auto_plain(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), model(), c);
  for (size_t i = 0; i < 2; ++i) step(auto_sharded, i), step(auto_plain, i);
  std::vector<float> ps(values.size()), pp(values.size());
  auto_sharded.get_parameters(0, ps.data());
  auto_plain.get_parameters(0, pp.data());
  dpt_test::Comparison cmp("auto split, sharded parameters vs none", 1e-5, 1e-2);
  for (size_t i = 0; i < ps.size(); ++i) cmp.add(ps[i], pp[i], std::to_string(i));
  cmp.finish();
}

// A checkpoint of a sharded trainer is the unsharded trainer's (the same bytes), and it resumes in any
// device count and mode: the continuation equals the unsharded continuation on the same devices.
void test_checkpoints_do_not_depend_on_the_sharding(void **) {
  const Run sharded3{3, dpt::ShardMode::kOptimizer, true};
  auto a = make_trainer(sharded3);
  auto b = make_trainer(Run{3, dpt::ShardMode::kNone, true});
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
  // Into two devices with sharded parameters and eight with sharded gradients, against as many unsharded
  // ones.
  for (size_t k : {2, 8}) {
    auto s = make_trainer(
        Run{k, k == 2 ? dpt::ShardMode::kParameters : dpt::ShardMode::kGradients, true, 1, false, 4096});
    auto u = make_trainer(Run{k, dpt::ShardMode::kNone, true});
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

// AdamW's state is 8 bytes per parameter: each replica holds its range's share of it; with sharded
// gradients also its range of the gradient, plus two staging buckets.
void test_each_replica_holds_its_share_of_the_state(void **) {
  for (size_t k : {1, 3, 8}) {
    auto t = make_trainer(Run{k, dpt::ShardMode::kOptimizer, true});
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
        make_trainer(Run{2, dpt::ShardMode::kOptimizer, true})->replica_memory(2);
      },
      DPT_ERROR_OUT_OF_RANGE, "replica 2 of 2");
  auto t = make_trainer(Run{3, dpt::ShardMode::kGradients, true, 1, false, 4096});
  // Buckets of whole layers: the largest is the 512 x 256 dense layer.
  const uint64_t staging = 2 * (512 * 256 + 256) * 4;
  uint64_t gradients = 0;
  for (size_t r = 0; r < 3; ++r) {
    const dpt::ReplicaMemory m = t->replica_memory(r);
    assert_int_equal(m.gradients, t->shards().size(r) * 4 + staging);
    gradients += m.gradients - staging;
  }
  assert_int_equal(gradients, t->parameter_count() * 4);
  // Sharded parameters: the range plus one gather slot of the largest bucket.
  auto f = make_trainer(Run{3, dpt::ShardMode::kParameters, true, 1, false, 4096});
  uint64_t parameters = 0;
  for (size_t r = 0; r < 3; ++r) {
    const dpt::ReplicaMemory m = f->replica_memory(r);
    assert_int_equal(m.parameters, f->shards().size(r) * 4 + staging / 2);
    assert_int_equal(m.gradients, f->shards().size(r) * 4 + staging);
    parameters += m.parameters - staging / 2;
  }
  assert_int_equal(parameters, f->parameter_count() * 4);
}

// Deep enough that parameters, gradients and AdamW's state (16 bytes per parameter) dominate, with layers
// small enough that the staging and gather buckets are little: each mode's footprint (measured without a
// cap) is below the one before; under a cap between the gradients mode's and the parameters mode's, the
// other three run out of memory naming the device, and the parameter-sharded trainer trains to the very
// parameters of the unsharded trainer without the cap.
void test_sharding_fits_where_replication_does_not(void **) {
  dpt::ModelSpec deep(dpt::Shape{1, 8, 8});
  deep.add_flatten();
  for (int i = 0; i < 8; ++i) {
    deep.add_dense(512);
    deep.add_activation(dpt::Activation::kRelu);
  }
  deep.add_dense(5);
  const size_t k = 4;
  const dpt::ShardMode modes[] = {dpt::ShardMode::kNone, dpt::ShardMode::kOptimizer,
                                  dpt::ShardMode::kGradients, dpt::ShardMode::kParameters};
  auto configured = [&](dpt::ShardMode mode) {
    Run run{k, mode, true};
    run.bucket_bytes = 4096;
    return config(run);
  };
  uint64_t most[4] = {};
  for (size_t m = 0; m < 4; ++m) {
    dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0}), deep, configured(modes[m]));
    step(t, 0);
    for (size_t r = 0; r < k; ++r) most[m] = std::max(most[m], t.replica_memory(r).total());
  }
  print_message("bytes of the largest device: none %llu, optimizer %llu, gradients %llu, parameters %llu\n",
                (unsigned long long)most[0], (unsigned long long)most[1], (unsigned long long)most[2],
                (unsigned long long)most[3]);
  assert_true(most[0] > most[1] && most[1] > most[2] && most[2] > most[3]);
  const uint64_t cap = (most[2] + most[3]) / 2;
  auto capped = std::make_shared<dpt::Context>(dpt::ContextConfig{k, cap});
  for (size_t m = 0; m < 3; ++m) {
    const std::string message = dpt_test::expect_error(
        [&] {
          dpt::Trainer t(capped, deep, configured(modes[m]));
          step(t, 0);
        },
        DPT_ERROR_OUT_OF_MEMORY, "a trainer above the cap");
    assert_non_null(std::strstr(message.c_str(), "cpu:"));  // names the device
  }
  dpt::Trainer sharded(capped, deep, configured(dpt::ShardMode::kParameters));
  dpt::Trainer reference(std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0}), deep,
                         configured(dpt::ShardMode::kNone));
  for (size_t s = 0; s < 3; ++s) step(sharded, s), step(reference, s);
  std::vector<float> ps(deep.parameter_count()), pr(ps.size());
  sharded.get_parameters(3, ps.data());
  reference.get_parameters(0, pr.data());
  assert_true(same(ps, pr));
}

// A tied weight (two layers' gradients into one parameter): sharded gradients and parameters give the
// unsharded bits with its two writers in one bucket (the tying node adds into the open slot), in separate
// buckets (into the per-device copy that the source's slot starts from) and in between; with sharded
// parameters evaluation and prediction read the tied weight from the gathered copy.
void test_sharded_tied_parameters(void **) {
  for (size_t k : {2, 3})
    for (bool adamw : {false, true})
      for (dpt::ShardMode mode : {dpt::ShardMode::kGradients, dpt::ShardMode::kParameters}) {
        Run run{k, dpt::ShardMode::kNone, adamw, 1, true};
        run.tied = true;
        expect_unsharded_bits(run, mode, size_t(300) << 10);
      }
  Run run{3, dpt::ShardMode::kParameters, true, 1, true, 1};
  run.tied = true;
  auto sharded = make_trainer(run);
  run.shard = dpt::ShardMode::kNone;
  auto plain = make_trainer(run);
  for (size_t i = 0; i < 2; ++i) step(*sharded, i), step(*plain, i);
  expect_same_evaluation(*sharded, *plain);
}

// One device has nothing to shard with: it trains as without sharding.
void test_sharding_one_device(void **) {
  const Outcome one = train(Run{1, dpt::ShardMode::kGradients, true}, 3);
  const Outcome plain = train(Run{1, dpt::ShardMode::kNone, true}, 3);
  assert_true(same(one.params[0], plain.params[0]));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 1 && (argc != 3 || std::strcmp(argv[1], "--only") != 0)) {
    std::fprintf(stderr, "usage: %s [--only NAME,NAME,...]\n", argv[0]);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_cuts_whole_blocks_evenly),
      cmocka_unit_test(test_process_scope_routes_reach_every_owner),
      cmocka_unit_test(test_reduce_scatter_has_the_all_reduce_bits),
      cmocka_unit_test(test_sharded_optimizer_changes_no_bit),
      cmocka_unit_test(test_buckets_and_wires_change_no_bit),
      cmocka_unit_test(test_sharded_optimizer_buckets_change_no_bit),
      cmocka_unit_test(test_checkpoints_do_not_depend_on_the_sharding),
      cmocka_unit_test(test_each_replica_holds_its_share_of_the_state),
      cmocka_unit_test(test_sharded_gradients_change_no_bit),
      cmocka_unit_test(test_sharded_gradients_with_accumulation),
      cmocka_unit_test(test_sharded_gradients_discard_a_nonfinite_window),
      cmocka_unit_test(test_sharded_parameters_evaluate_predict_and_copy),
      cmocka_unit_test(test_sharding_fits_where_replication_does_not),
      cmocka_unit_test(test_sharded_tied_parameters),
      cmocka_unit_test(test_sharding_one_device),
  };
  // --only: the named cases (the TSan run takes the threaded ones that are quick).
  std::vector<CMUnitTest> chosen;
  for (const CMUnitTest &t : tests)
    if (argc == 1 ||
        (',' + std::string(argv[2]) + ',').find(',' + std::string(t.name) + ',') != std::string::npos)
      chosen.push_back(t);
  return _cmocka_run_group_tests("test_sharding", chosen.data(), chosen.size(), nullptr, nullptr);
}
