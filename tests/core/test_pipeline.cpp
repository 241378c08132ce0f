// Pipeline model parallel (TrainerConfig::pipeline_stages): the schedules run every forward and backward
// once, in micro-batch order, without a deadlock and with GPipe's bubble when simulated with unit costs; the
// model is cut only where one tensor is live, the balanced cut minimises the largest stage; a pipelined
// step gives the very bits of one device accumulating the same micro-batches (an MLP with dropout, a
// residual network with batch norm whose statistics are per micro-batch; 2 to 4 stages, 1 to 5
// micro-batches, ragged ones, both schedules, SGD with momentum and AdamW) and, with clipping, the same
// parameters to 1e-6; evaluation, prediction and checkpoints match too; a model that does not fit one
// capped device trains across capped stages; what the pipeline does not support is refused.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/pipeline_plan.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/splitter.hpp"
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

using dpt::PipelineSchedule;
using dpt_test::TestRng;

// Simulates a step with every forward and backward taking one tick: an op starts when its stage is free
// and its input is there (forward m on stage s after forward m on s - 1; backward m after backward m on
// s + 1, or on the last stage after its forward). Returns the ticks of the step, or 0 on a deadlock.
size_t simulate(PipelineSchedule schedule, size_t stages, size_t micro) {
  std::vector<std::vector<dpt::PipelineOp>> ops;
  for (size_t s = 0; s < stages; ++s) ops.push_back(dpt::stage_schedule(schedule, s, stages, micro));
  // done[s][2m + backward]: the tick the op finished (0: not yet)
  std::vector<std::vector<size_t>> done(stages, std::vector<size_t>(2 * micro, 0));
  std::vector<size_t> next(stages, 0);
  size_t finished = 0;
  for (size_t tick = 1; finished < 2 * stages * micro; ++tick) {
    if (tick > 4 * stages * micro + 4) return 0;
    std::vector<std::pair<size_t, size_t>> now;  // ops finishing this tick
    for (size_t s = 0; s < stages; ++s) {
      if (next[s] == ops[s].size()) continue;
      const dpt::PipelineOp op = ops[s][next[s]];
      // The tick the op's input was finished (0: the batch, there from the start; SIZE_MAX: not yet).
      auto finished_at = [](size_t tick) { return tick == 0 ? SIZE_MAX : tick; };
      size_t ready;
      if (!op.backward)
        ready = s == 0 ? 0 : finished_at(done[s - 1][2 * op.micro]);
      else
        ready = finished_at(s + 1 == stages ? done[s][2 * op.micro] : done[s + 1][2 * op.micro + 1]);
      if (ready >= tick) continue;  // not there before this tick
      now.push_back({s, 2 * op.micro + op.backward});
    }
    for (auto [s, i] : now) done[s][i] = tick, ++next[s], ++finished;
  }
  size_t last = 0;
  for (const auto &d : done) last = std::max(last, *std::max_element(d.begin(), d.end()));
  return last;
}

void test_schedules_run_each_pass_once_in_order(void **) {
  for (PipelineSchedule schedule : {PipelineSchedule::kOneFOneB, PipelineSchedule::kGPipe})
    for (size_t stages = 1; stages <= 5; ++stages)
      for (size_t micro = 1; micro <= 9; ++micro) {
        for (size_t s = 0; s < stages; ++s) {
          const std::vector<dpt::PipelineOp> ops = dpt::stage_schedule(schedule, s, stages, micro);
          assert_int_equal(ops.size(), 2 * micro);
          size_t forwards = 0, backwards = 0, in_flight = 0, most = 0;
          for (const dpt::PipelineOp &op : ops) {
            if (op.backward) {
              assert_int_equal(op.micro, backwards++);  // in micro-batch order
              assert_true(op.micro < forwards);         // after its forward
              --in_flight;
            } else {
              assert_int_equal(op.micro, forwards++);
              most = std::max(most, ++in_flight);
            }
          }
          assert_int_equal(most, dpt::micro_batches_in_flight(schedule, s, stages, micro));
        }
        // Unit costs: 2 (M + S - 1) ticks, the ideal bubble (S - 1) / (M + S - 1) on every stage.
        const size_t ticks = simulate(schedule, stages, micro);
        if (ticks != 2 * (micro + stages - 1))
          fail_msg("schedule %d, S=%zu M=%zu: %zu ticks, not %zu", int(schedule), stages, micro, ticks,
                   2 * (micro + stages - 1));
        const double idle = 1.0 - double(2 * micro) / double(ticks);
        assert_true(std::fabs(idle - dpt::ideal_bubble(stages, micro)) < 1e-12);
      }
}

// A residual block with batch norm, then a 1-D batch norm and dropout: 13 nodes.
dpt::ModelSpec residual_model() {
  dpt::ModelSpec m(dpt::Shape{2, 6, 6});
  const size_t a = m.add_conv2d(4, 3, 1, 1, false);                                     // 0
  const size_t b = m.add_op("relu", {m.add_batch_norm(a, 1e-5, 0.1, "bn1")}, "relu1");  // 1, 2
  m.add_conv2d(4, 3, 1, 1, false);                                                      // 3
  const size_t c = m.add_batch_norm(m.output_tensor(), 1e-5, 0.3, "bn2");               // 4
  m.add_op("relu", {m.add_op("add", {c, b}, "add")}, "relu2");                          // 5, 6
  m.add_op("global_avg_pool", {m.output_tensor()}, "gap");                              // 7
  m.add_dense(8);                                                                       // 8
  m.add_batch_norm(m.output_tensor(), 1e-3, 0.1, "bn3");                                // 9
  m.add_activation(dpt::Activation::kTanh);                                             // 10
  m.add_dropout(0.25f);                                                                 // 11
  m.add_dense(3);                                                                       // 12
  return m;
}

// side x side inputs: 8 (the default) gives 15,800 parameters; 32 gives 108,000 (27 norm blocks, so that a
// sharded optimizer gives each replica of a stage some of them).
dpt::ModelSpec mlp(size_t side = 8) {
  dpt::ModelSpec m(dpt::Shape{1, side, side});
  m.add_flatten();
  m.add_dense(96);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dropout(0.2f);
  m.add_dense(64);
  m.add_activation(dpt::Activation::kTanh);
  m.add_dense(48);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(5);
  return m;
}

void test_cuts_only_where_one_tensor_is_live(void **) {
  const dpt::ModelSpec m = residual_model();
  // Inside the block (nodes 3 to 5) relu1's output is live beside the main path.
  const std::vector<size_t> want{1, 2, 3, 6, 7, 8, 9, 10, 11, 12};
  assert_true(dpt::cut_candidates(m) == want);
  const std::vector<size_t> named = dpt::named_cuts(m, {"relu1", "gap"});
  assert_true((named == std::vector<size_t>{2, 7}));
  std::string message = dpt_test::expect_error([&] { dpt::named_cuts(m, {"add"}); },
                                               DPT_ERROR_INVALID_ARGUMENT, "a cut inside the residual block");
  assert_non_null(std::strstr(message.c_str(), "\"add\""));
  dpt_test::expect_error(
      [&] {
        dpt::named_cuts(m, {"gap", "relu1"});
      },
      DPT_ERROR_INVALID_ARGUMENT, "cuts out of order");
  dpt_test::expect_error([&] { dpt::named_cuts(m, {"nope"}); }, DPT_ERROR_INVALID_ARGUMENT, "no such node");
  dpt_test::expect_error([&] { dpt::balanced_cuts(m, 12, std::vector<double>(13, 1.0)); },
                         DPT_ERROR_INVALID_ARGUMENT, "more stages than places to cut");
  // Costs 1, 1, ..., 10 at node 12: three stages, the largest the last node alone.
  std::vector<double> costs(13, 1.0);
  costs[12] = 10;
  const std::vector<size_t> cuts = dpt::balanced_cuts(m, 3, costs);
  assert_int_equal(cuts.size(), 2);
  assert_int_equal(cuts[1], 12);
  assert_true(cuts[0] == 6);  // 6 + 6 ones: the even split of the first twelve nodes at a candidate
  // Each stage owns its nodes' parameters and statistics; the stages' models chain.
  const std::vector<dpt::PipelineStage> stages = dpt::cut_model(m, {2, 7});
  assert_int_equal(stages.size(), 3);
  assert_int_equal(stages[0].param_begin, 0);
  assert_int_equal(stages[2].param_end, m.parameter_count());
  for (size_t s = 0; s + 1 < stages.size(); ++s) {
    assert_int_equal(stages[s].param_end, stages[s + 1].param_begin);
    assert_int_equal(stages[s].buffer_end, stages[s + 1].buffer_begin);
    assert_true(stages[s].spec.output() == stages[s + 1].spec.input());
  }
  assert_true(stages[2].spec.output() == m.output());
  // Without named cuts a trainer divides the estimated work (the weight matrices' multiply-adds), not the
  // parameters: ResNet-18's two stages begin at layer3 (by parameters, the second would be its last block).
  const dpt::ModelSpec resnet = dpt::ModelSpec::builtin("resnet18");
  dpt::TrainerConfig c;
  c.pipeline_stages = 2;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0}), resnet, c);
  assert_string_equal(resnet.nodes()[t.pipeline()->stage_of(1).first_node].name.c_str(), "layer3.0.conv1");
}

struct Run {
  Run(dpt::ModelSpec m, size_t s, size_t mb, PipelineSchedule sched = PipelineSchedule::kOneFOneB,
      bool adam = false, bool clipped = false, std::vector<std::string> named = {})
      : model(std::move(m)),
        stages(s),
        micro(mb),
        schedule(sched),
        adamw(adam),
        clip(clipped),
        cuts(std::move(named)) {}
  dpt::ModelSpec model;
  size_t stages, micro;
  PipelineSchedule schedule;
  bool adamw, clip;
  std::vector<std::string> cuts;
  size_t replicas = 1;                           // per stage; the reference: this many data-parallel devices
  dpt::DType precision = dpt::DType::kF32;       // of the matrix products
  dpt::DType activations = dpt::DType::kF32;     // how activations are kept for backward
  dpt::ShardMode shard = dpt::ShardMode::kNone;  // the pipelined trainer's
};

dpt::TrainerConfig config(const Run &run, bool pipelined) {
  dpt::TrainerConfig c;
  c.seed = 11;
  if (pipelined) {
    c.shard = run.shard;
    c.pipeline_stages = run.stages;
    c.micro_batches = run.micro;
    c.pipeline_schedule = run.schedule;
    c.pipeline_cuts = run.cuts;
  } else {
    c.accumulation_steps = run.micro;
  }
  if (run.adamw) {
    c.optimizer.kind = dpt::OptimizerKind::kAdamW;
    c.optimizer.learning_rate = 0.01f;
    c.optimizer.weight_decay = 0.05f;
  } else {
    c.optimizer.learning_rate = 0.1f;
    c.optimizer.momentum = 0.9f;
    c.optimizer.weight_decay = 0.01f;
  }
  if (run.clip) c.optimizer.clip_norm = 0.05f;  // small: every step clips
  c.matmul_dtype = run.precision;
  c.activation_dtype = run.activations;
  c.loss_scaling.enabled = run.precision == dpt::DType::kF16;  // as fp16 precision turns it on
  return c;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
  size_t n = 0;
};

Batch batch(const dpt::ModelSpec &model, size_t n, uint64_t seed) {
  TestRng rng(seed);
  Batch b{rng.vector(n * model.input().size(), -1.0f, 1.0f), std::vector<int32_t>(n), n};
  for (auto &label : b.y) label = int32_t(rng.below(model.classes()));
  return b;
}

struct Outcome {
  std::vector<float> params, buffers;
  dpt::TrainerState state;
  double loss = 0;
};

Outcome finish(dpt::Trainer &t, double loss) {
  Outcome o{std::vector<float>(t.parameter_count()), std::vector<float>(t.spec().buffer_count()), {}, loss};
  t.get_parameters(0, o.params.data());
  t.get_buffers(0, o.buffers.data());
  o.state = t.save_state();
  return o;
}

// Steps of 13, 8 and 5 samples (ragged micro-batches, and fewer samples than micro-batches).
const size_t kBatches[] = {13, 8, 13, 5};

Outcome pipelined(const Run &run) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{run.stages * run.replicas, 0});
  dpt::Trainer t(context, run.model, config(run, true));
  double loss = 0;
  for (size_t s = 0; s < 4; ++s) {
    const Batch b = batch(run.model, kBatches[s], 40 + s);
    loss = t.step(b.x.data(), b.y.data(), b.n).loss;
  }
  // The replicas of each stage hold the same parameters, bit for bit.
  Outcome o = finish(t, loss);
  for (size_t r = 1; r < run.replicas; ++r) {
    std::vector<float> p(t.parameter_count());
    t.get_parameters(r, p.data());
    if (std::memcmp(p.data(), o.params.data(), p.size() * sizeof(float)) != 0)
      fail_msg("S=%zu R=%zu: the parameters of replica %zu differ from replica 0's", run.stages, run.replicas,
               r);
  }
  return o;
}

// One device (or R data-parallel devices) accumulating the pipeline's micro-batches: the same sizes
// (split_batch's even split), in order, one window per batch.
Outcome accumulated(const Run &run) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{run.replicas, 0});
  double loss = 0;
  std::unique_ptr<dpt::Trainer> t;
  for (size_t s = 0; s < 4; ++s) {
    const Batch b = batch(run.model, kBatches[s], 40 + s);
    const size_t count = std::min(run.micro, b.n);
    if (t == nullptr || t->config().accumulation_steps != count) {
      // The window's length follows the batch: a fresh trainer carrying the state over.
      Run r = run;
      r.micro = count;
      auto next = std::make_unique<dpt::Trainer>(context, run.model, config(r, false));
      if (t != nullptr) next->load_state(t->save_state());
      t = std::move(next);
    }
    const std::vector<size_t> sizes = dpt::split_batch(b.n, std::vector<double>(count, 1.0));
    double sum = 0;
    size_t first = 0;
    for (size_t size : sizes) {
      sum += t->step(b.x.data() + first * run.model.input().size(), b.y.data() + first, size).loss *
             double(size);
      first += size;
    }
    loss = sum / double(b.n);
  }
  return finish(*t, loss);
}

bool same(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expect_same(const Outcome &p, const Outcome &r, const std::string &what) {
  if (!same(p.params, r.params)) {
    size_t i = 0;
    while (i < p.params.size() && p.params[i] == r.params[i]) ++i;
    fail_msg("%s: the parameters differ (first at %zu: %g vs %g)", what.c_str(), i, double(p.params[i]),
             double(r.params[i]));
  }
  if (!same(p.buffers, r.buffers)) fail_msg("%s: the running statistics differ", what.c_str());
  if (!same(p.state.optimizer_state, r.state.optimizer_state))
    fail_msg("%s: the optimizer state differs", what.c_str());
  if (std::fabs(p.loss - r.loss) > 1e-12 * std::fabs(r.loss) + 1e-12)
    fail_msg("%s: loss %.17g vs %.17g", what.c_str(), p.loss, r.loss);
}

void test_pipeline_has_the_bits_of_accumulation(void **) {
  for (bool residual : {false, true})
    for (size_t stages : {2, 3, 4})
      for (size_t micro : {1, 2, 3, 5})
        for (PipelineSchedule schedule : {PipelineSchedule::kOneFOneB, PipelineSchedule::kGPipe})
          for (bool adamw : {false, true}) {
            if (micro == 1 && schedule == PipelineSchedule::kGPipe) continue;  // the same schedule
            Run run{residual ? residual_model() : mlp(), stages, micro, schedule, adamw};
            const std::string what = std::string(residual ? "residual" : "mlp") +
                                     " S=" + std::to_string(stages) + " M=" + std::to_string(micro) +
                                     " schedule=" + std::to_string(int(schedule)) +
                                     " adamw=" + std::to_string(adamw);
            expect_same(pipelined(run), accumulated(run), what);
          }
}

// S stages x R replicas: each micro-batch split among a stage's replicas, batch norm summed among them,
// the stage's gradients all-reduced among them: the bits of R data-parallel devices accumulating the same
// micro-batches for R = 2 (a sum of two is the same in any order); for R = 3 the all-reduce of a stage's
// range may add in another order than the whole vector's (where the range does not begin at a ring block
// of the whole vector: not in these models, smaller than one), so the parameters are compared to 1e-5.
void test_stages_with_data_parallel_replicas(void **) {
  for (bool residual : {false, true})
    for (size_t stages : {2, 3})
      for (size_t replicas : {2, 3})
        for (size_t micro : {1, 3}) {
          Run run{residual ? residual_model() : mlp(), stages, micro, PipelineSchedule::kOneFOneB, true};
          run.replicas = replicas;
          const std::string what = std::string(residual ? "residual" : "mlp") +
                                   " S=" + std::to_string(stages) + " R=" + std::to_string(replicas) +
                                   " M=" + std::to_string(micro);
          const Outcome p = pipelined(run), r = accumulated(run);
          if (replicas == 2) {
            expect_same(p, r, what);
            continue;
          }
          dpt_test::Comparison cmp(what, 1e-5, 1e-2);
          for (size_t i = 0; i < p.params.size(); ++i) cmp.add(p.params[i], r.params[i], std::to_string(i));
          cmp.finish();
        }
}

// Accumulation over pipelined calls: a window of two step calls of M micro-batches each is one device
// accumulating the 2M micro-batches (dropout keyed by each sample's place in the whole window).
void test_accumulation_across_pipelined_calls(void **) {
  Run run{mlp(), 3, 2, PipelineSchedule::kOneFOneB, true};
  dpt::TrainerConfig c = config(run, true);
  c.accumulation_steps = 2;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), run.model, c);
  run.micro = 4;
  dpt::Trainer one(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), run.model, config(run, false));
  for (size_t s = 0; s < 4; ++s) {
    const Batch b = batch(run.model, 10, 70 + s);  // micro-batches of 5
    const dpt::StepStats st = t.step(b.x.data(), b.y.data(), b.n);
    assert_int_equal(st.applied, s % 2 == 1);
    for (size_t m = 0; m < 2; ++m) one.step(b.x.data() + 5 * m * 64, b.y.data() + 5 * m, 5);
  }
  assert_int_equal(t.optimizer_steps(), 2);
  assert_int_equal(t.parameter_checksum(), one.parameter_checksum());
}

// 16-bit precisions: bf16 products, fp16 products with loss scaling (whose multiplier follows the first
// micro-batch, as one device accumulating it computes it): the same bits as there. 16-bit activation
// storage: a stage's input and output (the tensors crossing its boundaries) stay float32 where one device
// might keep them as 16-bit copies for backward, so the parameters agree to the rounding's order, 1e-3.
void test_sixteen_bit_precisions(void **) {
  for (dpt::DType precision : {dpt::DType::kBF16, dpt::DType::kF16})
    for (bool residual : {false, true}) {
      Run run{residual ? residual_model() : mlp(), 2, 3, PipelineSchedule::kOneFOneB, true};
      run.precision = precision;
      const std::string what =
          std::string(residual ? "residual" : "mlp") + " precision " + std::to_string(int(precision));
      expect_same(pipelined(run), accumulated(run), what);
      run.adamw = false;  // AdamW's first steps move a parameter by lr times the sign of a tiny gradient
      const Outcome wide = accumulated(run);  // float32 activations
      run.activations = precision;
      const Outcome p = pipelined(run), r = accumulated(run);
      // The 16-bit storage's own effect on one device, and the pipeline's distance from one device: no
      // larger.
      double effect = 0, distance = 0;
      for (size_t i = 0; i < p.params.size(); ++i) {
        effect = std::max(effect, double(std::fabs(r.params[i] - wide.params[i])));
        distance = std::max(distance, double(std::fabs(p.params[i] - r.params[i])));
      }
      print_message("%s, 16-bit activations: pipeline vs one device %.3g, 16-bit vs float32 storage %.3g\n",
                    what.c_str(), distance, effect);
      if (!(distance <= effect))
        fail_msg("%s: the pipeline moved the parameters more than the storage did", what.c_str());
    }
}

// Explicit cuts, and clipping: the norm's blocks shared by two stages are summed in parts, so the scale
// differs in the last bits.
void test_named_cuts_and_clipping(void **) {
  Run run{residual_model(), 3, 4, PipelineSchedule::kOneFOneB, true, false, {"relu2", "bn3"}};
  expect_same(pipelined(run), accumulated(run), "named cuts");
  run.clip = true;
  const Outcome p = pipelined(run), r = accumulated(run);
  dpt_test::Comparison cmp("clipped", 1e-6, 1e-3);
  for (size_t i = 0; i < p.params.size(); ++i) cmp.add(p.params[i], r.params[i], std::to_string(i));
  cmp.finish();
}

// Evaluation and prediction run the stages' forwards on micro-batches no larger than training's; a
// checkpoint holds the whole state and loads into one device (and back) to go on alike.
void test_evaluate_predict_and_checkpoint(void **) {
  Run run{residual_model(), 3, 3};
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  dpt::Trainer t(context, run.model, config(run, true));
  dpt::Trainer one(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), run.model, config(run, false));
  const Batch train = batch(run.model, 12, 5);
  t.step(train.x.data(), train.y.data(), train.n);
  one.load_state(t.save_state());
  const Batch test = batch(run.model, 31, 6);
  const dpt::EvalStats e = t.evaluate(test.x.data(), test.y.data(), test.n);
  const dpt::EvalStats f = one.evaluate(test.x.data(), test.y.data(), test.n);
  assert_int_equal(e.correct, f.correct);
  assert_true(std::fabs(e.loss_sum - f.loss_sum) <= 1e-5 * std::fabs(f.loss_sum));
  std::vector<float> a(test.n * 3), b(a.size());
  t.predict(test.x.data(), test.n, a.data());
  one.predict(test.x.data(), test.n, b.data());
  dpt_test::Comparison cmp("logits", 1e-5, 1e-3);
  for (size_t i = 0; i < a.size(); ++i) cmp.add(a[i], b[i], std::to_string(i));
  cmp.finish();
  // A second pipeline from the checkpoint continues bit for bit with the first.
  dpt::Trainer u(context, run.model, config(run, true));
  u.load_state(t.save_state());
  const Batch more = batch(run.model, 12, 8);
  t.step(more.x.data(), more.y.data(), more.n);
  u.step(more.x.data(), more.y.data(), more.n);
  assert_int_equal(t.parameter_checksum(), u.parameter_checksum());
}

// A NaN in the inputs: the window is discarded on every stage, and training goes on as before.
// Each stage's times: its forwards and backwards (compute), its hand-overs (communication), its update,
// and its waits (idle), adding up to the call's wall time; every stage computed and handed values over.
void test_stage_times_add_up(void **) {
  Run run{mlp(), 3, 4};
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0}), run.model, config(run, true));
  const Batch b = batch(run.model, 24, 9);
  const dpt::StepStats s = t.step(b.x.data(), b.y.data(), b.n);
  for (size_t d = 0; d < 3; ++d) {
    const dpt::ReplicaTimes r = t.replica_times(d);
    assert_true(r.compute > 0 && r.communication > 0 && r.update >= 0 && r.idle >= 0);
    const double sum = r.compute + r.communication + r.update + r.idle;
    if (sum > s.total_seconds * (1 + 1e-9) + 1e-6)
      fail_msg("device %zu: its times add up to %g s, more than the call's %g s", d, sum, s.total_seconds);
  }
}

void test_nonfinite_input_discards_the_window(void **) {
  Run run{mlp(), 3, 4};
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  dpt::Trainer t(context, run.model, config(run, true));
  const uint64_t before = t.parameter_checksum();
  Batch b = batch(run.model, 12, 3);
  b.x[7 * 64 + 5] = std::nanf("");
  const dpt::StepStats s = t.step(b.x.data(), b.y.data(), b.n);
  assert_true(s.skipped_nonfinite);
  assert_int_equal(t.parameter_checksum(), before);
  const Batch good = batch(run.model, 12, 4);
  assert_true(t.step(good.x.data(), good.y.data(), good.n).applied);
}

// A wide MLP that one capped device cannot hold (its parameters, gradients and AdamW state alone exceed the
// cap) trains across four capped stages to the parameters of an uncapped device.
void test_pipeline_fits_where_one_device_does_not(void **) {
  dpt::ModelSpec wide(dpt::Shape{64});
  for (int i = 0; i < 4; ++i) {
    wide.add_dense(512);
    wide.add_activation(dpt::Activation::kRelu);
  }
  wide.add_dense(5);
  Run run{wide, 4, 4, PipelineSchedule::kOneFOneB, true};
  const uint64_t cap = uint64_t(wide.parameter_count()) * 16 * 3 / 4;  // 3/4 of the 16 bytes per parameter
  auto capped = std::make_shared<dpt::Context>(dpt::ContextConfig{4, cap});
  const std::string message = dpt_test::expect_error(
      [&] {
        dpt::Trainer t(capped, wide, config(run, false));
        const Batch b = batch(wide, 8, 1);
        t.step(b.x.data(), b.y.data(), b.n);
      },
      DPT_ERROR_OUT_OF_MEMORY, "one capped device");
  assert_non_null(std::strstr(message.c_str(), "cpu:"));
  dpt::Trainer t(capped, wide, config(run, true));
  dpt::Trainer one(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), wide, config(run, false));
  for (size_t s = 0; s < 2; ++s) {
    const Batch b = batch(wide, 12, 20 + s);
    t.step(b.x.data(), b.y.data(), b.n);
    const std::vector<size_t> sizes = dpt::split_batch(b.n, std::vector<double>(4, 1.0));
    size_t first = 0;
    for (size_t size : sizes) one.step(b.x.data() + first * 64, b.y.data() + first, size), first += size;
  }
  assert_int_equal(t.parameter_checksum(), one.parameter_checksum());
  for (size_t r = 0; r < 4; ++r) assert_true(t.replica_memory(r).total() < cap);
}

// A stage that fails (at the start of its compute) or stalls (past the timeout) while its neighbours wait
// for its activations or gradients: the step returns the failing device's error (or the timeout) within a
// second or two, nothing hangs, and the trainer refuses further work.
void test_failed_or_stalled_stage_does_not_hang(void **) {
  for (size_t failing : {0, 1, 2})
    for (bool stall : {false, true}) {
      Run run{mlp(), 3, 4};
      dpt::TrainerConfig c = config(run, true);
      c.timeout_seconds = 1.0;
      auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
      dpt::Trainer t(context, run.model, c);
      const Batch b = batch(run.model, 12, 1);
      t.step(b.x.data(), b.y.data(), b.n);
      context->device(failing).inject_fault(stall ? dpt::FaultKind::kStall : dpt::FaultKind::kFail, 0, 30.0);
      const double start = dpt::platform::now_seconds();
      const std::string message =
          dpt_test::expect_error([&] { t.step(b.x.data(), b.y.data(), b.n); },
                                 stall ? DPT_ERROR_TIMEOUT : DPT_ERROR_DEVICE, "a failed or stalled stage");
      const double seconds = dpt::platform::now_seconds() - start;
      if (seconds > 3.0)
        fail_msg("device %zu (stall %d): the step took %.2f s", failing, int(stall), seconds);
      if (!stall) assert_non_null(std::strstr(message.c_str(), ("cpu:" + std::to_string(failing)).c_str()));
      dpt_test::expect_error([&] { t.step(b.x.data(), b.y.data(), b.n); }, DPT_ERROR_INVALID_STATE,
                             "a broken pipeline");
    }
}

// A small tied language model: tokens [6] -> wte [11, 8] -> linear "a" -> linear "b" (b.weight tied to
// a.weight) -> linear "head" [11] without bias (head.weight tied to wte.weight, as GPT-2's LM head).
dpt::ModelSpec tied_lm() {
  dpt::ModelSpec m(dpt::Shape{6}, dpt::DType::kI32);
  dpt::OpAttrs wte, a, head;
  wte.ints[0] = 11, wte.ints[1] = 8;
  a.ints[0] = 8, a.ints[1] = 1;
  head.ints[0] = 11, head.ints[1] = 0;
  m.add(dpt::op_def("token_embedding"), {0}, wte, "wte");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, a, "a");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, a, "b");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, head, "head");
  m.tie("b.weight", "a.weight");
  m.tie("head.weight", "wte.weight");
  return m;
}

// Tied parameters in a pipeline: a tie inside a stage stays a tie; the head in a later stage than its
// source keeps a mirror whose gradient the source's stage adds to its own and which copies the updated
// values back. Against one device (R devices) accumulating the same micro-batches: the tied gradient's two
// parts are summed per stage first, so the parameters agree to 1e-5, not bit for bit. A tied parameter that
// is not its stage's last is refused. With two replicas per stage and the optimizer sharded among them
// (their reduce-scatter, the mirror all-reduced beside it): the unsharded pipeline's bits.
void test_tied_parameters_across_stages(void **) {
  const dpt::ModelSpec m = tied_lm();
  for (size_t replicas : {1, 2})
    for (size_t micro : {1, 3}) {
      Run run{m, 2, micro, PipelineSchedule::kOneFOneB, true, false, {"head"}};
      run.replicas = replicas;
      dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{2 * replicas, 0}), m,
                     config(run, true));
      dpt::Trainer ref(std::make_shared<dpt::Context>(dpt::ContextConfig{replicas, 0}), m,
                       config(run, false));
      Run sharded_run = run;
      sharded_run.shard = dpt::ShardMode::kOptimizer;
      dpt::Trainer sharded(std::make_shared<dpt::Context>(dpt::ContextConfig{2 * replicas, 0}), m,
                           config(sharded_run, true));
      for (size_t step = 0; step < 3; ++step) {
        TestRng rng(90 + step);
        const size_t n = 12;
        std::vector<int32_t> tokens(n * 6), targets(n * 6);
        for (auto &v : tokens) v = int32_t(rng.below(11));
        for (size_t i = 0; i < targets.size(); ++i) targets[i] = i % 5 == 2 ? -1 : int32_t(rng.below(11));
        t.step(tokens.data(), targets.data(), n);
        sharded.step(tokens.data(), targets.data(), n);
        const std::vector<size_t> sizes = dpt::split_batch(n, std::vector<double>(micro, 1.0));
        size_t first = 0;
        for (size_t size : sizes)
          ref.step(tokens.data() + first * 6, targets.data() + first * 6, size), first += size;
      }
      std::vector<float> p(t.parameter_count()), r(p.size());
      t.get_parameters(0, p.data());
      ref.get_parameters(0, r.data());
      dpt_test::Comparison cmp("tied, R=" + std::to_string(replicas) + " M=" + std::to_string(micro), 1e-5,
                               1e-2);
      for (size_t i = 0; i < p.size(); ++i) cmp.add(p[i], r[i], std::to_string(i));
      cmp.finish();
      for (size_t q = 1; q < replicas; ++q) {
        std::vector<float> other(p.size());
        t.get_parameters(q, other.data());
        assert_true(same(other, p));
      }
      for (size_t q = 0; q < 2 * replicas; ++q) {
        std::vector<float> other(p.size());
        sharded.get_parameters(q, other.data());
        assert_true(same(other, p));
      }
    }
  Run bad{m, 2, 2, PipelineSchedule::kOneFOneB, false, false, {"b"}};  // b's tie crosses, and b is not last
  const std::string message = dpt_test::expect_error(
      [&] {
        dpt::Trainer(std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0}), m, config(bad, true));
      },
      DPT_ERROR_UNSUPPORTED, "a crossing tie that is not its stage's last parameter");
  assert_non_null(std::strstr(message.c_str(), "\"b.weight\""));
}

// The optimizer state sharded among each stage's replicas (ZeRO stage 1 within the stages): each replica
// updates its part of its stage's range (cut at whole norm blocks) and the stage's replicas all-gather
// them. The parameters, running statistics, optimizer state (saved whole) and loss are the unsharded
// pipeline's bits; a stage's replicas hold its state between them exactly once, each less than all of
// it; the unsharded pipeline's checkpoint loads into the sharded one and both train on alike.
void test_sharded_optimizer_within_stages(void **) {
  for (bool residual : {false, true})
    for (size_t stages : {2, 3})
      for (size_t replicas : {2, 3})
        for (bool adamw : {false, true}) {
          Run run{residual ? residual_model() : mlp(32), stages, 3,
                  PipelineSchedule::kOneFOneB,           adamw,  adamw};
          run.replicas = replicas;
          const std::string what = std::string(residual ? "residual" : "mlp(32)") +
                                   " S=" + std::to_string(stages) + " R=" + std::to_string(replicas) +
                                   " adamw=" + std::to_string(adamw);
          const Outcome plain = pipelined(run);
          run.shard = dpt::ShardMode::kOptimizer;
          expect_same(pipelined(run), plain, what + ", sharded");
          if (residual) continue;
          auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{stages * replicas, 0});
          dpt::Trainer t(context, run.model, config(run, true));
          const size_t per = adamw ? 2 : 1;
          for (size_t s = 0; s < stages; ++s) {
            const dpt::PipelineStage &stage = t.pipeline()->stage_of(s * replicas);
            uint64_t held = 0;
            for (size_t r = 0; r < replicas; ++r) {
              const uint64_t mine = t.replica_memory(s * replicas + r).optimizer_state;
              if (mine >= (stage.param_end - stage.param_begin) * per * sizeof(float) &&
                  stage.param_end - stage.param_begin > 2 * replicas * dpt::kNormBlock)
                fail_msg("%s: replica %zu of stage %zu keeps all of its state", what.c_str(), r, s);
              held += mine;
            }
            if (held != (stage.param_end - stage.param_begin) * per * sizeof(float))
              fail_msg("%s: stage %zu's replicas hold %llu bytes of state", what.c_str(), s,
                       (unsigned long long)held);
          }
          // The unsharded run's checkpoint, then one more batch in both.
          t.load_state(plain.state);
          run.shard = dpt::ShardMode::kNone;
          dpt::Trainer u(context, run.model, config(run, true));
          u.load_state(plain.state);
          const Batch b = batch(run.model, 11, 77);
          t.step(b.x.data(), b.y.data(), b.n);
          u.step(b.x.data(), b.y.data(), b.n);
          expect_same(finish(t, 0), finish(u, 0), what + ", from the unsharded checkpoint");
        }
}

void test_refusals(void **) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  Run run{mlp(), 2, 2};
  dpt::TrainerConfig c = config(run, true);
  std::string message = dpt_test::expect_error([&] { dpt::Trainer(context, run.model, c); },
                                               DPT_ERROR_UNSUPPORTED, "3 devices for 2 stages");
  assert_non_null(std::strstr(message.c_str(), "whole number of devices per stage"));
  c.devices = {0, 1};
  c.shard = dpt::ShardMode::kGradients;
  message = dpt_test::expect_error([&] { dpt::Trainer(context, run.model, c); }, DPT_ERROR_UNSUPPORTED,
                                   "sharded gradients");
  assert_non_null(std::strstr(message.c_str(), "only the optimizer state"));
  c.shard = dpt::ShardMode::kNone;
  c.split = dpt::SplitPolicy::kAuto;
  dpt_test::expect_error([&] { dpt::Trainer(context, run.model, c); }, DPT_ERROR_INVALID_ARGUMENT,
                         "auto split");
  c.split = dpt::SplitPolicy::kEven;
  c.pipeline_cuts = {"1", "3"};
  message = dpt_test::expect_error([&] { dpt::Trainer(context, run.model, c); }, DPT_ERROR_INVALID_ARGUMENT,
                                   "two cuts for two stages");
  assert_non_null(std::strstr(message.c_str(), "1 cut points"));
  c.pipeline_cuts.clear();
  c.micro_batches = 5000;
  dpt_test::expect_error([&] { dpt::Trainer(context, run.model, c); }, DPT_ERROR_OUT_OF_RANGE,
                         "micro-batches");
  c.micro_batches = 2;
  // The trainer still works after the refusals (they leave nothing behind).
  dpt::Trainer t(context, run.model, c);
  const Batch b = batch(run.model, 6, 2);
  assert_true(t.step(b.x.data(), b.y.data(), b.n).applied);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 1 && (argc != 3 || std::strcmp(argv[1], "--only") != 0)) {
    std::fprintf(stderr, "usage: %s [--only NAME,NAME,...]\n", argv[0]);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schedules_run_each_pass_once_in_order),
      cmocka_unit_test(test_cuts_only_where_one_tensor_is_live),
      cmocka_unit_test(test_pipeline_has_the_bits_of_accumulation),
      cmocka_unit_test(test_stages_with_data_parallel_replicas),
      cmocka_unit_test(test_accumulation_across_pipelined_calls),
      cmocka_unit_test(test_sixteen_bit_precisions),
      cmocka_unit_test(test_named_cuts_and_clipping),
      cmocka_unit_test(test_evaluate_predict_and_checkpoint),
      cmocka_unit_test(test_stage_times_add_up),
      cmocka_unit_test(test_nonfinite_input_discards_the_window),
      cmocka_unit_test(test_pipeline_fits_where_one_device_does_not),
      cmocka_unit_test(test_failed_or_stalled_stage_does_not_hang),
      cmocka_unit_test(test_tied_parameters_across_stages),
      cmocka_unit_test(test_sharded_optimizer_within_stages),
      cmocka_unit_test(test_refusals),
  };
  std::vector<CMUnitTest> chosen;
  for (const CMUnitTest &t : tests)
    if (argc == 1 ||
        (',' + std::string(argv[2]) + ',').find(',' + std::string(t.name) + ',') != std::string::npos)
      chosen.push_back(t);
  return _cmocka_run_group_tests("test_pipeline", chosen.data(), chosen.size(), nullptr, nullptr);
}
