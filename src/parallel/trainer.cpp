// The trainer's construction and its calls: step (split, forward and backward on every device, then the
// update phase of trainer_update.cpp when the window ends), flush, evaluate and predict.
#include "parallel/trainer.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/cuda_gradient_collective.hpp"
#include "parallel/cuda_sharded_gradient_collective.hpp"
#include "parallel/cuda_stage_gradient_collective.hpp"
#include "parallel/cuda_statistics_reducer.hpp"
#include "parallel/device_group.hpp"
#include "parallel/host_gradient_collective.hpp"
#include "parallel/sharded_gradient_collective.hpp"
#include "parallel/stage_gradient_collective.hpp"
#include "parallel/statistics_reducer.hpp"

namespace dpt {

namespace {

// A CUDA device may be listed several times (that many replicas share the GPU); a CPU device holds one
// replica (its worker thread is its compute).
std::vector<Device *> pick_devices(const Context &context, const std::vector<size_t> &indices) {
  std::vector<Device *> devices;
  if (indices.empty()) {
    for (size_t i = 0; i < context.device_count(); ++i) devices.push_back(&context.device(i));
  } else {
    for (size_t i = 0; i < indices.size(); ++i) {
      DPT_REQUIRE(indices[i] < context.device_count(), DPT_ERROR_DEVICE_NOT_FOUND,
                  "device index " + std::to_string(indices[i]) + " does not exist (the context has " +
                      std::to_string(context.device_count()) + " devices)");
      Device &device = context.device(indices[i]);
      for (size_t j = 0; j < i; ++j)
        DPT_REQUIRE(indices[j] != indices[i] || device.kind() == DPT_DEVICE_CUDA, DPT_ERROR_INVALID_ARGUMENT,
                    "device " + std::to_string(indices[i]) + " is listed twice (" + device.name() +
                        "; only a CUDA device can hold several replicas)");
      devices.push_back(&device);
    }
  }
  DPT_REQUIRE(!devices.empty(), DPT_ERROR_DEVICE_NOT_FOUND, "the context has no devices");
  DPT_REQUIRE(devices.size() <= kMaxTrainerDevices, DPT_ERROR_OUT_OF_RANGE,
              "a trainer spans at most 64 devices");
  for (Device *d : devices)
    DPT_REQUIRE(d->kind() == devices[0]->kind(), DPT_ERROR_UNSUPPORTED,
                "a trainer's devices must all be CPU devices or all CUDA devices (" + devices[0]->name() +
                    " and " + d->name() + " were given)");
  return devices;
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Context> context, const ModelSpec &spec, TrainerConfig config)
    : context_(std::move(context)),
      spec_(spec),
      config_(std::move(config)),
      devices_(pick_devices(*context_, config_.devices)),
      group_(std::make_unique<DeviceGroup>(devices_, config_.timeout_seconds)),
      scaler_(config_.loss_scaling) {
  validate(config_.optimizer);
  validate(config_.loss_scaling);
  decayed_ = decayed_segments(spec_, config_.optimizer);
  DPT_REQUIRE(spec_.parameter_count() > 0, DPT_ERROR_INVALID_ARGUMENT,
              "the model has no trainable parameters");
  DPT_REQUIRE(config_.accumulation_steps >= 1, DPT_ERROR_INVALID_ARGUMENT,
              "accumulation_steps must be at least 1");
  DPT_REQUIRE(config_.init_std >= 0.0f && std::isfinite(config_.init_std), DPT_ERROR_INVALID_ARGUMENT,
              "init_std must be finite and non-negative");
  if (config_.split == SplitPolicy::kWeighted) {
    DPT_REQUIRE(config_.weights.size() == devices_.size(), DPT_ERROR_SIZE_MISMATCH,
                "split weights: " + std::to_string(config_.weights.size()) + " given for " +
                    std::to_string(devices_.size()) + " devices");
    for (double w : config_.weights)
      DPT_REQUIRE(std::isfinite(w) && w > 0.0, DPT_ERROR_INVALID_ARGUMENT,
                  "split weights must be positive and finite");
  }
  on_gpus_ = devices_[0]->kind() == DPT_DEVICE_CUDA;
  DPT_REQUIRE(config_.allreduce_dtype == DType::kF32 || config_.allreduce_dtype == DType::kBF16 ||
                  config_.allreduce_dtype == DType::kF16,
              DPT_ERROR_INVALID_ARGUMENT, "the all-reduce dtype must be float32, bfloat16 or float16");
  DPT_REQUIRE(config_.activation_dtype == DType::kF32 || config_.activation_dtype == DType::kBF16 ||
                  config_.activation_dtype == DType::kF16,
              DPT_ERROR_INVALID_ARGUMENT, "the activation dtype must be float32, bfloat16 or float16");
  DPT_REQUIRE(config_.shard == ShardMode::kNone || config_.shard == ShardMode::kOptimizer ||
                  config_.shard == ShardMode::kGradients || config_.shard == ShardMode::kParameters,
              DPT_ERROR_INVALID_ARGUMENT, "unknown shard mode");
  // Sharded across every device of every process (join_world refuses what that scope cannot shard).
  const bool world_scope = config_.world != nullptr && config_.world->size() > 1 &&
                           config_.shard_scope == ShardScope::kWorld && config_.shard != ShardMode::kNone;
  const bool shard_parameters =
      config_.shard == ShardMode::kParameters && (devices_.size() > 1 || world_scope);
  // Across processes: the same trainer everywhere, and every process's device count.
  if (config_.world != nullptr) join_world();
  // A process of one device shards nothing, but beside processes of several it sums its gradient over the
  // processes by the same pieces as they do (process_pieces).
  const bool several_elsewhere =
      std::any_of(process_weights_.begin(), process_weights_.end(), [](double d) { return d > 1; });
  const bool shard_gradients =
      (config_.shard == ShardMode::kGradients || config_.shard == ShardMode::kParameters) &&
      (devices_.size() > 1 || world_scope || several_elsewhere);
  if (config_.pipeline_stages > 1)
    plan_pipeline();  // the stages, and their ranges as shards_
  else if (world_scope)
    shards_ = ShardLayout(spec_.parameter_count(), process_first_.back(), true,
                          process_first_[config_.world->rank()]);
  else
    shards_ = ShardLayout(spec_.parameter_count(), devices_.size(), config_.shard != ShardMode::kNone);
  trace_ = std::make_unique<TraceRecorder>(devices_.size());
  for (size_t rank = 0; rank < devices_.size(); ++rank)
    trace_lanes_.push_back(TraceLane{trace_.get(), TraceRecorder::compute_row(rank)});
  if (shards_.sharded())
    norm_blocks_.assign(devices_.size(), std::vector<double>(norm_blocks(spec_.parameter_count())));
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  const bool staged = !stages_.empty();  // a pipeline: each replica holds its stage's model and ranges
  const size_t width = devices_.size() / std::max<size_t>(1, stages_.size());  // replicas per stage
  for (size_t rank = 0; rank < devices_.size(); ++rank)
    replicas_.push_back(std::make_unique<Replica>(
        *devices_[rank], staged ? stages_[rank / width].spec : spec_, config_.optimizer, config_.kernels,
        config_.matmul_dtype, config_.activation_dtype,
        shard_parameters ? shards_.size(rank)
        : staged         ? stage_floats(rank)
                         : spec_.parameter_count(),
        shard_gradients ? shards_.size(rank)
        : staged        ? stage_floats(rank)
                        : spec_.parameter_count(),
        shards_.size(rank),
        staged ? StagePlacement{stages_[rank / width].first_node, rank >= width || first_stage_ > 0}
               : StagePlacement{}));
  if (staged) start_pipeline(width);
  if (shard_parameters)
    gatherer_ =
        std::make_unique<ParameterGatherer>(replicas_, spec_, config_.bucket_bytes, shards_, *trace_,
                                            WorldPlacement{world_scope ? config_.world : nullptr,
                                                           process_first_, config_.timeout_seconds, on_gpus_},
                                            config_.prefetch_parameters);
  // Initialise once on the host (across processes: process 0's values), then copy to every replica, so
  // that every replica starts bitwise identical.
  std::vector<float> initial(spec_.parameter_count());
  init_parameters(spec_, initial.data(), config_.seed, config_.init, config_.init_std);
  if (config_.world != nullptr) share_initial(initial);
  set_parameters_locked(initial.data());
  std::vector<float> buffers(spec_.buffer_count());
  init_buffers(spec_, buffers.data());
  set_buffers_locked(buffers.data());
  // The gradient all-reduce, chosen once here: GPU replicas reduce during backward (buckets started by
  // replica 0's thread) or from this thread between phases (a CUDA context is used by one thread at a
  // time), CPU devices on their own threads.
  const WireType wire = config_.allreduce_dtype == DType::kBF16  ? WireType::kBF16
                        : config_.allreduce_dtype == DType::kF16 ? WireType::kF16
                                                                 : WireType::kF32;
  // (Stages divided among the processes: their copies sum, on their own World, or nothing is summed
  // across the processes without copies.)
  const World *stage_sums = stages_across_processes() ? stage_world_ : config_.world;
  if (staged && on_gpus_) {
    std::vector<std::vector<GradientBucket>> stage_buckets;  // (this process's stages)
    for (size_t rank = 0; rank < replicas_.size(); rank += width)
      stage_buckets.push_back(plan_buckets(stages_[rank / width].spec, config_.bucket_bytes));
    auto stages = std::make_unique<CudaStageGradientCollective>(*group_, replicas_, width, stage_sums,
                                                                config_.timeout_seconds, wire, stage_bounds_,
                                                                stage_buckets, *trace_, stage_routes_);
    // A stage's batch statistics go over its NCCL communicator too, when its replicas have GPUs of their own.
    for (size_t s = 0; s < stage_statistics_.size(); ++s) {
      CudaCollective *nccl = stages->stage(s);
      if (stage_statistics_[s] != nullptr && nccl != nullptr && !nccl->shares_one_gpu())
        stage_statistics_[s] =
            std::make_unique<CudaStatisticsReducer>(group_->subgroup(s), *nccl, config_.timeout_seconds);
    }
    collective_ = std::move(stages);
  } else if (staged)
    collective_ = std::make_unique<StageGradientCollective>(
        *group_, replicas_, width, config_.allreduce, wire, stage_sums, config_.timeout_seconds, *trace_,
        stage_process_spans(), stage_lengths(), stage_replica_parts(), stage_pieces_);
  else if (shard_gradients && on_gpus_)
    collective_ = std::make_unique<CudaShardedGradientCollective>(
        group_->collective(), replicas_, spec_, config_.bucket_bytes, shards_, wire, config_.world,
        world_scope, config_.timeout_seconds, *trace_);
  else if (shard_gradients)
    collective_ = std::make_unique<ShardedGradientCollective>(
        *group_, replicas_, spec_, config_.bucket_bytes, config_.allreduce, wire, shards_, config_.world,
        process_pieces(), process_spans(), config_.timeout_seconds, *trace_);
  else if (on_gpus_)
    collective_ = std::make_unique<CudaGradientCollective>(
        group_->collective(), replicas_, spec_, config_.bucket_bytes, config_.world, config_.timeout_seconds,
        wire, *trace_, config_.shard == ShardMode::kOptimizer ? &shards_ : nullptr, process_routes_of_gpus());
  else
    collective_ = std::make_unique<HostGradientCollective>(
        *group_, replicas_, spec_, config_.bucket_bytes, config_.allreduce, config_.world,
        config_.timeout_seconds, wire, shards_, process_spans(), process_pieces(), *trace_);
  // Batch statistics summed over the replicas (a pipeline's stages have reducers of their own): on GPUs
  // with a NCCL communicator, over NCCL in device memory; otherwise on the host, by the replicas' worker
  // threads meeting at a barrier (replicas that share a GPU run on workers of their own: Device::submit's
  // lanes), and over MPI across processes.
  if (!staged && replicas_[0]->network.has_statistics() &&
      (devices_.size() > 1 || config_.world != nullptr)) {
    CudaCollective *nccl = cuda_collective();
    if (nccl != nullptr && !nccl->shares_one_gpu())
      statistics_ =
          std::make_unique<CudaStatisticsReducer>(group_->collective(), *nccl, config_.timeout_seconds);
    else
      statistics_ = std::make_unique<HostStatisticsReducer>(group_->collective(), config_.world,
                                                            config_.timeout_seconds);
  }
}

// group_ is destroyed first (it waits for tasks that are still out), then what they touched.
Trainer::~Trainer() = default;

bool Trainer::tasks_outstanding() const {
  return group_->outstanding();
}

CudaCollective *Trainer::cuda_collective() {
  if (auto *cuda = dynamic_cast<CudaGradientCollective *>(collective_.get())) return cuda->collective();
  if (auto *sharded = dynamic_cast<CudaShardedGradientCollective *>(collective_.get()))
    return sharded->collective();
  return nullptr;
}

void Trainer::check_no_task_out() const {
  DPT_REQUIRE(!group_->outstanding(), DPT_ERROR_INVALID_STATE,
              "a device has not yet returned from a call that timed out; its replica cannot be read or "
              "written until it does");
}

void Trainer::check_usable() const {
  DPT_REQUIRE(
      !broken_, DPT_ERROR_INVALID_STATE,
      "a device failed or timed out in an earlier call, so the replicas may differ; destroy this trainer "
      "and create a new one (from the last checkpoint)");
}

void Trainer::step(const void *x, const int32_t *labels, size_t batch, StepStats &s) {
  check_usable();
  DPT_REQUIRE(batch > 0, DPT_ERROR_INVALID_ARGUMENT, "batch_size must be positive");
  check_tokens(x, batch);
  const uint64_t own_targets = check_labels(labels, batch);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  const double t0 = platform::now_seconds();
  if (config_.split == SplitPolicy::kAuto && measured_weights_.empty()) measure_speeds(x, labels, batch);
  if (pipeline_ != nullptr) {
    copy_in_pipeline(x, labels, batch, true);
  } else {
    assign_slices(batch);
    reserve_slices();
    copy_in(x, labels);
  }

  // Loss scaling multiplies the summed loss's gradient by S / 2^ceil(log2(B T)) (B samples of T targets
  // in the window's first micro-batch): PyTorch scales a mean loss, whose per-sample gradients are 1/B of
  // the sum's, so this keeps GradScaler's scales (and its default 2^16) meaning what they mean there, to
  // within a factor of 2, while staying a power of two (exact to apply and to remove). One multiplier per
  // window, known on every device and process before its first backward. A pipeline's micro-batches are
  // the micro-batches here (as for one device accumulating them).
  const size_t micro = pipeline_ != nullptr ? pipeline_->first_micro_batch(batch) : batch;
  if (pending_micro_ == 0 && scaler_.enabled())
    loss_multiplier_ =
        std::ldexp(scaler_.scale(), -int(std::bit_width(uint64_t(micro) * spec_.targets_per_sample() - 1)));
  // The window's last micro-batch reduces its gradients during backward when buckets are on (every
  // micro-batch does with sharded gradients).
  const bool overlap = collective_->overlaps_backward() && (collective_->reduces_every_micro_batch() ||
                                                            pending_micro_ + 1 == config_.accumulation_steps);
  if (overlap)
    collective_->start_micro_batch(pending_micro_ == 0, pending_micro_ + 1 == config_.accumulation_steps);
  run_phase([this, overlap](size_t rank) {
    if (pipeline_ != nullptr) {
      run_stage(rank, overlap);
      if (overlap) collective_->finish_backward(rank);  // (GPUs: each stage reduces as soon as it is done)
      return;
    }
    const double start = platform::now_seconds();
    compute_gradients(rank, overlap);
    replicas_[rank]->compute_seconds = platform::now_seconds() - start;
    // A slice that skipped backward (empty or not finite) hands over every bucket here, so the peers'
    // reduction still completes; the window is then discarded as a whole.
    if (overlap) collective_->finish_backward(rank);
  });
  s = StepStats{};
  const double t1 = platform::now_seconds();
  s.compute_seconds = t1 - t0;
  s.samples = batch;
  // loss sum, correct, replicas with a NaN or an infinity, the counted targets of this process's share
  double totals[4] = {0, 0, 0, double(own_targets)};
  for (auto &r : replicas_)  // device order
    totals[0] += r->stats.loss_sum, totals[1] += double(r->stats.correct), totals[2] += r->nonfinite;
  if (config_.world != nullptr) world_sum(totals, 4);  // every process decides alike
  const uint64_t targets = uint64_t(totals[3]);
  s.targets = targets;
  // A batch whose targets are all ignored has no loss: 0, as its gradient.
  const double counted = targets > 0 ? double(targets) : 1.0;
  s.loss = totals[0] / counted;
  s.correct = uint64_t(totals[1]);
  s.accuracy = totals[1] / counted;

  ++pending_micro_;
  pending_samples_ += batch;
  pending_targets_ += targets;
  const char *discarded = nullptr;  // where a NaN or an infinity was found
  bool updated = false;             // the window ended: the update phase ran (and reduced, unless overlapped)
  for (auto &r : replicas_) r->update_seconds = 0;
  if (totals[2] != 0) {
    discarded = "the inputs or the loss";
  } else if (pending_micro_ == config_.accumulation_steps) {
    updated = true;
    if (!update_replicas(s, overlap)) {
      if (scaler_.enabled())
        skip_overflow(s);  // the loss scaler's business, not an error
      else
        discarded = "the gradients";
    }
  }
  if (discarded != nullptr) discard_window(s);
  s.optimizer_steps = optimizer_steps_;
  s.nonfinite_steps = nonfinite_steps_;
  s.overflow_steps = overflow_steps_;
  s.loss_scale = scaler_.scale();
  s.total_seconds = platform::now_seconds() - t0;
  record_replica_times(s.total_seconds, overlap || updated, overlap);
  if (discarded != nullptr) report_discarded(discarded);
}

// One device's forward and backward over its slice; with post_buckets, each gradient bucket is handed to
// the gradient collective as soon as it is complete.
void Trainer::compute_gradients(size_t rank, bool post_buckets) {
  Replica &r = *replicas_[rank];
  r.stats = {};
  // An empty slice contributes zero gradient; copy_in found NaN or infinity in the inputs. But a model
  // whose pass holds collectives (batch statistics) runs on every replica, so that no peer waits forever;
  // a non-finite window is then discarded as a whole.
  const bool must_run = statistics_ != nullptr;
  if ((r.count == 0 || r.nonfinite) && !must_run) return;
  // Dropout is keyed by the sample's position in the whole accumulation window, so that neither the
  // split nor the division into micro-batches changes the masks.
  const PassInfo info = pass_info(r.count, pending_samples_ + r.begin, optimizer_steps_, true, rank);
  r.stats = r.network.forward(r.params.data(), r.buffers.data(), r.network.labels(), info);
  if (!std::isfinite(r.stats.loss_sum)) {
    r.nonfinite = true;
    if (!must_run) return;
  }
  const BackwardHook hook = post_buckets ? collective_->backward_hook(rank) : BackwardHook{};
  r.network.backward(r.params.data(), r.grads.data(), info, hook);
  // A GPU's backward is still queued: wait, so that compute_seconds counts it and an error of it surfaces
  // in this phase, naming the device, rather than in the all-reduce.
  r.kernels->synchronize();
}

void Trainer::drain_streams() noexcept {
  if (!on_gpus_ || group_->lost()) return;  // a lost group: a task may still be running on a worker
  for (auto &r : replicas_) {
    try {
      r->kernels->synchronize();
    } catch (...) {  // the phase's own error is the one to report
    }
  }
}

bool Trainer::flush() {
  if (pending_micro_ == 0) return false;
  check_usable();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  StepStats unused;
  if (!update_replicas(unused, false)) {
    if (scaler_.enabled()) {
      skip_overflow(unused);
      return true;
    }
    discard_window(unused);
    report_discarded("the gradients");
  }
  return true;
}

EvalStats Trainer::evaluate(const void *x, const int32_t *labels, size_t n) {
  check_usable();
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
  check_tokens(x, n);
  const uint64_t own_targets = check_labels(labels, n);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  const double t0 = platform::now_seconds();
  if (pipeline_ != nullptr) {
    copy_in_pipeline(x, labels, n, false);
    run_phase([this](size_t rank) { infer_stage(rank, true); });
  } else {
    assign_slices(n);
    reserve_slices();
    copy_in(x, labels);
    run_phase([this](size_t rank) {
      Replica &r = *replicas_[rank];
      r.stats = {};
      if (r.count == 0) return;
      r.stats = r.network.forward(r.params.data(), r.buffers.data(), r.network.labels(),
                                  pass_info(r.count, r.begin, 0, false, rank));
    });
  }
  EvalStats e;
  double totals[3] = {0, 0, double(own_targets)};  // loss sum, correct, counted targets of this share
  for (auto &r : replicas_) totals[0] += r->stats.loss_sum, totals[1] += double(r->stats.correct);
  if (config_.world != nullptr) world_sum(totals, 3);
  e.loss_sum = totals[0];
  e.correct = uint64_t(totals[1]);
  e.samples = n;
  e.targets = uint64_t(totals[2]);
  e.seconds = platform::now_seconds() - t0;
  return e;
}

void Trainer::predict(const void *x, size_t n, float *logits) {
  check_usable();
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
  check_tokens(x, n);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  if (pipeline_ != nullptr) {
    copy_in_pipeline(x, nullptr, n, false, false);  // every process computes every logit
    run_phase([this](size_t rank) { infer_stage(rank, false); });
    if (pipeline_->holds_last_stage()) pipeline_->copy_logits(logits);
    // Stages divided among the processes: the last one's logits go to every process.
    if (stages_across_processes()) {
      try {
        config_.world->broadcast(logits, n * spec_.output().size() * sizeof(float), config_.world->size() - 1,
                                 config_.timeout_seconds);
      } catch (const Error &) {
        broken_ = true;
        throw;
      }
    }
    return;
  }
  assign_slices(n, false);  // prediction stays within the process: every process gets all the logits
  reserve_slices();
  copy_in(x, nullptr);
  run_phase([this](size_t rank) {
    Replica &r = *replicas_[rank];
    if (r.count == 0) return;
    r.network.forward(r.params.data(), r.buffers.data(), nullptr,
                      pass_info(r.count, r.begin, 0, false, rank));
    r.kernels->synchronize();
  });
  // The logits are copied out here, on the caller's thread, once every task has returned.
  const size_t classes = spec_.output().size();
  guard_devices([&] {
    for (auto &r : replicas_)
      r->kernels->copy_to_host(logits + r->begin * classes, r->network.logits(), r->count * classes);
    for (auto &r : replicas_) r->kernels->synchronize();
  });
}

}  // namespace dpt
