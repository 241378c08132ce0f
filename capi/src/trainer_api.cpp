// dpt_trainer_*: creating trainers, stepping, evaluating, predicting, fitting (trainer_values_api.cpp: the
// parameters and buffers; trainer_figures_api.cpp: what it reports of itself).
#include <cmath>
#include <cstring>
#include <string>

#include "api_support.hpp"
#include "comm/world.hpp"
#include "handles.hpp"
#include "parallel/device_group.hpp"
#include "parallel/fit.hpp"
#include "parallel/retired_trainers.hpp"

using dpt::capi::checked_mul;
using dpt::capi::guarded;
using dpt::capi::require_not_null;

namespace {

dpt::OptimizerConfig to_config(const dpt_optimizer_options &o) {
  const dpt_optimizer_kind kind =
      dpt::capi::checked_enum(o.kind, {DPT_OPTIMIZER_SGD, DPT_OPTIMIZER_ADAMW}, "optimizer kind");
  const dpt_schedule_kind schedule = dpt::capi::checked_enum(
      o.schedule, {DPT_SCHEDULE_CONSTANT, DPT_SCHEDULE_STEP, DPT_SCHEDULE_COSINE}, "schedule");
  dpt::OptimizerConfig c;
  c.kind = kind == DPT_OPTIMIZER_ADAMW ? dpt::OptimizerKind::kAdamW : dpt::OptimizerKind::kSgd;
  c.learning_rate = o.learning_rate;
  c.momentum = o.momentum;
  c.nesterov = o.nesterov != 0;
  c.weight_decay = o.weight_decay;
  c.beta1 = o.beta1;
  c.beta2 = o.beta2;
  c.epsilon = o.epsilon;
  c.schedule = schedule == DPT_SCHEDULE_STEP     ? dpt::ScheduleKind::kStep
               : schedule == DPT_SCHEDULE_COSINE ? dpt::ScheduleKind::kCosine
                                                 : dpt::ScheduleKind::kConstant;
  c.warmup_steps = o.warmup_steps;
  c.step_size = o.step_size;
  c.gamma = o.gamma;
  c.total_steps = o.total_steps;
  c.min_learning_rate = o.min_learning_rate;
  c.clip_norm = o.clip_norm;
  c.decay_matrices_only =
      dpt::capi::checked_enum(o.weight_decay_scope, {DPT_WEIGHT_DECAY_ALL, DPT_WEIGHT_DECAY_MATRICES},
                              "weight_decay_scope") == DPT_WEIGHT_DECAY_MATRICES;
  dpt::validate(c);
  return c;
}

dpt::DType to_dtype(dpt_precision p) {
  return p == DPT_PRECISION_BF16   ? dpt::DType::kBF16
         : p == DPT_PRECISION_FP16 ? dpt::DType::kF16
                                   : dpt::DType::kF32;
}

dpt::TrainerConfig to_config(const dpt_trainer_options &o, size_t context_devices) {
  dpt::TrainerConfig c;
  DPT_REQUIRE(o.devices != nullptr || o.device_count == 0, DPT_ERROR_NULL_POINTER,
              "options->devices is NULL but device_count is " + std::to_string(o.device_count));
  DPT_REQUIRE(o.devices == nullptr || o.device_count != 0, DPT_ERROR_INVALID_ARGUMENT,
              "options->devices is not NULL but device_count is 0 (devices = NULL means every device)");
  DPT_REQUIRE(o.device_count <= dpt::kMaxTrainerDevices, DPT_ERROR_OUT_OF_RANGE,
              "device_count " + std::to_string(o.device_count) + " exceeds 64");
  if (o.devices != nullptr) c.devices.assign(o.devices, o.devices + o.device_count);
  const dpt_split_policy split =
      dpt::capi::checked_enum(o.split, {DPT_SPLIT_EVEN, DPT_SPLIT_WEIGHTED, DPT_SPLIT_AUTO}, "split policy");
  c.split = split == DPT_SPLIT_WEIGHTED ? dpt::SplitPolicy::kWeighted
            : split == DPT_SPLIT_AUTO   ? dpt::SplitPolicy::kAuto
                                        : dpt::SplitPolicy::kEven;
  if (split == DPT_SPLIT_WEIGHTED) {
    require_not_null(o.split_weights, "options->split_weights");
    const size_t k = o.devices != nullptr ? o.device_count : context_devices;
    c.weights.assign(o.split_weights, o.split_weights + k);
  }
  const dpt_allreduce_algorithm allreduce =
      dpt::capi::checked_enum(o.allreduce, {DPT_ALLREDUCE_RING, DPT_ALLREDUCE_NAIVE}, "all-reduce algorithm");
  c.allreduce =
      allreduce == DPT_ALLREDUCE_NAIVE ? dpt::AllReduceAlgorithm::kNaive : dpt::AllReduceAlgorithm::kRing;
  c.seed = o.seed;
  c.accumulation_steps = o.accumulation_steps;
  const dpt_init_scheme init =
      dpt::capi::checked_enum(o.init, {DPT_INIT_UNIFORM_FAN_IN, DPT_INIT_NORMAL}, "init scheme");
  c.init = init == DPT_INIT_NORMAL ? dpt::InitScheme::kNormal : dpt::InitScheme::kUniformFanIn;
  DPT_REQUIRE(std::isfinite(o.timeout_seconds) && o.timeout_seconds >= 0, DPT_ERROR_INVALID_ARGUMENT,
              "timeout_seconds must be finite and non-negative");
  c.timeout_seconds = o.timeout_seconds;
  c.bucket_bytes = o.bucket_bytes;
  if (dpt::capi::checked_enum(o.communicator, {DPT_COMMUNICATOR_LOCAL, DPT_COMMUNICATOR_MPI},
                              "communicator") == DPT_COMMUNICATOR_MPI)
    c.world = &dpt::World::get();
  c.error_on_nonfinite = dpt::capi::checked_enum(o.nonfinite, {DPT_NONFINITE_SKIP, DPT_NONFINITE_ERROR},
                                                 "non-finite policy") == DPT_NONFINITE_ERROR;
  c.init_std = o.init_std;
  DPT_REQUIRE((o.gpu_flags & ~uint32_t(DPT_GPU_ALLOW_TF32 | DPT_GPU_DETERMINISTIC)) == 0,
              DPT_ERROR_INVALID_ARGUMENT, "gpu_flags has unknown bits: " + std::to_string(o.gpu_flags));
  c.kernels.allow_tf32 = (o.gpu_flags & DPT_GPU_ALLOW_TF32) != 0;
  c.kernels.deterministic = (o.gpu_flags & DPT_GPU_DETERMINISTIC) != 0;
  c.sync_batch_norm = dpt::capi::checked_enum(o.batch_norm, {DPT_BATCH_NORM_SYNC, DPT_BATCH_NORM_LOCAL},
                                              "batch_norm mode") == DPT_BATCH_NORM_SYNC;
  const dpt_precision precision = dpt::capi::checked_enum(
      o.precision, {DPT_PRECISION_FP32, DPT_PRECISION_BF16, DPT_PRECISION_FP16}, "precision");
  c.matmul_dtype = to_dtype(precision);
  c.loss_scaling.enabled = precision == DPT_PRECISION_FP16;
  c.loss_scaling.initial_scale = o.initial_loss_scale;
  c.loss_scaling.growth_interval = o.loss_scale_growth_interval;
  c.allreduce_dtype = to_dtype(dpt::capi::checked_enum(
      o.allreduce_dtype, {DPT_PRECISION_FP32, DPT_PRECISION_BF16, DPT_PRECISION_FP16}, "allreduce_dtype"));
  c.activation_dtype = to_dtype(dpt::capi::checked_enum(
      o.activation_dtype, {DPT_PRECISION_FP32, DPT_PRECISION_BF16, DPT_PRECISION_FP16}, "activation_dtype"));
  const dpt_shard_mode shard = dpt::capi::checked_enum(
      o.shard, {DPT_SHARD_NONE, DPT_SHARD_OPTIMIZER, DPT_SHARD_GRADIENTS, DPT_SHARD_PARAMETERS},
      "shard mode");
  c.shard = shard == DPT_SHARD_PARAMETERS  ? dpt::ShardMode::kParameters
            : shard == DPT_SHARD_GRADIENTS ? dpt::ShardMode::kGradients
            : shard == DPT_SHARD_OPTIMIZER ? dpt::ShardMode::kOptimizer
                                           : dpt::ShardMode::kNone;
  c.shard_scope = dpt::capi::checked_enum(o.shard_scope, {DPT_SHARD_SCOPE_PROCESS, DPT_SHARD_SCOPE_WORLD},
                                          "shard scope") == DPT_SHARD_SCOPE_WORLD
                      ? dpt::ShardScope::kWorld
                      : dpt::ShardScope::kProcess;
  c.prefetch_parameters = o.prefetch_parameters != 0;
  c.pipeline_scope =
      dpt::capi::checked_enum(o.pipeline_scope, {DPT_PIPELINE_SCOPE_PROCESS, DPT_PIPELINE_SCOPE_WORLD},
                              "pipeline scope") == DPT_PIPELINE_SCOPE_WORLD
          ? dpt::PipelineScope::kWorld
          : dpt::PipelineScope::kProcess;
  const dpt_pipeline_balance balance = dpt::capi::checked_enum(
      o.pipeline_balance,
      {DPT_PIPELINE_BALANCE_WORK, DPT_PIPELINE_BALANCE_TIME, DPT_PIPELINE_BALANCE_PARAMETERS},
      "pipeline balance");
  c.pipeline_balance = balance == DPT_PIPELINE_BALANCE_TIME         ? dpt::PipelineBalance::kTime
                       : balance == DPT_PIPELINE_BALANCE_PARAMETERS ? dpt::PipelineBalance::kParameters
                                                                    : dpt::PipelineBalance::kWork;
  c.pipeline_balance_batch = o.pipeline_balance_batch;
  c.pipeline_copies = o.pipeline_copies;
  c.pipeline_stages = o.pipeline_stages;
  c.micro_batches = o.micro_batches;
  c.pipeline_schedule = dpt::capi::checked_enum(o.pipeline_schedule, {DPT_PIPELINE_1F1B, DPT_PIPELINE_GPIPE},
                                                "pipeline schedule") == DPT_PIPELINE_GPIPE
                            ? dpt::PipelineSchedule::kGPipe
                            : dpt::PipelineSchedule::kOneFOneB;
  if (o.pipeline_cuts != nullptr && o.pipeline_cuts[0] != '\0') {
    const std::string cuts = o.pipeline_cuts;
    for (size_t at = 0;;) {  // comma-separated node names
      const size_t comma = cuts.find(',', at);
      c.pipeline_cuts.push_back(cuts.substr(at, comma - at));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  return c;
}

// Checks a host batch against the model: its input type, pointers, input_count == n * input size.
void check_batch(const dpt::Trainer &t, const void *inputs, size_t input_count, size_t n,
                 const char *count_name, bool tokens = false) {
  const bool model_tokens = t.spec().input_dtype() == dpt::DType::kI32;
  DPT_REQUIRE(tokens == model_tokens, DPT_ERROR_INVALID_ARGUMENT,
              model_tokens ? "the model reads int32 tokens: use the _tokens call"
                           : "the model reads float32 inputs, not tokens: use the call without _tokens");
  require_not_null(inputs, tokens ? "tokens" : "inputs");
  const char *count = tokens ? "token_count" : "input_count";
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, std::string(count_name) + " must be positive");
  const size_t expected = checked_mul(n, t.spec().input().size(), "sample count * input size");
  DPT_REQUIRE(input_count == expected, DPT_ERROR_SIZE_MISMATCH,
              std::string(count) + " is " + std::to_string(input_count) + ", expected " + std::to_string(n) +
                  " x " + std::to_string(t.spec().input().size()) + " = " + std::to_string(expected));
}

void check_targets(const dpt::Trainer &t, const int32_t *targets, size_t target_count, size_t n,
                   bool tokens) {
  require_not_null(targets, tokens ? "targets" : "labels");
  const size_t expected = checked_mul(n, t.spec().targets_per_sample(), "sample count * targets per sample");
  DPT_REQUIRE(target_count == expected, DPT_ERROR_SIZE_MISMATCH,
              "target_count is " + std::to_string(target_count) + ", expected " + std::to_string(n) + " x " +
                  std::to_string(t.spec().targets_per_sample()) + " = " + std::to_string(expected));
}

// On success, and after DPT_ERROR_NON_FINITE (trainer.h).
void write_step_result(dpt_step_result *result, const dpt::StepStats &s) {
  dpt_step_result r;
  std::memset(&r, 0, sizeof r);
  r.loss = s.loss;
  r.accuracy = s.accuracy;
  r.samples = s.samples;
  r.applied = s.applied;
  r.optimizer_steps = s.optimizer_steps;
  r.learning_rate = s.learning_rate;
  r.grad_norm = s.grad_norm;
  r.compute_seconds = s.compute_seconds;
  r.allreduce_seconds = s.allreduce_seconds;
  r.update_seconds = s.update_seconds;
  r.total_seconds = s.total_seconds;
  r.skipped_nonfinite = s.skipped_nonfinite;
  r.nonfinite_steps = s.nonfinite_steps;
  r.allreduce_exposed_seconds = s.allreduce_exposed_seconds;
  r.targets = s.targets;
  r.skipped_overflow = s.skipped_overflow;
  r.overflow_steps = s.overflow_steps;
  r.loss_scale = s.loss_scale;
  dpt::capi::write_result(result, r);
}

dpt_eval_result to_result(const dpt::EvalStats &e) {
  dpt_eval_result r;
  std::memset(&r, 0, sizeof r);
  r.loss = e.targets ? e.loss_sum / double(e.targets) : 0.0;
  r.accuracy = e.targets ? double(e.correct) / double(e.targets) : 0.0;
  r.samples = e.samples;
  r.targets = e.targets;
  r.seconds = e.seconds;
  return r;
}

dpt_progress to_progress(const dpt::Progress &p) {
  dpt_progress r;
  std::memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.kind = p.epoch_end ? DPT_PROGRESS_EPOCH : DPT_PROGRESS_BATCH;
  r.epoch = p.epoch;
  r.epochs = p.epochs;
  r.batch = p.batch;
  r.batches = p.batches;
  r.samples = p.samples;
  r.loss = p.loss;
  r.accuracy = p.accuracy;
  r.samples_per_second = p.samples_per_second;
  r.epoch_seconds = p.epoch_seconds;
  r.has_test = p.has_test;
  r.test_loss = p.test_loss;
  r.test_accuracy = p.test_accuracy;
  r.learning_rate = p.learning_rate;
  r.loss_scale = p.loss_scale;
  return r;
}

}  // namespace

extern "C" {

void dpt_trainer_options_init(dpt_trainer_options *options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->split = DPT_SPLIT_EVEN;
  options->allreduce = DPT_ALLREDUCE_RING;
  options->accumulation_steps = 1;
  options->init = DPT_INIT_UNIFORM_FAN_IN;
  options->init_std = 0.01f;
  options->nonfinite = DPT_NONFINITE_SKIP;
  options->timeout_seconds = 300.0;
  options->bucket_bytes = size_t(1) << 20;
  options->initial_loss_scale = 65536.0;
  options->loss_scale_growth_interval = 2000;
}

void dpt_optimizer_options_init(dpt_optimizer_options *options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->kind = DPT_OPTIMIZER_SGD;
  options->learning_rate = 0.1f;
  options->beta1 = 0.9f;
  options->beta2 = 0.999f;
  options->epsilon = 1e-8f;
  options->schedule = DPT_SCHEDULE_CONSTANT;
  options->gamma = 0.1f;
}

void dpt_fit_options_init(dpt_fit_options *options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->epochs = 1;
  options->batch_size = 256;
  options->shuffle = 1;
  options->eval_batch_size = 1000;
}

dpt_status dpt_trainer_create(dpt_trainer **out, dpt_context *context, const dpt_model *model,
                              const dpt_trainer_options *options, const dpt_optimizer_options *optimizer) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(context, "context");
    require_not_null(model, "model");
    const auto use = dpt::capi::shared(model);
    dpt_trainer_options topt;
    dpt_trainer_options_init(&topt);
    dpt_optimizer_options oopt;
    dpt_optimizer_options_init(&oopt);
    topt = dpt::capi::read_options(options, topt, "options");
    oopt = dpt::capi::read_options(optimizer, oopt, "optimizer");
    dpt::sweep_retired_trainers();
    dpt::TrainerConfig config = to_config(topt, context->impl->device_count());
    config.optimizer = to_config(oopt);
    auto trainer = std::make_unique<dpt::Trainer>(context->impl, model->impl, std::move(config));
    *out = new dpt_trainer{std::move(trainer), {}};
  });
}

void dpt_trainer_destroy(dpt_trainer *trainer) {
  if (trainer == nullptr) return;
  dpt::retire_trainer(std::move(trainer->impl));  // never waits for a device that did not come back
  delete trainer;
}

namespace {

void step(dpt_trainer *trainer, const void *inputs, size_t input_count, const int32_t *labels,
          size_t label_count, size_t batch_size, dpt_step_result *result, bool tokens) {
  require_not_null(trainer, "trainer");
  const auto use = dpt::capi::exclusive(trainer);
  check_batch(*trainer->impl, inputs, input_count, batch_size, "batch_size", tokens);
  check_targets(*trainer->impl, labels, label_count, batch_size, tokens);
  dpt::capi::check_result(result, "result");
  dpt::StepStats s;
  try {
    trainer->impl->step(inputs, labels, batch_size, s);
  } catch (const dpt::Error &e) {
    // The batch ran and its window was discarded: the caller sees the counters (trainer.h).
    if (e.status() == DPT_ERROR_NON_FINITE) write_step_result(result, s);
    throw;
  }
  write_step_result(result, s);
}

void evaluate(dpt_trainer *trainer, const void *inputs, size_t input_count, const int32_t *labels,
              size_t label_count, size_t sample_count, dpt_eval_result *result, bool tokens) {
  require_not_null(trainer, "trainer");
  const auto use = dpt::capi::exclusive(trainer);
  check_batch(*trainer->impl, inputs, input_count, sample_count, "sample_count", tokens);
  check_targets(*trainer->impl, labels, label_count, sample_count, tokens);
  require_not_null(result, "result");
  dpt::capi::check_result(result, "result");
  dpt::capi::write_result(result, to_result(trainer->impl->evaluate(inputs, labels, sample_count)));
}

void predict(dpt_trainer *trainer, const void *inputs, size_t input_count, size_t sample_count, float *logits,
             size_t logit_count, bool tokens) {
  require_not_null(trainer, "trainer");
  const auto use = dpt::capi::exclusive(trainer);
  check_batch(*trainer->impl, inputs, input_count, sample_count, "sample_count", tokens);
  require_not_null(logits, "logits");
  const size_t expected = checked_mul(sample_count, trainer->impl->spec().output().size(), "logit count");
  DPT_REQUIRE(logit_count == expected, DPT_ERROR_SIZE_MISMATCH,
              "logit_count is " + std::to_string(logit_count) + ", expected " + std::to_string(expected));
  trainer->impl->predict(inputs, sample_count, logits);
}

// The label count the calls without one imply (a classifier's one per sample), so that a NULL pointer
// or an overflow is still reported as such.
size_t implied_labels(const dpt_trainer *trainer, size_t n) {
  if (trainer == nullptr || n == 0) return 0;
  const size_t per = trainer->impl->spec().targets_per_sample();
  return n <= SIZE_MAX / per ? n * per : 0;
}

}  // namespace

dpt_status dpt_trainer_step(dpt_trainer *trainer, const float *inputs, size_t input_count,
                            const int32_t *labels, size_t batch_size, dpt_step_result *result) {
  return guarded(__func__, [&] {
    step(trainer, inputs, input_count, labels, implied_labels(trainer, batch_size), batch_size, result,
         false);
  });
}

dpt_status dpt_trainer_step_tokens(dpt_trainer *trainer, const int32_t *tokens, size_t token_count,
                                   const int32_t *targets, size_t target_count, size_t batch_size,
                                   dpt_step_result *result) {
  return guarded(
      __func__, [&] { step(trainer, tokens, token_count, targets, target_count, batch_size, result, true); });
}

dpt_status dpt_trainer_evaluate(dpt_trainer *trainer, const float *inputs, size_t input_count,
                                const int32_t *labels, size_t sample_count, dpt_eval_result *result) {
  return guarded(__func__, [&] {
    evaluate(trainer, inputs, input_count, labels, implied_labels(trainer, sample_count), sample_count,
             result, false);
  });
}

dpt_status dpt_trainer_evaluate_tokens(dpt_trainer *trainer, const int32_t *tokens, size_t token_count,
                                       const int32_t *targets, size_t target_count, size_t sample_count,
                                       dpt_eval_result *result) {
  return guarded(__func__, [&] {
    evaluate(trainer, tokens, token_count, targets, target_count, sample_count, result, true);
  });
}

dpt_status dpt_trainer_evaluate_dataset(dpt_trainer *trainer, const dpt_dataset *dataset, size_t batch_size,
                                        dpt_eval_result *result) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(dataset, "dataset");
    require_not_null(result, "result");
    dpt::capi::check_result(result, "result");
    const dpt::EvalStats e =
        dpt::evaluate_dataset(*trainer->impl, dataset->impl, batch_size ? batch_size : 1000);
    dpt::capi::write_result(result, to_result(e));
  });
}

dpt_status dpt_trainer_recompute_batch_norm(dpt_trainer *trainer, const dpt_dataset *dataset,
                                            size_t batch_size, size_t sample_count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(dataset, "dataset");
    dpt::recompute_statistics(*trainer->impl, dataset->impl, batch_size ? batch_size : 256, sample_count);
  });
}

dpt_status dpt_trainer_predict(dpt_trainer *trainer, const float *inputs, size_t input_count,
                               size_t sample_count, float *logits, size_t logit_count) {
  return guarded(__func__,
                 [&] { predict(trainer, inputs, input_count, sample_count, logits, logit_count, false); });
}

dpt_status dpt_trainer_predict_tokens(dpt_trainer *trainer, const int32_t *tokens, size_t token_count,
                                      size_t sample_count, float *logits, size_t logit_count) {
  return guarded(__func__,
                 [&] { predict(trainer, tokens, token_count, sample_count, logits, logit_count, true); });
}

dpt_status dpt_trainer_fit(dpt_trainer *trainer, const dpt_dataset *train, const dpt_dataset *test,
                           const dpt_fit_options *options, dpt_fit_result *result) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(train, "train");
    dpt::capi::check_result(result, "result");
    dpt_fit_options defaults;
    dpt_fit_options_init(&defaults);
    const dpt_fit_options o = dpt::capi::read_options(options, defaults, "options");
    dpt::FitConfig config;
    config.epochs = o.epochs;
    config.batch_size = o.batch_size;
    config.shuffle = o.shuffle != 0;
    config.progress_every = o.progress_every;
    config.eval_batch_size = o.eval_batch_size;
    dpt::ProgressFn progress;
    if (o.progress != nullptr) {
      progress = [&o, trainer](const dpt::Progress &p) {
        const dpt_progress report = to_progress(p);
        const dpt::capi::CallGuard::Pause paused(trainer->calls);  // the callback may use the trainer
        return o.progress(&report, o.user_data) != 0;
      };
    }
    const dpt::FitStats s =
        dpt::fit(*trainer->impl, train->impl, test ? &test->impl : nullptr, config, progress);
    dpt_fit_result r;
    std::memset(&r, 0, sizeof r);
    r.epochs_completed = s.epochs_completed;
    r.stopped = s.stopped;
    r.train_loss = s.train_loss;
    r.train_accuracy = s.train_accuracy;
    r.has_test = s.has_test;
    r.test_loss = s.test_loss;
    r.test_accuracy = s.test_accuracy;
    r.train_seconds = s.train_seconds;
    r.samples_per_second = s.samples_per_second;
    r.optimizer_steps = s.optimizer_steps;
    r.nonfinite_steps = s.nonfinite_steps;
    r.overflow_steps = s.overflow_steps;
    r.loss_scale = s.loss_scale;
    dpt::capi::write_result(result, r);
  });
}

}  // extern "C"
