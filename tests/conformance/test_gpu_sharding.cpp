// Sharded data parallel on CUDA devices (ZeRO stages 1-3, docs/sharding.md), through the core's trainer,
// against the unsharded trainer on the same GPUs: part of test_gpu_training's binary (its main registers
// these cases), run against the real module and the simulated one alike.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cuda_harness.hpp"
#include "gpu_training_fixtures.hpp"
#include "parallel/gradient_buckets.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

#include "../core/core_test_util.hpp"

namespace gpu_test {

// A sharded optimizer (ZeRO stage 1) on GPU replicas, sharing one GPU and (with two) on distinct GPUs: the
// gradient all-reduced whole on a shared GPU, reduced to each range's owner on distinct GPUs (half the bus
// bytes; the norm from the ranges' block sums, which clipping that bites checks), each replica updating its
// range with its range of the optimizer state, the ranges copied across: the parameters, the replicas and the
// checkpointed state bitwise those of the unsharded trainer, each replica holding its share of the state; the
// checkpoint loads into an unsharded trainer that continues alike.
void check_sharded_optimizer(const std::shared_ptr<dpt::Context> &context, std::vector<size_t> devices,
                             dpt::TrainerConfig c) {
  c.devices = devices;
  auto plain = trainer(context, c);
  c.shard = dpt::ShardMode::kOptimizer;
  auto sharded = trainer(context, c);
  train(*plain);
  train(*sharded);
  const std::vector<float> want = parameters(*plain);
  for (size_t r = 0; r < devices.size(); ++r)
    cuda_test::expect_bitwise("sharded optimizer: replica vs unsharded", parameters(*sharded, r), want);
  if (devices[0] != devices[1]) {
    // Distinct GPUs: each range's sums go to its owner only (ZeRO-1's reduce-scatter), half the bytes of
    // the unsharded all-reduce, as NCCL's tests count them.
    const dpt::ReplicaTimes s = sharded->replica_times(0), p = plain->replica_times(0);
    const double moved = s.bus_bandwidth * s.communication, whole = p.bus_bandwidth * p.communication;
    print_message("bus bytes of a step: %.0f sharded, %.0f unsharded\n", moved, whole);
    assert_true(whole > 0 && std::fabs(2.0 * moved - whole) <= 1e-6 * whole);
  }
  const dpt::TrainerState state = sharded->save_state();
  cuda_test::expect_bitwise("sharded optimizer: checkpointed state", state.optimizer_state,
                            plain->save_state().optimizer_state);
  uint64_t held = 0;
  for (size_t r = 0; r < devices.size(); ++r) {
    const uint64_t bytes = sharded->replica_memory(r).optimizer_state;
    assert_true(bytes < plain->replica_memory(r).optimizer_state);
    held += bytes;
  }
  assert_int_equal(held, plain->replica_memory(0).optimizer_state);  // the shares add up to one whole state
  c.shard = dpt::ShardMode::kNone;
  auto resumed = trainer(context, c);
  resumed->load_state(state);
  const Batch b = batch(32, 700);
  resumed->step(b.x.data(), b.y.data(), b.n);
  sharded->step(b.x.data(), b.y.data(), b.n);
  cuda_test::expect_bitwise("sharded optimizer: continued unsharded from its checkpoint",
                            parameters(*resumed), parameters(*sharded));
}

void test_gpu_sharded_optimizer(void **) {
  auto context = gpu_context();
  dpt::TrainerConfig adamw = config({}, dpt::OptimizerKind::kAdamW);
  adamw.optimizer.clip_norm = 0.05f;  // (the steps' norms are 0.1-2: it bites)
  check_sharded_optimizer(context, {0, 0}, adamw);
  check_sharded_optimizer(context, {0, 0, 0}, config({}));
  if (context->device_count() >= 2) {
    check_sharded_optimizer(context, {0, 1}, adamw);  // one bucket: reduced to the owners after backward
    adamw.bucket_bytes = 4096;
    check_sharded_optimizer(context, {0, 1}, adamw);  // buckets: beside backward
  }
}

// Evaluation of b and its predicted logits: the same bits from both trainers.
void expect_same_inference(dpt::Trainer &want, dpt::Trainer &got, const Batch &b, const char *what) {
  const dpt::EvalStats ew = want.evaluate(b.x.data(), b.y.data(), b.n);
  const dpt::EvalStats eg = got.evaluate(b.x.data(), b.y.data(), b.n);
  assert_true(ew.loss_sum == eg.loss_sum && ew.correct == eg.correct);
  const size_t classes = want.spec().tensors()[want.spec().output_tensor()].shape.size();
  std::vector<float> lw(b.n * classes), lg(b.n * classes);
  want.predict(b.x.data(), b.n, lw.data());
  got.predict(b.x.data(), b.n, lg.data());
  cuda_test::expect_bitwise(what, lg, lw);
}

// Sharded gradients (ZeRO stage 2) and parameters (stage 3) on GPU replicas, sharing one GPU (the virtual
// all-reduce, then each owner's copy) and on distinct GPUs (one NCCL reduce per range): each replica holds
// its range of the gradient and one staging bucket (and with `parameters` its range of the parameters and one
// gather bucket, filled by peer copies before a bucket's layers run); parameters of every replica bitwise
// those of the unsharded trainer (several buckets, a ragged last batch, a batch of one sample), and so are
// evaluation and prediction; with clipping too (the norm from the ranges' block sums, l2_norm's blocks);
// with two micro-batches per step one more rounding per micro-batch, so equivalent.
void check_sharded(const std::shared_ptr<dpt::Context> &context, std::vector<size_t> devices,
                   dpt::TrainerConfig c, dpt::ShardMode mode, double tolerance,
                   const dpt::ModelSpec *model = nullptr) {
  c.devices = devices;
  c.bucket_bytes = 4096;  // several buckets
  auto make = [&](dpt::ShardMode m) {
    c.shard = m;
    return model != nullptr ? std::make_unique<dpt::Trainer>(context, *model, c) : trainer(context, c);
  };
  auto plain = make(dpt::ShardMode::kNone), sharded = make(mode);
  const std::vector<float> start = parameters(*plain);
  train(*plain);
  train(*sharded);
  const Batch one = batch(1, 710);  // a slice of one sample, the others empty: zeros reduced for them
  plain->step(one.x.data(), one.y.data(), one.n);
  sharded->step(one.x.data(), one.y.data(), one.n);
  const std::vector<float> want = parameters(*plain);
  for (size_t r = 0; r < devices.size(); ++r) {
    if (tolerance == 0)
      cuda_test::expect_bitwise("sharded: replica vs unsharded", parameters(*sharded, r), want);
    else
      expect_equivalent("sharded vs unsharded", parameters(*sharded, r), want, start, tolerance);
  }
  if (tolerance == 0) {
    expect_same_inference(*plain, *sharded, batch(37, 720), "sharded: predicted logits");
    // Checkpoints: the sharded trainer's is the unsharded one's, and each continues in the other mode.
    const dpt::TrainerState state = sharded->save_state(), plain_state = plain->save_state();
    cuda_test::expect_bitwise("sharded: checkpointed optimizer state", state.optimizer_state,
                              plain_state.optimizer_state);
    auto resumed_plain = make(dpt::ShardMode::kNone), resumed_sharded = make(mode);
    resumed_plain->load_state(state);
    resumed_sharded->load_state(plain_state);
    const Batch next = batch(32, 730);
    for (dpt::Trainer *t : {plain.get(), resumed_plain.get(), resumed_sharded.get()})
      t->step(next.x.data(), next.y.data(), next.n);
    cuda_test::expect_bitwise("sharded checkpoint continued unsharded", parameters(*resumed_plain),
                              parameters(*plain));
    cuda_test::expect_bitwise("unsharded checkpoint continued sharded", parameters(*resumed_sharded),
                              parameters(*plain));
  }
  // Each replica: its range and one staging bucket (the largest; two on GPUs of their own, whose reduces
  // run beside backward); the ranges add up to one whole gradient. With sharded
  // parameters likewise its range of them and one gather bucket.
  const uint64_t bucket =
      dpt::largest_bucket(dpt::plan_buckets(sharded->spec(), c.bucket_bytes)) * sizeof(float);
  const bool overlapped = devices.size() > 1 && devices[0] != devices[1];
  const uint64_t staging = (overlapped ? 2 : 1) * bucket;
  uint64_t gradients = 0, params = 0;
  for (size_t r = 0; r < devices.size(); ++r) {
    const dpt::ReplicaMemory m = sharded->replica_memory(r);
    assert_true(m.gradients >= staging);  // (a small model's range may be empty)
    gradients += m.gradients - staging;
    params += mode == dpt::ShardMode::kParameters ? m.parameters - bucket : 0;
  }
  assert_int_equal(gradients, plain->replica_memory(0).gradients);
  if (mode == dpt::ShardMode::kParameters) assert_int_equal(params, plain->replica_memory(0).parameters);
}

void test_gpu_sharded_gradients(void **) {
  auto context = gpu_context();
  const dpt::ShardMode kGradients = dpt::ShardMode::kGradients;
  dpt::TrainerConfig adamw = config({}, dpt::OptimizerKind::kAdamW);
  check_sharded(context, {0, 0}, adamw, kGradients, 0);
  check_sharded(context, {0, 0, 0}, config({}), kGradients, 0);
  dpt::TrainerConfig clipped = config({});
  clipped.optimizer.clip_norm = 0.05f;
  check_sharded(context, {0, 0}, clipped, kGradients, 0);
  if (context->device_count() >= 2) check_sharded(context, {0, 1}, clipped, dpt::ShardMode::kParameters, 0);
  dpt::TrainerConfig accumulated = config({});
  accumulated.accumulation_steps = 2;
  check_sharded(context, {0, 0, 0}, accumulated, kGradients, kEquivalence);
  if (context->device_count() >= 2) {
    check_sharded(context, {0, 1}, adamw, kGradients, 0);
    check_sharded(context, {0, 1}, accumulated, kGradients, kEquivalence);
    const dpt::ModelSpec with_batch_norm = batch_norm_model();
    check_sharded(context, {0, 1}, config({}), kGradients, 0, &with_batch_norm);
  }
  // A 16-bit wire: each rank's value and the sum rounded, in rank order, on every path: the unsharded
  // 16-bit all-reduce's bits.
  dpt::TrainerConfig wire = config({});
  wire.allreduce_dtype = dpt::DType::kBF16;
  check_sharded(context, {0, 0}, wire, kGradients, 0);
  if (context->device_count() >= 2) {
    check_sharded(context, {0, 1}, wire, kGradients, 0);
    wire.allreduce_dtype = dpt::DType::kF16;
    check_sharded(context, {0, 1}, wire, kGradients, 0);
  }
}

// A language model whose head is tied to its token embedding, with sharded gradients and parameters on GPU
// replicas: buckets of 512 bytes put the embedding and the head in different buckets, so the head's part of
// the embedding's gradient waits in the per-replica copy until the embedding's bucket opens (and with
// sharded parameters the head reads the embedding from the gathered copy): the unsharded trainer's bits.
void test_gpu_sharded_tied_head(void **) {
  auto context = gpu_context();
  dpt::ModelSpec tied = token_model();
  tied.tie("lm_head.weight", "wte.weight");
  std::vector<std::vector<size_t>> layouts = {{0, 0}, {0, 0, 0}};
  if (context->device_count() >= 2) layouts.push_back({0, 1});
  for (const std::vector<size_t> &devices : layouts)
    for (const dpt::ShardMode mode : {dpt::ShardMode::kGradients, dpt::ShardMode::kParameters}) {
      dpt::TrainerConfig c = config(devices, dpt::OptimizerKind::kAdamW);
      c.bucket_bytes = 512;
      dpt::Trainer plain(context, tied, c);
      c.shard = mode;
      dpt::Trainer sharded(context, tied, c);
      train_tokens(plain);
      train_tokens(sharded);
      for (size_t r = 0; r < devices.size(); ++r)
        cuda_test::expect_bitwise("tied head, sharded vs unsharded", parameters(sharded, r),
                                  parameters(plain));
    }
}

// Sharded parameters read ahead (prefetch_parameters) on GPU replicas: each pass copies the next bucket on
// the replica's copy stream while the current bucket's layers run. The unsharded trainer's bits in steps,
// evaluation and prediction (the simulator fills a copy's destination with NaN until its join, so a layer
// that read a bucket before its join would show); one more gather bucket per replica; the timeline's
// gathers served from a read ahead, and none without it.
void check_read_ahead(const std::shared_ptr<dpt::Context> &context, std::vector<size_t> devices,
                      dpt::TrainerConfig c) {
  c.devices = devices;
  c.bucket_bytes = 4096;  // several buckets
  auto plain = trainer(context, c);
  c.shard = dpt::ShardMode::kParameters;
  auto gathering = trainer(context, c);
  c.prefetch_parameters = true;
  auto ahead = trainer(context, c);
  ahead->start_trace(100000);
  gathering->start_trace(100000);
  for (dpt::Trainer *t : {plain.get(), gathering.get(), ahead.get()}) train(*t);
  const std::vector<float> want = parameters(*plain);
  for (size_t r = 0; r < devices.size(); ++r)
    cuda_test::expect_bitwise("read ahead: replica vs unsharded", parameters(*ahead, r), want);
  expect_same_inference(*plain, *ahead, batch(37, 740), "read ahead: predicted logits");
  const size_t served = occurrences(trace_of(*ahead, "with"), "(read ahead)");
  print_message("%zu gathers served from a read ahead\n", served);
  assert_true(served > 0);
  assert_int_equal(occurrences(trace_of(*gathering, "without"), "(read ahead)"), 0);
  const uint64_t bucket =
      dpt::largest_bucket(dpt::plan_buckets(ahead->spec(), c.bucket_bytes)) * sizeof(float);
  for (size_t r = 0; r < devices.size(); ++r)
    assert_int_equal(ahead->replica_memory(r).parameters, gathering->replica_memory(r).parameters + bucket);
}

void test_gpu_sharded_parameters(void **) {
  auto context = gpu_context();
  const dpt::ShardMode kParameters = dpt::ShardMode::kParameters;
  check_sharded(context, {0, 0}, config({}, dpt::OptimizerKind::kAdamW), kParameters, 0);
  check_sharded(context, {0, 0, 0}, config({}), kParameters, 0);
  dpt::TrainerConfig accumulated = config({});
  accumulated.accumulation_steps = 2;
  check_sharded(context, {0, 0}, accumulated, kParameters, kEquivalence);
  if (context->device_count() >= 2) {
    check_sharded(context, {0, 1}, config({}, dpt::OptimizerKind::kAdamW), kParameters, 0);
    const dpt::ModelSpec with_batch_norm = batch_norm_model();
    check_sharded(context, {0, 1}, config({}), kParameters, 0, &with_batch_norm);
  }
}

void test_gpu_sharded_parameters_read_ahead(void **) {
  auto context = gpu_context();
  check_read_ahead(context, {0, 0}, config({}, dpt::OptimizerKind::kAdamW));
  if (context->device_count() >= 2) check_read_ahead(context, {0, 1}, config({}));
}

}  // namespace gpu_test
