// Gradient buckets all-reduced during backward on GPUs of their own (CudaGradientCollective's overlap:
// comm_all_reduce_start / comm_wait_started), through the core's trainer: part of test_gpu_training's binary
// (its main registers these cases), run against the real module and the simulated one alike. The simulator
// takes a started bucket's values at its start and writes the sums at the wait (tests/sim_cuda/started.cpp),
// so a trainer that touched a bucket in between, or used the sums before waiting, fails here.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/platform.hpp"
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

namespace {

// Several buckets, so that backward starts all-reduces while it goes on.
dpt::TrainerConfig overlapped(dpt::OptimizerKind kind = dpt::OptimizerKind::kSgd) {
  dpt::TrainerConfig c = config({0, 1}, kind);
  c.bucket_bytes = 4096;
  return c;
}

}  // namespace

// Two GPUs, buckets reduced during backward, against one NCCL call after backward (bucket_bytes 0): the
// simulator's bits (each element summed in rank order either way), NCCL's within the equivalence tolerance
// (its order of sums may depend on a buffer's size); the replicas bitwise identical. With AdamW, clipping
// and two micro-batches per window (only the last overlaps), and on a ragged last batch. The step reports
// the reduction: its span at least the wait after backward.
void test_gpu_overlapped_buckets_match_one_call(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  dpt::TrainerConfig c = overlapped(dpt::OptimizerKind::kAdamW);
  c.optimizer.clip_norm = 0.5f;
  c.accumulation_steps = 2;
  assert_true(dpt::plan_buckets(dpt::ModelSpec::builtin("lenet"), c.bucket_bytes).size() > 2);
  auto over = trainer(context, c);
  c.bucket_bytes = 0;
  auto plain = trainer(context, c);
  const std::vector<float> start = parameters(*plain);
  dpt::StepStats last;
  for (uint64_t s = 0; s < 4; ++s) {
    const Batch b = batch(s == 3 ? 27 : 32, 900 + s);
    plain->step(b.x.data(), b.y.data(), b.n);
    last = over->step(b.x.data(), b.y.data(), b.n);
  }
  const std::vector<float> got = parameters(*over);
  cuda_test::expect_bitwise("overlapped: replica 1 vs replica 0", parameters(*over, 1), got);
  if (simulated())
    cuda_test::expect_bitwise("overlapped buckets vs one all-reduce", got, parameters(*plain));
  else
    expect_equivalent("overlapped buckets vs one all-reduce", got, parameters(*plain), start, kEquivalence);
  print_message("overlapped reduction: %.6f s, exposed %.6f s\n", last.allreduce_seconds,
                last.allreduce_exposed_seconds);
  assert_true(last.allreduce_seconds > 0);
  assert_true(last.allreduce_exposed_seconds >= 0 &&
              last.allreduce_exposed_seconds <= last.allreduce_seconds);
}

// The occurrences of text in the timeline t recorded since start_trace (which this ends).
size_t trace_count(dpt::Trainer &t, const char *name, const char *text) {
  return occurrences(trace_of(t, name), text);
}

// A pipeline of 2 stages x 2 replicas on two GPUs (stage s on cuda:0 and cuda:1), each stage's gradient in
// buckets all-reduced beside its own last backward, against each stage all-reduced whole after its schedule
// (bucket_bytes 0): the simulator's bits, NCCL's within the equivalence tolerance; a stage's replicas
// bitwise identical; the timeline shows the buckets' reductions, and none without buckets. Batch norm's
// statistics go over the stage's communicator in the middle of the same backward (blocking collectives
// between the starts); clipping (the norm over both stages) and two micro-batches per window (only the last
// overlaps) on; a ragged last batch; on a bf16 wire (bitwise on NCCL too: the rule sums in rank order);
// and with the optimizer sharded among a stage's replicas (each bucket's part of the range reduced to its
// owners).
void check_stage_buckets(const std::shared_ptr<dpt::Context> &context, const dpt::ModelSpec &model,
                         const char *what, dpt::DType wire = dpt::DType::kF32,
                         dpt::ShardMode shard = dpt::ShardMode::kNone) {
  dpt::TrainerConfig c = config({0, 1, 0, 1});
  c.allreduce_dtype = wire;
  c.shard = shard;
  c.pipeline_stages = 2;
  c.micro_batches = 3;
  c.accumulation_steps = 2;
  c.optimizer.clip_norm = 0.05f;
  c.bucket_bytes = 4;  // a bucket per layer
  dpt::Trainer over(context, model, c);
  c.bucket_bytes = 0;
  dpt::Trainer plain(context, model, c);
  const std::vector<float> start = parameters(plain);
  over.start_trace(100000);
  plain.start_trace(100000);
  for (uint64_t s = 0; s < 4; ++s) {
    const Batch b = batch(s == 3 ? 27 : 32, 940 + s);
    plain.step(b.x.data(), b.y.data(), b.n);
    over.step(b.x.data(), b.y.data(), b.n);
  }
  const std::vector<float> got = parameters(over);
  cuda_test::expect_bitwise("stage buckets: a stage's replica 1 vs replica 0", parameters(over, 1), got);
  if (simulated() || wire != dpt::DType::kF32)  // (a 16-bit wire's rule sums in rank order on NCCL too)
    cuda_test::expect_bitwise(what, got, parameters(plain));
  else
    expect_equivalent(what, got, parameters(plain), start, kEquivalence);
  // Reduced to the parts' owners (the optimizer sharded), the buckets are reduce-scatters.
  const bool scattered = shard == dpt::ShardMode::kOptimizer;
  const char *name = scattered ? "reduce-scatter bucket" : "all-reduce bucket";
  const std::string timeline = trace_of(over, "buckets");
  const size_t buckets = occurrences(timeline, name);
  print_message("%s: %zu bucket reductions in the timeline\n", what, buckets);
  assert_true(buckets >= 2 * 2);  // two steps ended a window, each with 2 buckets or more of a stage
  assert_int_equal(occurrences(timeline, scattered ? "all-reduce bucket" : "reduce-scatter bucket"), 0);
  assert_int_equal(trace_count(plain, "whole", name), 0);
}

// A language model whose head is tied to its embedding across two stages (the second stage keeps a mirror
// of the embedding after its own range), 2 replicas per stage on two GPUs, a bucket per layer: the second
// stage's buckets hold its range and the mirror, which a started bucket all-reduces (and with the optimizer
// sharded, reduces the range's part to its owners beside it). The bits of the stages reduced whole.
void check_tied_stage_buckets(const std::shared_ptr<dpt::Context> &context, dpt::ShardMode shard) {
  const dpt::ModelSpec m = tied_head_model();
  dpt::TrainerConfig c = config({0, 1, 0, 1});
  c.pipeline_stages = 2;
  c.micro_batches = 2;
  c.pipeline_cuts = {"mid"};  // the second stage: mid's range, then the mirror of wte
  c.shard = shard;
  c.bucket_bytes = 4;
  dpt::Trainer over(context, m, c);
  c.bucket_bytes = 0;
  dpt::Trainer plain(context, m, c);
  const std::vector<float> start = parameters(plain);
  over.start_trace(100000);
  train_tokens(over);
  train_tokens(plain);
  const char *what = shard == dpt::ShardMode::kNone
                         ? "tied head, stages in buckets vs whole"
                         : "tied head, optimizer sharded, stages in buckets vs whole";
  if (simulated())
    cuda_test::expect_bitwise(what, parameters(over), parameters(plain));
  else
    expect_equivalent(what, parameters(over), parameters(plain), start, kEquivalence);
  // (With the optimizer sharded a stage's buckets are reduce-scatters, the mirror's part all-reduced in
  // them.)
  assert_true(
      trace_count(over, "tied",
                  shard == dpt::ShardMode::kOptimizer ? "reduce-scatter bucket" : "all-reduce bucket") >= 2);
}

void test_gpu_pipeline_stage_buckets(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  check_stage_buckets(context, dpt::ModelSpec::builtin("lenet"), "lenet, stages in buckets vs whole");
  check_stage_buckets(context, batch_norm_model(), "batch norm, stages in buckets vs whole");
  check_stage_buckets(context, dpt::ModelSpec::builtin("lenet"),
                      "lenet, bf16 wire, stages in buckets vs whole", dpt::DType::kBF16);
  check_stage_buckets(context, dpt::ModelSpec::builtin("lenet"),
                      "lenet, optimizer sharded, stages in buckets vs whole", dpt::DType::kF32,
                      dpt::ShardMode::kOptimizer);
  check_stage_buckets(context, dpt::ModelSpec::builtin("lenet"),
                      "lenet, optimizer sharded, bf16 wire, stages in buckets vs whole", dpt::DType::kBF16,
                      dpt::ShardMode::kOptimizer);
  check_tied_stage_buckets(context, dpt::ShardMode::kNone);
  check_tied_stage_buckets(context, dpt::ShardMode::kOptimizer);
}

// The same on the 16-bit wires: buckets started during backward (the module's 16-bit all-reduce on the
// communication streams, each bucket in its own part of the staging) against one 16-bit all-reduce after
// backward: the wire's rule is exact and in rank order, so the bits are the same on NCCL too.
void test_gpu_overlapped_buckets_wire16(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  for (const dpt::DType wire : {dpt::DType::kBF16, dpt::DType::kF16}) {
    dpt::TrainerConfig c = overlapped(dpt::OptimizerKind::kAdamW);
    c.allreduce_dtype = wire;
    c.accumulation_steps = 2;
    auto over = trainer(context, c);
    c.bucket_bytes = 0;
    auto plain = trainer(context, c);
    over->start_trace(100000);
    for (uint64_t s = 0; s < 4; ++s) {
      const Batch b = batch(s == 3 ? 27 : 32, 960 + s);
      plain->step(b.x.data(), b.y.data(), b.n);
      over->step(b.x.data(), b.y.data(), b.n);
    }
    const std::vector<float> got = parameters(*over);
    cuda_test::expect_bitwise("16-bit overlapped: replica 1 vs replica 0", parameters(*over, 1), got);
    cuda_test::expect_bitwise("16-bit overlapped buckets vs one all-reduce", got, parameters(*plain));
    const size_t spans = trace_count(*over, "wire16", "\"all-reduce\"");
    print_message("%s wire: %zu overlapped reductions in the timeline\n",
                  wire == dpt::DType::kBF16 ? "bf16" : "fp16", spans);
    assert_int_equal(spans, 2 * 2);  // two windows' spans on each replica's communication row
  }
}

// A peer left out of the started all-reduces: the step ends within the timeout, and the trainer refuses
// further work. Its status is DPT_ERROR_TIMEOUT (the device group's deadline, which started with the phase,
// ends the replicas waiting at a barrier) or, when the group's watchdog wakes late on a loaded machine, the
// NCCL wait's DPT_ERROR_COMMUNICATION, which names the started all-reduce.
void test_gpu_overlapped_hang_times_out(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  dpt::TrainerConfig c = overlapped();
  c.timeout_seconds = 1;
  auto t = trainer(context, c);
  t->cuda_collective()->inject_hang(1);
  const Batch b = batch(16, 910);
  const double t0 = dpt::platform::now_seconds();
  dpt_status status = DPT_OK;
  try {
    t->step(b.x.data(), b.y.data(), b.n);
  } catch (const dpt::Error &error) {
    status = error.status();
    print_message("%s\n", error.what());
    if (status == DPT_ERROR_COMMUNICATION)
      assert_non_null(std::strstr(error.what(), "the started collectives"));
  }
  const double seconds = dpt::platform::now_seconds() - t0;
  print_message("hung started all-reduce: status %d after %.2f s\n", int(status), seconds);
  assert_true(status == DPT_ERROR_TIMEOUT || status == DPT_ERROR_COMMUNICATION);
  assert_true(seconds < 10);
  dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                         "a step after the abort");
}

// A kernel of replica 1's backward fails after replica 0 has started buckets (the simulator's fault
// injection): the step reports the failing GPU at once, not after the collective's timeout of 60 s.
void test_gpu_overlapped_backward_failure(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  if (!simulated()) skip();
  auto t = trainer(context, overlapped());
  const Batch b = batch(16, 920);
  setenv("DPTRAIN_SIM_CUDA_FAIL", "op_backward(conv2d)@1", 1);
  const double t0 = dpt::platform::now_seconds();
  const std::string message = dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); },
                                                     DPT_ERROR_DEVICE, "a failing backward kernel");
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  const double seconds = dpt::platform::now_seconds() - t0;
  print_message("%s (after %.2f s)\n", message.c_str(), seconds);
  assert_non_null(std::strstr(message.c_str(), "cuda:1"));
  assert_true(seconds < 10);
  dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                         "a step after the failure");
}

}  // namespace gpu_test
