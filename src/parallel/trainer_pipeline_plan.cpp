// A trainer whose replicas are the stages of a pipeline (TrainerConfig::pipeline_stages): the plan, where
// the model is cut (named, or balanced by pipeline_balance's costs) and what each stage, and each process
// when the stages are divided among the processes, owns of the parameters.
#include <algorithm>
#include <iterator>
#include <new>
#include <string>

#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

namespace {

constexpr size_t kMaxMicroBatches = 1024;  // GPipe keeps an activation context for each

// A stage's range cut among `sharing` replicas that shard its optimizer state, at whole norm blocks of the
// whole vector (so that the parts' block sums add up to the unsharded norm's, as ZeRO's ranges do):
// sharing + 1 offsets from the stage's first parameter.
std::vector<size_t> stage_parts(const PipelineStage &stage, size_t sharing) {
  const size_t first = (stage.param_begin + kNormBlock - 1) / kNormBlock, last = stage.param_end / kNormBlock;
  const size_t whole = last > first ? last - first : 0;
  std::vector<size_t> parts;
  for (size_t r = 0; r <= sharing; ++r) {
    const size_t at = r == 0         ? stage.param_begin
                      : r == sharing ? stage.param_end
                      : whole == 0   ? stage.param_end
                                     : (first + r * whole / sharing) * kNormBlock;
    parts.push_back(at - stage.param_begin);
  }
  return parts;
}

// The process scope: a stage's pieces between the part cuts of every process's width (replicas of the
// stage; one shards nothing), each owned by this process's replica whose part (local_parts; empty: one
// replica) holds it.
std::vector<ShardPiece> stage_pieces(const PipelineStage &stage, const std::vector<size_t> &widths,
                                     const std::vector<size_t> &local_parts) {
  std::vector<size_t> cuts{0, stage.param_end - stage.param_begin};
  for (size_t w : widths)
    if (w > 1) {
      const std::vector<size_t> parts = stage_parts(stage, w);
      cuts.insert(cuts.end(), parts.begin(), parts.end());
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<ShardPiece> pieces;
  size_t owner = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    while (!local_parts.empty() && local_parts[owner + 1] <= cuts[i]) ++owner;
    pieces.push_back({cuts[i], cuts[i + 1], owner});
  }
  return pieces;
}

// The same on GPUs, whose stage communicator spans the processes (theirs in `widths`' order, this one
// `process`): each piece reduced to its owner in one process and sent on to the others (process_routes).
ProcessRoutes stage_routes(const PipelineStage &stage, const std::vector<size_t> &widths, size_t process) {
  std::vector<std::vector<size_t>> cuts;
  for (size_t w : widths)
    cuts.push_back(w > 1 ? stage_parts(stage, w)
                         : std::vector<size_t>{0, stage.param_end - stage.param_begin});
  return process_routes(cuts, process);
}

}  // namespace

void Trainer::plan_pipeline() {
  const size_t stages = config_.pipeline_stages;
  const std::string why = "pipeline model parallel (" + std::to_string(stages) + " stages) ";
  // The stages divided among the processes (the world scope).
  const bool across = config_.world != nullptr && config_.world->size() > 1 &&
                      config_.pipeline_scope == PipelineScope::kWorld;
  const size_t processes = across ? config_.world->size() : 1;
  // The P processes hold C copies of the pipeline (Megatron's data-parallel size), each process S C / P
  // stages; by default C = P / S when P > S (one stage per process), else 1 (S / P stages per process).
  DPT_REQUIRE(config_.pipeline_copies == 0 || config_.pipeline_scope == PipelineScope::kWorld,
              DPT_ERROR_INVALID_ARGUMENT,
              why +
                  "is given pipeline copies in the process scope, where every process is a copy (copies "
                  "apply to --pipeline-scope world)");
  const size_t copies = !across                        ? 1
                        : config_.pipeline_copies != 0 ? config_.pipeline_copies
                        : processes > stages           ? processes / stages
                                                       : 1;
  DPT_REQUIRE(
      processes % copies == 0 && (stages * copies) % processes == 0, DPT_ERROR_UNSUPPORTED,
      why + "divides its stages among the " + std::to_string(processes) +
          " processes (--pipeline-scope world) in " + std::to_string(copies) +
          (copies == 1 ? " copy" : " copies") +
          ": the process count must be a multiple of the copies, and the stage count of the "
          "processes per copy" +
          (processes % copies == 0 ? " (" + std::to_string(processes / copies) + ")" : std::string()));
  const size_t local_stages = stages * copies / processes;
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
    place_stages_across_processes(std::move(stages_), local_stages);
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
    stage_bounds_.clear();
    for (size_t s = 0; s < stages; ++s) {
      std::vector<size_t> within = stage_parts(stages_[s], sharing);
      for (size_t r = 0; r < sharing; ++r) bounds.push_back(stages_[s].param_begin + within[r]);
      stage_bounds_.push_back(std::move(within));
      for (size_t r = 0; r < width; ++r) slots.push_back(s * sharing + offset + r);
    }
  } else {
    for (size_t s = 0; s < stages; ++s) {
      bounds.push_back(stages_[s].param_begin);
      for (size_t r = 0; r < width; ++r) slots.push_back(s);
    }
  }
  // The process scope across processes, a stage sharded in some process: its sums over the processes go
  // by the pieces of every process's parts, the same MPI calls in processes of different widths.
  std::vector<size_t> widths;
  for (double devices : process_weights_) widths.push_back(size_t(devices) / stages);
  if (config_.world != nullptr && config_.world->size() > 1 && !world_scope &&
      config_.shard == ShardMode::kOptimizer && *std::max_element(widths.begin(), widths.end()) > 1)
    for (size_t s = 0; s < stages; ++s) {
      stage_pieces_.push_back(
          stage_pieces(stages_[s], widths, stage_bounds_.empty() ? std::vector<size_t>{} : stage_bounds_[s]));
      stage_routes_.push_back(stage_routes(stages_[s], widths, config_.world->rank()));
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

// Process p holds the model's stages [b L, (b + 1) L) of block b = p / C, L = S C / P (plan_pipeline), each
// on devices / L replicas; the C processes p with the same p / C hold copies of a block (Megatron's order:
// the copies of a stage are neighbours in rank), data parallel among them. The layout of the parameters
// (shards_) spans every stage, so the norm's block sums (from each block's first copy) and a checkpoint's
// ranges come from every block, as when the optimizer is sharded across the world. (plan_pipeline refused
// sharded gradients and parameters: a stage's are its own already.)
void Trainer::place_stages_across_processes(std::vector<PipelineStage> all, size_t local) {
  const World &world = *config_.world;
  const size_t processes = world.size();
  const size_t copies = processes * local / all.size(), block = world.rank() / copies;
  const std::string why = "a pipeline whose stages are divided among the processes (--pipeline-scope world) ";
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
  remote_ties_ = RemoteTies(&world, std::move(ends), devices_.size(), config_.timeout_seconds, on_gpus_);
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
  // The layout spans every stage, each cut among the replicas that shard its optimizer state (ZeRO-1): its
  // replicas in the process (the process shard scope: with copies each part is then summed over them), or
  // every copy's replicas, copy c's parts the c-th width of them (the world scope: the copies
  // reduce-scatter the stage's sum, as processes that each run every stage do).
  const size_t width = devices_.size() / local;
  state_over_copies_ =
      config_.shard == ShardMode::kOptimizer && config_.shard_scope == ShardScope::kWorld && copies > 1;
  const size_t sharing = config_.shard != ShardMode::kOptimizer ? 1
                         : state_over_copies_                   ? width * copies
                                                                : width;
  const size_t offset = state_over_copies_ ? data_rank_ * width : 0;  // this copy's first part
  std::vector<size_t> bounds, slots;
  process_state_spans_.assign(state_over_copies_ ? processes : 0, {});
  for (size_t t = 0; t < all.size(); ++t) {
    std::vector<size_t> parts = stage_parts(all[t], sharing);
    for (size_t r = 0; r < sharing; ++r) bounds.push_back(all[t].param_begin + parts[r]);
    for (size_t p = 0; p < process_state_spans_.size(); ++p)  // copy p % copies of block p / copies
      if (t / local == p / copies)
        process_state_spans_[p].emplace_back(all[t].param_begin + parts[p % copies * width],
                                             all[t].param_begin + parts[(p % copies + 1) * width]);
    if (sharing > 1 && t / local == block) stage_bounds_.push_back(std::move(parts));
  }
  bounds.push_back(spec_.parameter_count());
  for (size_t s = 0; s < local; ++s)
    for (size_t r = 0; r < width; ++r)
      slots.push_back((first_stage_ + s) * sharing + (sharing > 1 ? offset + r : 0));
  stages_.assign(std::make_move_iterator(all.begin() + first_stage_),
                 std::make_move_iterator(all.begin() + first_stage_ + local));
  // The process scope with copies (of equal widths): each part summed over the copies in place.
  if (copies > 1 && !state_over_copies_ && sharing > 1)
    for (size_t s = 0; s < local; ++s) {
      stage_pieces_.push_back(stage_pieces(stages_[s], {width}, stage_bounds_[s]));
      stage_routes_.push_back(
          stage_routes(stages_[s], std::vector<size_t>(copies, width), stage_world_->rank()));
    }
  // Every device of the job that owns a range: the copies' too when they shard the state among them (so
  // that world_shards() holds, and the norm and the checkpoint take every copy's parts, also when every
  // process holds every stage).
  shards_ = ShardLayout(spec_.parameter_count(), std::move(bounds), std::move(slots),
                        all.size() * width * (state_over_copies_ ? copies : 1));
}

}  // namespace dpt
