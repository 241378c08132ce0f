// A trainer whose replicas are the stages of a pipeline (TrainerConfig::pipeline_stages): the plan (where
// the model is cut, what each stage owns) and each stage's part of a pass (parallel/pipeline.hpp).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <new>
#include <string>

#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "parallel/statistics_reducer.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

namespace {

constexpr size_t kMaxMicroBatches = 1024;  // GPipe keeps an activation context for each

}  // namespace

void Trainer::plan_pipeline() {
  const size_t stages = config_.pipeline_stages;
  const std::string why = "pipeline model parallel (" + std::to_string(stages) + " stages) ";
  // The stages divided among the processes (the world scope).
  const bool across = config_.world != nullptr && config_.world->size() > 1 &&
                      config_.pipeline_scope == PipelineScope::kWorld;
  const size_t processes = across ? config_.world->size() : 1;
  // S / P stages in each process, or (P > S) one stage in each of P / S processes (data parallel among
  // them).
  DPT_REQUIRE(stages % processes == 0 || processes % stages == 0, DPT_ERROR_UNSUPPORTED,
              why + "divides its stages among the " + std::to_string(processes) +
                  " processes (--pipeline-scope world): the stage count must be a multiple of the process "
                  "count, or the process count a multiple of the stage count");
  const size_t local_stages = stages % processes == 0 ? stages / processes : 1;
  DPT_REQUIRE(devices_.size() % local_stages == 0, DPT_ERROR_UNSUPPORTED,
              why + "needs a whole number of devices per stage (" + std::to_string(devices_.size()) +
                  " devices given for " + std::to_string(local_stages) +
                  " stages: stages x data-parallel replicas; several stages on one device are not "
                  "supported)");
  // The optimizer state may be sharded among each stage's replicas (ZeRO stage 1, as DeepSpeed's pipeline
  // engine), within each process or across every process's replicas of the stage (the world scope);
  // gradients and parameters are the stage's own already, and stay whole among its replicas.
  DPT_REQUIRE(config_.shard == ShardMode::kNone || config_.shard == ShardMode::kOptimizer,
              DPT_ERROR_UNSUPPORTED,
              why +
                  "shards only the optimizer state among each stage's replicas (--shard optimizer); the "
                  "gradients and parameters are each stage's own part already");
  DPT_REQUIRE(config_.split == SplitPolicy::kEven, DPT_ERROR_INVALID_ARGUMENT,
              why + "gives every stage the whole batch: the weighted and auto splits do not apply");
  DPT_REQUIRE(config_.pipeline_schedule == PipelineSchedule::kOneFOneB ||
                  config_.pipeline_schedule == PipelineSchedule::kGPipe,
              DPT_ERROR_INVALID_ARGUMENT, "unknown pipeline schedule");
  DPT_REQUIRE(config_.micro_batches <= kMaxMicroBatches, DPT_ERROR_OUT_OF_RANGE,
              why + "takes at most " + std::to_string(kMaxMicroBatches) + " micro-batches per step (" +
                  std::to_string(config_.micro_batches) + " asked)");
  DPT_REQUIRE(config_.pipeline_balance == PipelineBalance::kWork ||
                  config_.pipeline_balance == PipelineBalance::kTime ||
                  config_.pipeline_balance == PipelineBalance::kParameters,
              DPT_ERROR_INVALID_ARGUMENT, "unknown pipeline balance");
  if (config_.pipeline_cuts.empty()) {
    cuts_ = automatic_cuts(stages);
  } else {
    DPT_REQUIRE(config_.pipeline_cuts.size() == stages - 1, DPT_ERROR_INVALID_ARGUMENT,
                why + "needs " + std::to_string(stages - 1) + " cut points (node names), " +
                    std::to_string(config_.pipeline_cuts.size()) + " given");
    DPT_REQUIRE(config_.pipeline_balance == PipelineBalance::kWork, DPT_ERROR_INVALID_ARGUMENT,
                why + "is given its cut points and a balance to choose them by: one or the other");
    cuts_ = named_cuts(spec_, config_.pipeline_cuts);
  }
  stages_ = cut_model(spec_, cuts_);
  if (config_.micro_batches == 0) config_.micro_batches = 4 * stages;
  if (across) {
    place_stages_across_processes(std::move(stages_));
    return;
  }
  const size_t width = devices_.size() / stages;
  // The replicas of a stage that share its optimizer state: this process's, or (the world scope) every
  // process's, in process order, this process's from `offset` on.
  const bool world_scope =
      config_.world != nullptr && config_.world->size() > 1 && config_.shard_scope == ShardScope::kWorld;
  const size_t sharing = world_scope ? process_first_.back() / stages : width;
  const size_t offset = world_scope ? process_first_[config_.world->rank()] / stages : 0;
  std::vector<size_t> bounds, slots;
  if (config_.shard == ShardMode::kOptimizer && sharing > 1) {
    // Each stage's range cut among the sharing replicas, at whole norm blocks of the whole vector (so that
    // the ranges' block sums add up to the unsharded norm's, as ZeRO's ranges do).
    stage_bounds_.clear();
    for (size_t s = 0; s < stages; ++s) {
      const PipelineStage &stage = stages_[s];
      const size_t first = (stage.param_begin + kNormBlock - 1) / kNormBlock,
                   last = stage.param_end / kNormBlock;
      const size_t whole = last > first ? last - first : 0;
      std::vector<size_t> within;
      for (size_t r = 0; r <= sharing; ++r) {
        const size_t at = r == 0         ? stage.param_begin
                          : r == sharing ? stage.param_end
                          : whole == 0   ? stage.param_end
                                         : (first + r * whole / sharing) * kNormBlock;
        if (r < sharing) bounds.push_back(at);
        within.push_back(at - stage.param_begin);
      }
      stage_bounds_.push_back(std::move(within));
      for (size_t r = 0; r < width; ++r) slots.push_back(s * sharing + offset + r);
    }
  } else {
    for (size_t s = 0; s < stages; ++s) {
      bounds.push_back(stages_[s].param_begin);
      for (size_t r = 0; r < width; ++r) slots.push_back(s);
    }
  }
  const size_t ranks = stage_bounds_.empty() ? devices_.size() : stages * sharing;
  bounds.push_back(spec_.parameter_count());
  shards_ = ShardLayout(spec_.parameter_count(), std::move(bounds), std::move(slots), ranks);
}

// The cuts that divide pipeline_balance's costs most evenly. Measured times differ from machine to machine
// and from run to run: across processes, process 0's cuts are every process's (its failure, every
// process's error).
std::vector<size_t> Trainer::automatic_cuts(size_t stages) const {
  if (config_.pipeline_balance == PipelineBalance::kWork)
    return balanced_cuts(spec_, stages, estimated_work(spec_));
  if (config_.pipeline_balance == PipelineBalance::kParameters)
    return balanced_cuts(spec_, stages, parameter_floats(spec_));
  const World *world = config_.world != nullptr && config_.world->size() > 1 ? config_.world : nullptr;
  // A micro-batch of the batch, on one of the stage's replicas in the job (every process's devices / S).
  size_t samples = kBalanceProbeSamples;
  if (config_.pipeline_balance_batch > 0) {
    const size_t micro = config_.micro_batches > 0 ? config_.micro_batches : 4 * stages;
    const size_t devices = world != nullptr ? process_first_.back() : devices_.size();
    const size_t share = micro * std::max<size_t>(1, devices / stages);
    samples = std::max<size_t>(1, (config_.pipeline_balance_batch + share - 1) / share);
  }
  const auto measure = [&] {
    std::lock_guard<std::mutex> lock(context_->work_mutex());  // the device's work, as a step's
    std::vector<double> times;
    try {
      times = measured_times(spec_, *devices_[0], config_.kernels, config_.matmul_dtype,
                             config_.activation_dtype, samples, config_.seed);
    } catch (const Error &e) {
      throw Error(e.status(), "the pipeline's balance by measured time trains the whole model on " +
                                  devices_[0]->name() + " first, which failed: " + e.what());
    }
    return balanced_cuts(spec_, stages, times);
  };
  if (world == nullptr) return measure();
  // Process 0's outcome: its status (0: measured), then the cuts.
  std::vector<uint64_t> outcome(stages, 0);
  dpt_status failed = DPT_OK;
  std::string message;
  if (world->rank() == 0) {
    try {
      const std::vector<size_t> cuts = measure();
      std::copy(cuts.begin(), cuts.end(), outcome.begin() + 1);
    } catch (const Error &e) {
      failed = e.status();
      message = e.what();
    } catch (const std::bad_alloc &) {
      failed = DPT_ERROR_OUT_OF_MEMORY;
      message = "out of host memory while measuring the pipeline's balance";
    }
    outcome[0] = uint64_t(failed);
  }
  world->broadcast(outcome.data(), outcome.size() * sizeof(uint64_t), 0, config_.timeout_seconds);
  if (failed != DPT_OK) throw_error(failed, message);
  DPT_REQUIRE(outcome[0] == 0, dpt_status(outcome[0]),
              "process 0 could not measure the pipeline's balance (its error says why)");
  return std::vector<size_t>(outcome.begin() + 1, outcome.end());
}

std::vector<std::string> Trainer::pipeline_cut_names() const {
  std::vector<std::string> names;
  for (size_t node : cuts_) names.push_back(spec_.nodes()[node].name);
  return names;
}

// Process p holds the model's stages [b L, (b + 1) L) of block b = p / C, L = S / P (or 1 when P > S), each
// on devices / L replicas; C = P L / S processes hold copies of each block (Megatron's order: the copies of a
// stage are neighbours in rank), data parallel among them. The layout of the parameters (shards_) spans
// every stage, so the norm's block sums (from each block's first copy) and a checkpoint's ranges come from
// every block, as when the optimizer is sharded across the world.
void Trainer::place_stages_across_processes(std::vector<PipelineStage> all) {
  const World &world = *config_.world;
  const size_t processes = world.size();
  const size_t local = all.size() % processes == 0 ? all.size() / processes : 1;
  const size_t copies = processes * local / all.size(), block = world.rank() / copies;
  const std::string why = "a pipeline whose stages are divided among the processes (--pipeline-scope world) ";
  DPT_REQUIRE(!on_gpus_, DPT_ERROR_UNSUPPORTED,
              why +
                  "runs on CPU devices in this version (its activations and gradients go between the "
                  "processes as MPI messages from host memory; " +
                  devices_[0]->name() + " was given)");
  DPT_REQUIRE(config_.shard == ShardMode::kNone, DPT_ERROR_UNSUPPORTED,
              why +
                  "shards nothing: each process holds its own stages' parameters, gradients and optimizer "
                  "state already");
  for (double devices : process_weights_)
    DPT_REQUIRE(size_t(devices) == devices_.size(), DPT_ERROR_UNSUPPORTED,
                why +
                    "needs the same device count in every process (replica r of a stage hands over to "
                    "replica r of the next); this process has " +
                    std::to_string(devices_.size()) + ", another " + std::to_string(size_t(devices)));
  // A tie between two processes' stages: copy c of the mirror's block and copy c of the source's exchange
  // the gradient and the values (RemoteTies); a tie within this process's stages stays copies.
  std::vector<RemoteTies::End> ends;
  for (size_t t = 0; t < all.size(); ++t) {
    if (all[t].mirror_floats == 0) continue;
    size_t source = 0;
    while (all[source].param_end <= all[t].mirror_source) ++source;
    const size_t mirror_block = t / local, source_block = source / local, copy = world.rank() % copies;
    if (mirror_block == block && source_block != block)
      ends.push_back({t - block * local, true, source_block * copies + copy,
                      all[t].param_end - all[t].param_begin, all[t].mirror_floats, t});
    else if (source_block == block && mirror_block != block)
      ends.push_back({source - block * local, false, mirror_block * copies + copy,
                      all[t].mirror_source - all[source].param_begin, all[t].mirror_floats, t});
  }
  remote_ties_ = RemoteTies(&world, std::move(ends), devices_.size(), config_.timeout_seconds);
  for (size_t p = 0; p < processes; ++p) {  // a block's first copy gives its stages' ranges
    const PipelineStage &first = all[p / copies * local], &last = all[p / copies * local + local - 1];
    process_stages_.push_back(p % copies != 0 ? ProcessStages{}
                                              : ProcessStages{first.param_begin, last.param_end,
                                                              first.buffer_begin, last.buffer_end});
  }
  first_stage_ = block * local;
  stage_copies_ = copies;
  data_rank_ = world.rank() % copies;
  if (copies > 1) {                       // collective: every process, at the same point
    stage_world_ = &world.split(copies);  // this block's copies
    // Each stage's batch statistics are summed over its copies on a channel of its own (start_pipeline),
    // made here, where every process comes, whether or not its stages have statistics.
    stage_world_->reserve_pooled_channels(local);
  }
  const size_t width = devices_.size() / local;
  std::vector<size_t> bounds, slots;
  for (const PipelineStage &stage : all) bounds.push_back(stage.param_begin);
  bounds.push_back(spec_.parameter_count());
  for (size_t s = 0; s < local; ++s)
    for (size_t r = 0; r < width; ++r) slots.push_back(first_stage_ + s);
  stages_.assign(std::make_move_iterator(all.begin() + first_stage_),
                 std::make_move_iterator(all.begin() + first_stage_ + local));
  shards_ = ShardLayout(spec_.parameter_count(), std::move(bounds), std::move(slots), all.size() * width);
}

// Every process's stages' range (of the parameters or the running statistics) goes from it to every process:
// one broadcast per process, rooted there, in place.
void Trainer::share_stages_across_world(float *vector, bool buffers) const {
  const World &world = *config_.world;
  try {
    for (size_t p = 0; p < world.size(); ++p) {
      const ProcessStages &stages = process_stages_[p];
      const size_t begin = buffers ? stages.buffer_begin : stages.param_begin,
                   end = buffers ? stages.buffer_end : stages.param_end;
      if (end > begin)
        world.broadcast(vector + begin, (end - begin) * sizeof(float), p, config_.timeout_seconds);
    }
  } catch (const Error &) {
    broken_ = true;  // the processes are out of step
    throw;
  }
}

// Update phase, device thread rank, a sharded optimizer: the stage's replicas in this process all-gather
// the ranges they updated; in the world scope device 0's thread then copies every process's part of every
// stage to every process (one broadcast per process and stage, rooted at the owner, into the stage's first
// replica: one thread calls MPI), and the stage's other replicas copy the other processes' parts from it.
void Trainer::gather_stage(size_t rank) {
  const size_t width = pipeline_->replicas_per_stage(), s = rank / width;
  ThreadCollective &stage = group_->subgroup(s);
  float *params = replicas_[rank]->params.data();
  if (!world_shards()) {
    stage.all_gather(rank % width, params, stage_bounds_[s].data());
    return;
  }
  const World &world = *config_.world;
  stage.all_gather(rank % width, params, stage_bounds_[s].data() + stage_replica_offset(world.rank()));
  ThreadCollective &local = group_->collective();
  local.barrier(rank);  // every stage's first replica holds this process's parts
  if (rank == 0)
    for (size_t t = 0; t < stages_.size(); ++t)
      for (size_t p = 0; p < world.size(); ++p) {
        const auto [begin, end] = stage_span(t, p);
        if (end > begin)
          world.broadcast(replicas_[t * width]->params.data() + begin, (end - begin) * sizeof(float), p,
                          config_.timeout_seconds);
      }
  local.barrier(rank);
  for (size_t p = 0; p < world.size(); ++p) {
    const auto [begin, end] = stage_span(s, p);
    if (p != world.rank() && end > begin) stage.broadcast(rank % width, params + begin, end - begin, 0);
  }
}

size_t Trainer::stage_replica_offset(size_t p) const {
  return process_first_[p] / stages_.size();
}

std::pair<size_t, size_t> Trainer::stage_span(size_t s, size_t p) const {
  return {stage_bounds_[s][stage_replica_offset(p)], stage_bounds_[s][stage_replica_offset(p + 1)]};
}

std::vector<std::vector<size_t>> Trainer::stage_process_spans() const {
  std::vector<std::vector<size_t>> spans;
  if (!world_shards() || stage_bounds_.empty()) return spans;
  for (size_t s = 0; s < stages_.size(); ++s) {
    spans.emplace_back();
    for (size_t p = 0; p <= config_.world->size(); ++p)
      spans.back().push_back(stage_bounds_[s][stage_replica_offset(p)]);
  }
  return spans;
}

// The optimizer sharded among the stage's replicas of this process alone (no other process shares the
// stages' sums): each stage's replicas' parts, for their reduce-scatter.
std::vector<std::vector<size_t>> Trainer::stage_replica_parts() const {
  const bool alone = config_.world == nullptr || config_.world->size() == 1;
  return alone ? stage_bounds_ : std::vector<std::vector<size_t>>{};
}

std::vector<size_t> Trainer::stage_lengths() const {
  std::vector<size_t> lengths;
  for (const PipelineStage &s : stages_) lengths.push_back(s.param_end - s.param_begin);
  return lengths;
}

// After the replicas (the stages' first activation contexts) exist: the pipeline, and with several
// replicas per stage the stages' collectives (batch statistics, gradients) among them.
void Trainer::start_pipeline(size_t width) {
  PipelineNeighbours neighbours;
  if (stages_across_processes())
    neighbours = {config_.world, first_stage_, config_.pipeline_stages, config_.timeout_seconds,
                  stage_copies_};
  pipeline_ = std::make_unique<Pipeline>(stages_, replicas_, width, config_.micro_batches,
                                         config_.pipeline_schedule, config_.matmul_dtype,
                                         config_.activation_dtype, group_->aborted(), neighbours);
  size_t largest_mirror = 0;
  mirrored_ = !remote_ties_.empty();
  for (const PipelineStage &s : stages_) {
    mirrored_ = mirrored_ || s.mirror_floats > 0;
    largest_mirror = std::max(largest_mirror, s.mirror_floats);
  }
  // GPUs add a mirror's gradient from a copy in their own memory (add_mirror_gradients).
  if (on_gpus_ && mirrored_)
    for (size_t rank = 0; rank < replicas_.size(); ++rank)
      mirror_scratch_.emplace_back(replicas_[rank]->kernels->memory(), largest_mirror);
  const bool statistics = std::any_of(replicas_.begin(), replicas_.end(),
                                      [](const auto &r) { return r->network.has_statistics(); });
  // Across processes a stage's batch statistics are summed over the processes too, by the stage's device
  // threads, which run the stages' micro-batches at their own pace: each stage sums on an MPI channel of
  // its own (its sums come in the same order on every process, the stages' orders differ). Stages divided
  // among the processes: the processes holding copies of this process's stages.
  const World *world = stages_across_processes() ? stage_world_ : config_.world;
  if (world != nullptr && statistics) world->reserve_pooled_channels(stages_.size());
  if (width == 1 && (world == nullptr || (!statistics && stage_bounds_.empty()))) return;
  group_->enable_subgroups(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s)
    if (replicas_[s * width]->network.has_statistics())
      stage_statistics_.push_back(std::make_unique<HostStatisticsReducer>(
          group_->subgroup(s), world != nullptr ? &world->pooled_channel(s) : nullptr,
          config_.timeout_seconds));
    else
      stage_statistics_.push_back(nullptr);
}

size_t Trainer::owner_of(size_t offset, size_t rank) const {
  const size_t width = pipeline_->replicas_per_stage();
  size_t s = 0;
  while (stages_[s].param_end <= offset) ++s;
  return s * width + rank % width;
}

// Every stage's gradient is complete (its replicas all-reduced it) once every device has arrived; the
// source's replica r then adds replica r's mirror gradient of each stage tied to it, elementwise, before any
// device computes the norm (whose all-reduce keeps the mirrors' stages from zeroing them before).
void Trainer::add_mirror_gradients(size_t rank) {
  group_->collective().barrier(rank);
  const size_t width = pipeline_->replicas_per_stage();
  for (size_t t = 0; t < stages_.size(); ++t) {
    const PipelineStage &tied = stages_[t];
    if (tied.mirror_floats == 0 || !source_here(tied) || owner_of(tied.mirror_source, rank) != rank) continue;
    const Replica &mirror = *replicas_[t * width + rank % width];
    Replica &r = *replicas_[rank];
    const float *from = mirror.grads.data() + (tied.param_end - tied.param_begin);
    float *to = r.grads.data() + (tied.mirror_source - stage_begin(rank));
    if (on_gpus_) {  // a GPU adds what is in its own memory: the mirror's gradient comes by a peer copy
      r.kernels->copy_device(mirror_scratch_[rank].data(), from, tied.mirror_floats);
      from = mirror_scratch_[rank].data();
    }
    r.kernels->accumulate(to, from, tied.mirror_floats);
    // Done before the mirror's stage zeroes its gradient after the update (a GPU's copy is queued).
    r.kernels->synchronize();
  }
  // The ties with an end in another process (after this process's: their mirrors are later stages).
  Replica &r = *replicas_[rank];
  if (!remote_ties_.empty())
    remote_ties_.exchange_gradients(rank, rank / width, rank % width, *r.kernels, r.grads.data());
}

// After every device's update: each mirror copies the source's new values.
void Trainer::refresh_mirrors(size_t rank) {
  replicas_[rank]->kernels->synchronize();  // a GPU's update is queued: done before the mirrors read it
  group_->collective().barrier(rank);
  copy_mirror(rank);
  if (!remote_ties_.empty()) {
    const size_t width = pipeline_->replicas_per_stage();
    remote_ties_.exchange_values(rank / width, rank % width, replicas_[rank]->params.data());
  }
}

void Trainer::copy_mirror(size_t rank) {
  const PipelineStage &stage = pipeline_->stage_of(rank);
  if (stage.mirror_floats == 0 || !source_here(stage)) return;
  const size_t source = owner_of(stage.mirror_source, rank);
  const float *from = replicas_[source]->params.data() + (stage.mirror_source - stage_begin(source));
  // From the source's device (a GPU peer copy), into this one's.
  replicas_[rank]->kernels->copy_device(
      replicas_[rank]->params.data() + (stage.param_end - stage.param_begin), from, stage.mirror_floats);
  replicas_[rank]->kernels->synchronize();
}

void Trainer::run_stage(size_t rank) {
  Replica &r = *replicas_[rank];
  PassInfo info = pass_info(0, pending_samples_, optimizer_steps_, true, rank);
  // Batch statistics are summed among the stage's replicas (one replica: its micro-batch is the batch).
  const size_t width = pipeline_->replicas_per_stage();
  info.rank = rank % width;
  info.statistics = stage_statistics_.empty() ? nullptr : stage_statistics_[rank / width].get();
  r.stats = pipeline_->train(rank, info, r.params.data(), r.grads.data(), r.buffers.data());
  r.compute_seconds = pipeline_->busy_seconds(rank);
  // The rest of the stages run on: their peers wait for every micro-batch. The window is discarded whole.
  if (!std::isfinite(r.stats.loss_sum)) r.nonfinite = true;
}

void Trainer::infer_stage(size_t rank, bool with_labels) {
  Replica &r = *replicas_[rank];
  r.stats =
      pipeline_->infer(rank, pass_info(0, 0, 0, false, rank), r.params.data(), r.buffers.data(), with_labels);
}

}  // namespace dpt
