// Training on CUDA devices, through the core's trainer: K replicas (on distinct GPUs, NCCL, or on one GPU,
// "virtual devices") against one replica on the full batch, one GPU replica against one CPU device, a
// checkpoint from a GPU trainer loaded on a CPU trainer, and the faults: out of memory, a failing kernel,
// a hung collective, the configurations refused; batch norm, pipelines, 16-bit precisions, the timeline.
// Sharded data parallel is in test_gpu_sharding.cpp, buckets reduced during backward in
// test_gpu_overlap.cpp, the shared fixtures in gpu_training_fixtures.*: one
// binary.
//
// Registered twice: test_gpu_training_gpu runs it against the real module (skipped without a GPU), and
// test_gpu_training_sim against the simulated module of tests/sim_cuda (docs/cuda-sim.md), which runs
// everywhere. Cases that need the simulator's fault injection skip on a real GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../capi/relative_error.h"
#include "backend/context.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "cuda_harness.hpp"
#include "gpu_training_fixtures.hpp"
#include "graph/json.hpp"
#include "graph/network.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

#include "../core/core_test_util.hpp"

namespace {

using namespace gpu_test;

// Trains K replicas and one replica alike and compares; the K replicas must be bitwise identical.
void check_replicas_match_one(std::vector<size_t> devices, dpt::TrainerConfig c) {
  auto context = gpu_context();
  c.devices = devices;
  auto many = trainer(context, c);
  c.devices = {devices[0]};
  auto one = trainer(context, c);
  const std::vector<float> start = parameters(*one);
  train(*many);
  train(*one);
  const std::vector<float> got = parameters(*many);
  for (size_t r = 1; r < devices.size(); ++r)
    cuda_test::expect_bitwise("replica vs replica 0", parameters(*many, r), got);
  char what[64];
  std::snprintf(what, sizeof what, "%zu replicas vs 1", devices.size());
  expect_equivalent(what, got, parameters(*one), start, kEquivalence);
}

void test_gpu_virtual_replicas_match_one_replica(void **) {
  auto context = gpu_context();
  const size_t gpu = 0;
  check_replicas_match_one({gpu, gpu}, config({}));
  check_replicas_match_one({gpu, gpu, gpu}, config({}, dpt::OptimizerKind::kAdamW));
}

void test_gpu_distinct_gpus_match_one_replica(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  dpt::TrainerConfig c = config({});
  c.bucket_bytes = 0;  // one NCCL call
  check_replicas_match_one({0, 1}, c);
  c = config({}, dpt::OptimizerKind::kAdamW);
  c.bucket_bytes = 4096;  // several buckets in one NCCL group
  c.optimizer.clip_norm = 0.5f;
  check_replicas_match_one({0, 1}, c);
}

void test_gpu_accumulation_matches_full_batch(void **) {
  auto context = gpu_context();
  dpt::TrainerConfig c = config({0, 0});
  c.accumulation_steps = 2;
  auto accumulated = trainer(context, c);
  c.accumulation_steps = 1;
  c.devices = {0};
  auto full = trainer(context, c);
  const std::vector<float> start = parameters(*full);
  const Batch b = batch(40, 300);
  accumulated->step(b.x.data(), b.y.data(), 24);
  accumulated->step(b.x.data() + 24 * 784, b.y.data() + 24, 16);
  full->step(b.x.data(), b.y.data(), 40);
  expect_equivalent("2 micro-batches on 2 virtual replicas vs 1 batch", parameters(*accumulated),
                    parameters(*full), start, kEquivalence);
}

void test_gpu_matches_cpu(void **) {
  dpt::TrainerConfig fastest = config({0});
  fastest.kernels.deterministic = false;  // cuDNN's timed choice of algorithms
  auto gpu = trainer(gpu_context(), fastest);
  auto cpu = trainer(cpu_context(), config({0}));
  const std::vector<float> start = parameters(*cpu);
  cuda_test::expect_bitwise("initial parameters", parameters(*gpu), start);
  train(*gpu);
  train(*cpu);
  expect_equivalent("GPU vs CPU", parameters(*gpu), parameters(*cpu), start, kAcrossBackends);

  const Batch b = batch(50, 400);
  const dpt::EvalStats eg = gpu->evaluate(b.x.data(), b.y.data(), b.n);
  const dpt::EvalStats ec = cpu->evaluate(b.x.data(), b.y.data(), b.n);
  print_message("evaluate: loss sum GPU %.9g, CPU %.9g; correct %llu, %llu\n", eg.loss_sum, ec.loss_sum,
                (unsigned long long)eg.correct, (unsigned long long)ec.correct);
  assert_true(std::fabs(eg.loss_sum - ec.loss_sum) <= 1e-4 * std::fabs(ec.loss_sum));
  std::vector<float> lg(b.n * 10), lc(b.n * 10);
  gpu->predict(b.x.data(), b.n, lg.data());
  cpu->predict(b.x.data(), b.n, lc.data());
  cuda_test::expect_close("predict logits", lg, lc, nullptr, 1e-4, 1e-5);
}

void test_gpu_checkpoint_moves_to_cpu(void **) {
  auto gpu = trainer(gpu_context(), config({0, 0}));
  train(*gpu);
  const dpt::TrainerState state = gpu->save_state();
  cuda_test::expect_bitwise("saved parameters", state.parameters, parameters(*gpu));
  auto cpu = trainer(cpu_context(), config({0}));
  cpu->load_state(state);
  cuda_test::expect_bitwise("loaded on a CPU device", parameters(*cpu), state.parameters);
  assert_int_equal(cpu->optimizer_steps(), gpu->optimizer_steps());
  // And back: a second GPU trainer from the same state continues like the first.
  auto again = trainer(gpu_context(), config({0, 0}));
  again->load_state(state);
  const Batch b = batch(32, 500);
  gpu->step(b.x.data(), b.y.data(), b.n);
  again->step(b.x.data(), b.y.data(), b.n);
  cuda_test::expect_bitwise("continued from the checkpoint", parameters(*again), parameters(*gpu));
}

// A slice too large for the GPU: DPT_ERROR_OUT_OF_MEMORY naming it, and the trainer still works.
void test_gpu_out_of_memory_names_the_device(void **) {
  auto context = gpu_context();
  if (!simulated()) {
    print_message("needs the simulator's small memory: skipped on a real GPU\n");
    skip();
  }
  auto t = trainer(context, config({0}));
  const std::vector<float> before = parameters(*t);
  const Batch big = batch(4096, 600);
  const std::string message = dpt_test::expect_error([&] { t->step(big.x.data(), big.y.data(), big.n); },
                                                     DPT_ERROR_OUT_OF_MEMORY, "a 4096-sample slice");
  print_message("%s\n", message.c_str());
  assert_non_null(std::strstr(message.c_str(), "cuda:0"));
  cuda_test::expect_bitwise("parameters after the failed step", parameters(*t), before);
  const Batch small = batch(16, 601);
  t->step(small.x.data(), small.y.data(), small.n);
  assert_int_equal(t->optimizer_steps(), 1);
}

// A kernel that fails: DPT_ERROR_DEVICE naming the GPU and the call, the trainer refuses further work, and
// destroying it gives the GPU's memory back.
void test_gpu_kernel_failure(void **) {
  auto context = gpu_context();
  if (!simulated()) {
    print_message("needs the simulator's fault injection: skipped on a real GPU\n");
    skip();
  }
  dpt::Device &gpu = context->device(0);
  const uint64_t free_before = gpu.details().free_memory;
  {
    auto t = trainer(context, config({0, 0}));
    setenv("DPTRAIN_SIM_CUDA_FAIL", "op_forward(conv2d)@0", 1);
    const Batch b = batch(16, 700);
    const std::string message = dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); },
                                                       DPT_ERROR_DEVICE, "a failing convolution");
    unsetenv("DPTRAIN_SIM_CUDA_FAIL");
    print_message("%s\n", message.c_str());
    assert_non_null(std::strstr(message.c_str(), "cuda:0"));
    assert_non_null(std::strstr(message.c_str(), "op_forward(conv2d)"));
    dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                           "a step after the failure");
  }
  assert_int_equal(gpu.details().free_memory, free_before);
}

// A NCCL all-reduce that never finishes on one GPU: DPT_ERROR_COMMUNICATION within the timeout.
void test_gpu_hung_collective_times_out(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  dpt::TrainerConfig c = config({0, 1});
  c.timeout_seconds = 1;
  auto t = trainer(context, c);
  t->cuda_collective()->inject_hang(1);
  const Batch b = batch(16, 800);
  const double t0 = dpt::platform::now_seconds();
  const std::string message = dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); },
                                                     DPT_ERROR_COMMUNICATION, "a hung all-reduce");
  const double seconds = dpt::platform::now_seconds() - t0;
  print_message("%s (after %.2f s)\n", message.c_str(), seconds);
  assert_true(seconds < 10);
  dpt_test::expect_error([&] { t->step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                         "a step after the abort");
}

void test_gpu_refused_configurations(void **) {
  auto context = gpu_context();
  dpt::ModelSpec with_dropout(dpt::Shape{1, 28, 28});
  with_dropout.add_flatten();
  with_dropout.add_dense(16);
  with_dropout.add_dropout(0.5f);
  with_dropout.add_dense(10);
  std::string message = dpt_test::expect_error([&] { dpt::Trainer t(context, with_dropout, config({0})); },
                                               DPT_ERROR_UNSUPPORTED, "dropout on a GPU");
  assert_non_null(std::strstr(message.c_str(), "dropout"));

  dpt::ContextConfig both;
  both.cpu_devices = 1;
  both.want_cuda = true;
  auto mixed = std::make_shared<dpt::Context>(both);
  message = dpt_test::expect_error(
      [&] {
        trainer(mixed, config({0, 1}));
      },
      DPT_ERROR_UNSUPPORTED, "a CPU device and a GPU in one trainer");
  assert_non_null(std::strstr(message.c_str(), "all be CPU devices or all CUDA devices"));
  dpt_test::expect_error(
      [&] {
        trainer(mixed, config({0, 0}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "a CPU device listed twice");
  if (context->device_count() >= 2) {
    message = dpt_test::expect_error(
        [&] {
          trainer(context, config({0, 0, 1}));
        },
        DPT_ERROR_UNSUPPORTED, "replicas sharing a GPU next to one with its own");
    print_message("%s\n", message.c_str());
  }
}

// A model with batch norm (sync statistics, summed between the two phases: on the host, over NCCL on distinct
// GPUs) on several replicas
// against one: equivalent, replicas and their running statistics bitwise identical. Replicas that share a
// GPU run on workers of their own (Device::submit's lanes), so they meet at the statistics barrier like
// replicas on distinct GPUs.

void expect_batch_norm_replicas_match_one(const std::shared_ptr<dpt::Context> &context,
                                          const std::vector<size_t> &devices, const char *what) {
  dpt::Trainer many(context, batch_norm_model(), config(devices));
  dpt::Trainer one(context, batch_norm_model(), config({0}));
  const std::vector<float> start = parameters(one);
  train(many);
  train(one);
  std::vector<float> b_one(one.spec().buffer_count()), b0(b_one.size());
  one.get_buffers(0, b_one.data());
  many.get_buffers(0, b0.data());
  for (size_t r = 1; r < devices.size(); ++r) {
    std::vector<float> br(b0.size());
    many.get_buffers(r, br.data());
    cuda_test::expect_bitwise("replica r vs replica 0", parameters(many, r), parameters(many));
    cuda_test::expect_bitwise("running statistics, replica r vs 0", br, b0);
  }
  expect_equivalent(what, parameters(many), parameters(one), start, kEquivalence);
  std::vector<float> initial(b0.size());
  dpt::init_buffers(one.spec(), initial.data());  // relative to how far training moved them
  expect_equivalent("running statistics vs 1 replica", b0, b_one, initial, kEquivalence);
  // Recomputed over two batches of 32 and one of 29 (each weighing a third): the replicas' statistics
  // the same bits, the 1-replica ones, and not the trained ones.
  uint64_t number = 0;
  for (const auto &[n, seed] : {std::pair<size_t, uint64_t>{32, 300}, {32, 301}, {29, 302}}) {
    const Batch b = batch(n, seed);
    ++number;
    many.recompute_statistics(b.x.data(), b.n, number);
    one.recompute_statistics(b.x.data(), b.n, number);
  }
  std::vector<float> r_one(b0.size()), r0(b0.size());
  one.get_buffers(0, r_one.data());
  many.get_buffers(0, r0.data());
  for (size_t r = 1; r < devices.size(); ++r) {
    std::vector<float> br(r0.size());
    many.get_buffers(r, br.data());
    cuda_test::expect_bitwise("recomputed statistics, replica r vs 0", br, r0);
  }
  expect_equivalent("recomputed statistics vs 1 replica", r0, r_one, initial, kEquivalence);
  if (r0 == b0) fail_msg("%s: recomputing left the running statistics as they were", what);
}

// A pipeline of GPUs (activations and gradients handed over by peer copies, a stage's replicas all-reducing
// its gradient over NCCL or the virtual all-reduce) against the same pipeline on CPU devices: parameters,
// running statistics, gradient norm (clipping on), evaluation and logits; with the optimizer sharded among
// a stage's replicas, each replica's share of the state as on CPU devices.
void check_gpu_pipeline(const std::shared_ptr<dpt::Context> &gpus, std::vector<size_t> devices,
                        const dpt::ModelSpec &model, const char *what,
                        dpt::ShardMode shard = dpt::ShardMode::kNone) {
  const size_t k = devices.size();
  dpt::TrainerConfig c = config(std::move(devices));
  c.shard = shard;
  c.pipeline_stages = 2;
  c.micro_batches = 3;
  c.optimizer.clip_norm = 0.05;  // clipped by the norm over both stages (the steps' norms are 0.1-2)
  dpt::Trainer gpu(gpus, model, c);
  c.devices.clear();
  for (size_t d = 0; d < k; ++d) c.devices.push_back(d);
  dpt::Trainer cpu(std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0}), model, c);
  const std::vector<float> start = parameters(cpu);
  cuda_test::expect_bitwise("initial parameters", parameters(gpu), start);
  train(gpu);
  train(cpu);
  const Batch last = batch(16, 420);
  const dpt::StepStats stats = gpu.step(last.x.data(), last.y.data(), last.n);
  const double norm_gpu = stats.grad_norm;
  const double norm_cpu = cpu.step(last.x.data(), last.y.data(), last.n).grad_norm;
  print_message("%s: gradient norm GPU %.9g, CPU %.9g\n", what, norm_gpu, norm_cpu);
  if (k == 4) {  // each stage reduced at the end of its schedule: its time, the part after the last start
    print_message("%s: stages' reductions %.6f s, exposed %.6f s\n", what, stats.allreduce_seconds,
                  stats.allreduce_exposed_seconds);
    assert_true(stats.allreduce_seconds > 0);
    assert_true(stats.allreduce_exposed_seconds >= 0 &&
                stats.allreduce_exposed_seconds <= stats.allreduce_seconds);
  }
  assert_true(std::fabs(norm_gpu - norm_cpu) <= 1e-5 * norm_cpu && norm_cpu > 0.05);
  expect_equivalent("pipeline of GPUs vs of CPU devices", parameters(gpu), parameters(cpu), start,
                    kAcrossBackends);
  for (size_t r = 1; r < k / 2; ++r)
    cuda_test::expect_bitwise("a stage's replica r vs replica 0", parameters(gpu, r), parameters(gpu));
  if (shard == dpt::ShardMode::kOptimizer) {
    // SGD's momentum: a float per parameter, each stage's cut among its replicas (a stage smaller than a
    // norm block stays whole on one).
    uint64_t state = 0, stages = 0;
    bool split = false;
    for (size_t r = 0; r < k; ++r) {
      const dpt::ReplicaMemory mg = gpu.replica_memory(r);
      print_message("replica %zu: optimizer state %llu bytes beside %llu of parameters\n", r,
                    (unsigned long long)mg.optimizer_state, (unsigned long long)mg.parameters);
      assert_int_equal(mg.optimizer_state, cpu.replica_memory(r).optimizer_state);
      state += mg.optimizer_state;
      if (r % (k / 2) == 0) stages += mg.parameters;
      split = split || (mg.optimizer_state > 0 && mg.optimizer_state < mg.parameters);
    }
    assert_int_equal(state, stages);
    assert_true(split);
  }
  assert_int_equal(gpu.optimizer_steps(), cpu.optimizer_steps());
  if (model.buffer_count() > 0) {
    std::vector<float> bg(model.buffer_count()), bc(bg.size()), initial(bg.size());
    gpu.get_buffers(0, bg.data());
    cpu.get_buffers(0, bc.data());
    dpt::init_buffers(model, initial.data());
    expect_equivalent("running statistics", bg, bc, initial, kAcrossBackends);
  }
  const Batch b = batch(23, 410);
  const dpt::EvalStats eg = gpu.evaluate(b.x.data(), b.y.data(), b.n);
  const dpt::EvalStats ec = cpu.evaluate(b.x.data(), b.y.data(), b.n);
  print_message("evaluate: loss sum GPU %.9g, CPU %.9g\n", eg.loss_sum, ec.loss_sum);
  assert_true(std::fabs(eg.loss_sum - ec.loss_sum) <= 1e-4 * std::fabs(ec.loss_sum));
  std::vector<float> lg(b.n * 10), lc(b.n * 10);
  gpu.predict(b.x.data(), b.n, lg.data());
  cpu.predict(b.x.data(), b.n, lc.data());
  cuda_test::expect_close("predict logits", lg, lc, nullptr, 1e-4, 1e-5);
}

// The balance by measured time probes the whole model on the first GPU (each op timed once the GPU's queue
// drained): every layer with parameters takes time, the probe's memory goes back, and the cut it chose,
// named, gives a trainer the same stages.
void check_gpu_time_balance(const std::shared_ptr<dpt::Context> &gpus) {
  const dpt::ModelSpec lenet = dpt::ModelSpec::builtin("lenet");
  dpt::Device &gpu = gpus->device(0);
  const uint64_t free_before = gpu.details().free_memory;
  const std::vector<double> times =
      dpt::measured_times(lenet, gpu, dpt::KernelOptions{}, dpt::DType::kF32, dpt::DType::kF32, 8, 1);
  for (size_t j = 0; j < times.size(); ++j)  // (a view, flatten, runs no kernel: it may take 0)
    assert_true(times[j] >= 0.0 && (lenet.nodes()[j].layout.params.empty() || times[j] > 0.0));
  if (simulated()) assert_int_equal(gpu.details().free_memory, free_before);  // (a real GPU's varies)
  dpt::TrainerConfig c = config({0, 0});
  c.pipeline_stages = 2;
  c.micro_batches = 2;
  c.pipeline_balance = dpt::PipelineBalance::kTime;
  c.pipeline_balance_batch = 16;
  dpt::Trainer measured(gpus, lenet, c);
  const std::vector<std::string> names = measured.pipeline_cut_names();
  assert_int_equal(names.size(), 1);
  c.pipeline_balance = dpt::PipelineBalance::kWork;
  c.pipeline_cuts = names;
  dpt::Trainer named(gpus, lenet, c);
  assert_true(named.pipeline_cut_names() == names);
  assert_int_equal(named.replica_memory(0).parameters, measured.replica_memory(0).parameters);
  print_message("time balance on %s: cut at %s\n", gpu.name().c_str(), names[0].c_str());
}

void test_gpu_pipeline(void **) {
  auto context = gpu_context();
  check_gpu_time_balance(context);
  check_gpu_pipeline(context, {0, 0}, dpt::ModelSpec::builtin("lenet"), "lenet, 2 stages on cuda:0");
  check_gpu_pipeline(context, {0, 0}, batch_norm_model(), "batch norm, 2 stages on cuda:0");
  check_gpu_pipeline(context, {0, 0, 0, 0}, batch_norm_model(),
                     "batch norm, 2 stages x 2 replicas on cuda:0");
  check_gpu_pipeline(context, {0, 0, 0, 0}, dpt::ModelSpec::builtin("lenet"),
                     "lenet, 2 stages x 2 replicas on cuda:0, optimizer sharded", dpt::ShardMode::kOptimizer);
  need_gpus(*context, 2);
  check_gpu_pipeline(context, {0, 1}, dpt::ModelSpec::builtin("lenet"), "lenet, 2 stages on 2 GPUs");
  check_gpu_pipeline(context, {0, 1}, batch_norm_model(), "batch norm, 2 stages on 2 GPUs");
  check_gpu_pipeline(context, {0, 1, 0, 1}, batch_norm_model(),
                     "batch norm, 2 stages x 2 replicas on 2 GPUs");
  check_gpu_pipeline(context, {0, 1, 0, 1}, dpt::ModelSpec::builtin("lenet"),
                     "lenet, 2 stages x 2 replicas on 2 GPUs, optimizer sharded", dpt::ShardMode::kOptimizer);
}

void test_gpu_batch_norm_replicas(void **) {
  auto context = gpu_context();
  expect_batch_norm_replicas_match_one(context, {0, 0}, "batch norm, cuda:0x2 vs 1 replica");
  expect_batch_norm_replicas_match_one(context, {0, 0, 0}, "batch norm, cuda:0x3 vs 1 replica");
  need_gpus(*context, 2);
  expect_batch_norm_replicas_match_one(context, {0, 1}, "batch norm, 2 GPUs vs 1 replica");
}

// Batch norm's statistics summed over NCCL in the middle of the pass (replicas on distinct GPUs). A peer
// left out of that all-reduce stalls the pass: the step ends within the timeout as any stalled pass does,
// and the trainer refuses further work. Its status is DPT_ERROR_TIMEOUT (the device group's deadline, which
// started before NCCL's) or, when the group's watchdog wakes late on a loaded machine, the NCCL wait's
// DPT_ERROR_COMMUNICATION: both end the step in time. A failing float64 all-reduce (the simulator's fault
// injection) names itself: the statistics did go through NCCL, not through the host.
void test_gpu_hung_statistics_time_out(void **) {
  auto context = gpu_context();
  need_gpus(*context, 2);
  dpt::TrainerConfig c = config({0, 1});
  c.timeout_seconds = 1;
  const Batch b = batch(16, 801);
  {
    dpt::Trainer t(context, batch_norm_model(), c);
    t.cuda_collective()->inject_hang(1);
    const double t0 = dpt::platform::now_seconds();
    dpt_status status = DPT_OK;
    try {
      t.step(b.x.data(), b.y.data(), b.n);
    } catch (const dpt::Error &error) {
      status = error.status();
      print_message("%s\n", error.what());
    }
    const double seconds = dpt::platform::now_seconds() - t0;
    print_message("hung batch statistics: status %d after %.2f s\n", int(status), seconds);
    assert_true(status == DPT_ERROR_TIMEOUT || status == DPT_ERROR_COMMUNICATION);
    assert_true(seconds < 10);
    dpt_test::expect_error([&] { t.step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                           "a step after the abort");
  }
  if (!simulated()) return;
  dpt::Trainer t(context, batch_norm_model(), c);
  setenv("DPTRAIN_SIM_CUDA_FAIL", "comm_all_reduce_f64@1", 1);
  const std::string message = dpt_test::expect_error([&] { t.step(b.x.data(), b.y.data(), b.n); },
                                                     DPT_ERROR_COMMUNICATION, "failing batch statistics");
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  assert_non_null(std::strstr(message.c_str(), "comm_all_reduce_f64"));
  dpt_test::expect_error([&] { t.step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                         "a step after the failure");
}

// A language model whose head is tied to its token embedding, the two in different stages of a pipeline of
// GPUs: the mirror's gradient added into the source and the source's values copied back into the mirror
// by peer copies; against the same pipeline on CPU devices (a stale mirror or a lost mirror gradient moves
// the later steps away from it).
void test_gpu_pipeline_tied_head(void **) {
  auto context = gpu_context();
  const dpt::ModelSpec m = tied_head_model();
  for (const bool sharded : {false, true}) {
    dpt::TrainerConfig c = config(sharded ? std::vector<size_t>{0, 0, 0, 0} : std::vector<size_t>{0, 0});
    c.pipeline_stages = 2;
    c.micro_batches = 2;
    c.pipeline_cuts = {"head"};
    if (sharded) c.shard = dpt::ShardMode::kOptimizer;  // 2 replicas per stage, each updating its part
    dpt::Trainer gpu(context, m, c);
    c.devices = sharded ? std::vector<size_t>{0, 1, 2, 3} : std::vector<size_t>{0, 1};
    dpt::Trainer cpu(std::make_shared<dpt::Context>(dpt::ContextConfig{c.devices.size(), 0}), m, c);
    const std::vector<float> start = parameters(cpu);
    train_tokens(gpu);
    train_tokens(cpu);
    expect_equivalent(sharded ? "tied head, sharded optimizer, pipeline of GPUs vs of CPU devices"
                              : "tied head, pipeline of GPUs vs of CPU devices",
                      parameters(gpu), parameters(cpu), start, kAcrossBackends);
  }
}

// A small GPT (token and position embeddings, a pre-LayerNorm block with causal attention, the LM head, a
// target at every position, one in seven ignored), AdamW with decay on the matrices: 2 replicas on one GPU
// against 1 replica (bitwise replicas, within kEquivalence), and 1 GPU replica against 1 CPU device.
void test_gpu_token_model(void **) {
  auto context = gpu_context();
  dpt::TrainerConfig c = config({0, 0}, dpt::OptimizerKind::kAdamW);
  c.optimizer.decay_matrices_only = true;
  c.optimizer.weight_decay = 0.1f;
  c.optimizer.clip_norm = 1.0f;
  dpt::Trainer many(context, token_model(), c);
  c.devices = {0};
  dpt::Trainer one(context, token_model(), c);
  dpt::Trainer cpu(cpu_context(), token_model(), c);
  const std::vector<float> start = parameters(one);
  train_tokens(many);
  train_tokens(one);
  train_tokens(cpu);
  cuda_test::expect_bitwise("token model: replica 1 vs replica 0", parameters(many, 1), parameters(many));
  expect_equivalent("token model, cuda:0x2 vs 1 replica", parameters(many), parameters(one), start,
                    kEquivalence);
  expect_equivalent("token model, GPU vs CPU", parameters(one), parameters(cpu), start, kAcrossBackends);
}

// Three residual blocks of convolutions and batch norm on 1x28x28: enough tensors of one width that 16-bit
// activation copies save bytes (graph/activation_store.hpp keeps them float32 where they would not).
dpt::ModelSpec residual_model() {
  dpt::ModelSpec m(dpt::Shape{1, 28, 28});
  size_t x = m.add_op("relu", {m.add_batch_norm(m.add_conv2d(4, 3, 1, 1, false))});
  for (int block = 0; block < 3; ++block) {
    m.add_op("relu", {m.add_batch_norm(m.add_conv2d(4, 3, 1, 1, false))});
    m.add_conv2d(4, 3, 1, 1, false);
    x = m.add_op("relu", {m.add_op("add", {x, m.add_batch_norm(m.output_tensor())})});
  }
  m.add_pool(dpt::PoolKind::kAvg, 4, 4);
  m.add_dense(10);
  return m;
}

// bf16 and fp16 (products and activation copies; fp16 with loss scaling) on the residual model: 1 GPU
// replica against 1 CPU device, with the deterministic and the timed choice of convolution algorithms. The
// same 16-bit roundings on both (the module's float16.cuh restates the core's); the GPU's float32 sums in
// other orders move a value across a 16-bit rounding boundary now and then. After one step the GPU at 16
// bits is at least 4x closer to the CPU at 16 bits than that is to float32 (the first GPU run: 300x bf16,
// 570x fp16). Each later step moves more values across boundaries, by a whole 16-bit ulp each: the two
// trainings drift apart far faster than in float32 (4 steps: 0.029 bf16, 0.016 fp16, where float32 stays at
// 8e-7), towards the size of the type's own rounding; after 4 steps they only stay closer to each other than
// to float32 (measured 2.3-3.9x closer). The simulator runs the CPU kernels: there they are bitwise equal.
void test_gpu_mixed_precision(void **) {
  auto context = gpu_context();
  const dpt::ModelSpec spec = residual_model();
  {  // the store does keep 16-bit copies of this model
    dpt::MemoryArena arena("cpu:0", 0);
    dpt::CpuKernels kernels(arena);
    const dpt::Network fp32(spec, kernels, dpt::DType::kBF16, dpt::DType::kF32);
    const dpt::Network half(spec, kernels, dpt::DType::kBF16, dpt::DType::kBF16);
    print_message("activations per sample: float32 %zu bytes, 16-bit copies %zu\n",
                  fp32.activation_bytes_per_sample(), half.activation_bytes_per_sample());
    assert_true(half.activation_bytes_per_sample() < fp32.activation_bytes_per_sample());
  }
  const Batch first = batch(32, 100);  // train()'s first step
  auto step_once = [&](dpt::Trainer &t) { t.step(first.x.data(), first.y.data(), first.n); };
  dpt::Trainer fp32_once(cpu_context(), spec, config({0})), fp32(cpu_context(), spec, config({0}));
  const std::vector<float> start = parameters(fp32);
  step_once(fp32_once);
  train(fp32);
  auto error = [&](const dpt::Trainer &a, const dpt::Trainer &b) {
    return tu_relative_error(parameters(a).data(), parameters(b).data(), start.data(), start.size());
  };
  std::string failures;
  for (const dpt::DType type : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const char *name = type == dpt::DType::kBF16 ? "bf16" : "fp16";
    dpt::TrainerConfig c = config({0});
    c.matmul_dtype = c.activation_dtype = type;
    c.loss_scaling.enabled = type == dpt::DType::kF16;
    dpt::Trainer cpu_once(cpu_context(), spec, c), cpu(cpu_context(), spec, c);
    step_once(cpu_once);
    train(cpu);
    const double precision_once = error(cpu_once, fp32_once), precision = error(cpu, fp32);
    for (const bool deterministic : {true, false}) {
      c.kernels.deterministic = deterministic;
      dpt::Trainer gpu_once(context, spec, c), gpu(context, spec, c);
      step_once(gpu_once);
      train(gpu);
      const double once = error(gpu_once, cpu_once), four = error(gpu, cpu);
      print_message(
          "%s, GPU (%s algorithms) vs CPU: one step %.3g (CPU %s vs float32 %.3g), four steps %.3g "
          "(%.3g)\n",
          name, deterministic ? "deterministic" : "timed", once, name, precision_once, four, precision);
      if (!(precision_once > 0.0 && once <= precision_once / 4))
        failures += std::string(" ") + name + " one step;";
      if (!(four <= precision)) failures += std::string(" ") + name + " four steps;";
    }
  }
  if (!failures.empty()) fail_msg("the GPU at 16 bits strays from the CPU at 16 bits:%s", failures.c_str());
}

// A timeline of GPU work times each op on the device: the executor drains the stream around a recorded op,
// so the ops' intervals hold the replica's compute (on a GPU, or in the simulator, which runs queued work
// only when the stream is waited for, without that an op's interval is its launch and the work lands in the
// next wait: the loss read-back).
// The trace file of a trainer after two recorded steps (written, read back, removed).
std::string recorded_trace(dpt::Trainer &t, const Batch &b, double *compute) {
  t.step(b.x.data(), b.y.data(), b.n);
  t.start_trace(1000);
  for (int s = 0; s < 2; ++s) {
    t.step(b.x.data(), b.y.data(), b.n);
    *compute += t.replica_times(0).compute;
  }
  const std::string path = std::string(P_tmpdir) + "/dptrain_test_gpu_trace.json";
  t.write_trace(path);
  std::string text = dpt_test::read_file(path);
  std::remove(path.c_str());
  return text;
}

void test_gpu_trace_times_the_device(void **) {
  auto t = trainer(gpu_context(), config({0}));
  const Batch b = batch(32, 950);
  double compute = 0, ops = 0;
  const dpt::json::Value trace = dpt::json::parse(recorded_trace(*t, b, &compute));
  size_t events = 0;
  for (const dpt::json::Value &e : trace.find("traceEvents")->items) {
    const dpt::json::Value *cat = e.find("cat");
    if (cat != nullptr && (cat->text == "forward" || cat->text == "backward")) {
      ops += dpt::json::to_double(*e.find("dur"), "dur") * 1e-6;
      ++events;
    }
  }
  print_message("%zu op events: %.3f ms of the replica's %.3f ms of compute\n", events, ops * 1e3,
                compute * 1e3);
  assert_true(events > 0);
  assert_true(ops >= 0.5 * compute);
  // Sharded gradients on GPUs: every bucket's reduction on every replica's row, in each recorded step.
  dpt::TrainerConfig c = config({0, 0});
  c.shard = dpt::ShardMode::kGradients;
  c.bucket_bytes = 4096;
  auto sharded = trainer(gpu_context(), c);
  const size_t buckets = dpt::plan_buckets(sharded->spec(), c.bucket_bytes).size();
  const dpt::json::Value timeline = dpt::json::parse(recorded_trace(*sharded, b, &compute));
  size_t reductions = 0;
  for (const dpt::json::Value &e : timeline.find("traceEvents")->items) {
    const dpt::json::Value *name = e.find("name");
    if (name != nullptr && name->text.rfind("reduce-scatter bucket ", 0) == 0) ++reductions;
  }
  print_message("sharded gradients: %zu bucket reductions recorded (%zu buckets)\n", reductions, buckets);
  assert_int_equal(reductions, 2 * 2 * buckets);  // 2 steps x 2 replicas
}

void test_gpu_auto_split(void **) {
  auto context = gpu_context();
  dpt::TrainerConfig c = config({0, 0});
  c.split = dpt::SplitPolicy::kAuto;
  auto t = trainer(context, c);
  const Batch b = batch(32, 900);
  t->step(b.x.data(), b.y.data(), b.n);
  const std::vector<size_t> sizes = t->split_sizes(b.n);
  assert_int_equal(sizes.size(), 2);
  assert_int_equal(sizes[0] + sizes[1], b.n);
  print_message("auto split of 32 over two replicas of one GPU: %zu + %zu\n", sizes[0], sizes[1]);
  assert_true(sizes[0] > 0 && sizes[1] > 0);
  // Sharded gradients measure their backward with the probe hook (nothing reduced), then train as the
  // unsharded trainer on the even split does, within the equivalence tolerance.
  c.shard = dpt::ShardMode::kGradients;
  auto sharded = trainer(context, c);
  auto plain = trainer(context, config({0, 0}));
  const std::vector<float> start = parameters(*plain);
  for (uint64_t s = 0; s < 2; ++s) {
    const Batch next = batch(32, 910 + s);
    sharded->step(next.x.data(), next.y.data(), next.n);
    plain->step(next.x.data(), next.y.data(), next.n);
  }
  expect_equivalent("auto split, sharded gradients vs even, unsharded", parameters(*sharded),
                    parameters(*plain), start, kEquivalence);
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_virtual_replicas_match_one_replica),
      cmocka_unit_test(test_gpu_distinct_gpus_match_one_replica),
      cmocka_unit_test(test_gpu_accumulation_matches_full_batch),
      cmocka_unit_test(test_gpu_matches_cpu),
      cmocka_unit_test(test_gpu_checkpoint_moves_to_cpu),
      cmocka_unit_test(test_gpu_out_of_memory_names_the_device),
      cmocka_unit_test(test_gpu_kernel_failure),
      cmocka_unit_test(test_gpu_hung_collective_times_out),
      cmocka_unit_test(test_gpu_overlapped_buckets_match_one_call),
      cmocka_unit_test(test_gpu_overlapped_hang_times_out),
      cmocka_unit_test(test_gpu_overlapped_backward_failure),
      cmocka_unit_test(test_gpu_pipeline_stage_buckets),
      cmocka_unit_test(test_gpu_overlapped_buckets_wire16),
      cmocka_unit_test(test_gpu_refused_configurations),
      cmocka_unit_test(test_gpu_sharded_optimizer),
      cmocka_unit_test(test_gpu_sharded_gradients),
      cmocka_unit_test(test_gpu_sharded_parameters),
      cmocka_unit_test(test_gpu_sharded_parameters_read_ahead),
      cmocka_unit_test(test_gpu_sharded_tied_head),
      cmocka_unit_test(test_gpu_auto_split),
      cmocka_unit_test(test_gpu_trace_times_the_device),
      cmocka_unit_test(test_gpu_token_model),
      cmocka_unit_test(test_gpu_mixed_precision),
      cmocka_unit_test(test_gpu_batch_norm_replicas),
      cmocka_unit_test(test_gpu_hung_statistics_time_out),
      cmocka_unit_test(test_gpu_pipeline),
      cmocka_unit_test(test_gpu_pipeline_tied_head),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
