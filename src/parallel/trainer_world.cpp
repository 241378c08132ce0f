// A trainer across the processes of an MPI world: the check that every process built the same trainer, the
// split across processes, the common start, and sums over the processes from the trainer's thread.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "parallel/process_agreement.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// Checks that every process built the same trainer (what shapes the collectives and keeps the replicas
// identical) and learns every process's device count (the weights of the split across processes, and the
// layout of a shard across every process's devices).
void Trainer::join_world() {
  const World &world = *config_.world;
  const OptimizerConfig &o = config_.optimizer;
  ProcessAgreement agreed("the trainer");
  agreed.add("model", spec_.describe());
  agreed.add("parameter count", uint64_t(spec_.parameter_count()));
  agreed.add("device kind", uint64_t(devices_[0]->kind()));
  agreed.add("split", uint64_t(config_.split));
  agreed.add("allreduce", uint64_t(config_.allreduce));
  agreed.add("seed", config_.seed);
  agreed.add("accumulation_steps", uint64_t(config_.accumulation_steps));
  agreed.add("nonfinite", uint64_t(config_.error_on_nonfinite));
  agreed.add("batch norm", uint64_t(config_.sync_batch_norm));
  agreed.add("precision", uint64_t(config_.matmul_dtype));
  agreed.add("allreduce dtype", uint64_t(config_.allreduce_dtype));
  agreed.add("activation dtype", uint64_t(config_.activation_dtype));
  agreed.add("loss scaling", uint64_t(config_.loss_scaling.enabled));
  agreed.add("initial loss scale", config_.loss_scaling.initial_scale);
  agreed.add("loss scale growth interval", config_.loss_scaling.growth_interval);
  agreed.add("bucket_bytes", uint64_t(config_.bucket_bytes));
  agreed.add("shard", uint64_t(config_.shard));
  agreed.add("shard scope", uint64_t(config_.shard_scope));
  agreed.add("pipeline stages", uint64_t(config_.pipeline_stages));
  agreed.add("micro-batches", uint64_t(config_.micro_batches));
  agreed.add("pipeline schedule", uint64_t(config_.pipeline_schedule));
  agreed.add("pipeline scope", uint64_t(config_.pipeline_scope));
  agreed.add("pipeline copies", uint64_t(config_.pipeline_copies));
  agreed.add("pipeline balance", uint64_t(config_.pipeline_balance));
  agreed.add("pipeline balance batch", uint64_t(config_.pipeline_balance_batch));
  std::string cuts;
  for (const std::string &cut : config_.pipeline_cuts) cuts += cut + ",";
  agreed.add("pipeline cuts", cuts);
  agreed.add("optimizer kind", uint64_t(o.kind));
  agreed.add("learning_rate", double(o.learning_rate));
  agreed.add("momentum", double(o.momentum));
  agreed.add("nesterov", uint64_t(o.nesterov));
  agreed.add("weight_decay", double(o.weight_decay));
  agreed.add("beta1", double(o.beta1));
  agreed.add("beta2", double(o.beta2));
  agreed.add("epsilon", double(o.epsilon));
  agreed.add("schedule", uint64_t(o.schedule));
  agreed.add("warmup_steps", o.warmup_steps);
  agreed.add("step_size", o.step_size);
  agreed.add("gamma", double(o.gamma));
  agreed.add("total_steps", o.total_steps);
  agreed.add("min_learning_rate", double(o.min_learning_rate));
  agreed.add("clip_norm", double(o.clip_norm));
  agreed.check(world, config_.timeout_seconds);
  std::vector<double> shape(world.size() + 1, 0.0);
  shape[world.rank()] = double(devices_.size());
  shape.back() = double(spec_.parameter_count());
  world.all_reduce(shape.data(), shape.size(), config_.timeout_seconds);
  DPT_REQUIRE(shape.back() == double(spec_.parameter_count()) * double(world.size()),
              DPT_ERROR_INVALID_ARGUMENT, "the processes of the MPI job built models of different sizes");
  process_weights_.assign(shape.begin(), shape.end() - 1);
  process_first_.assign(1, 0);
  for (double devices : process_weights_) process_first_.push_back(process_first_.back() + size_t(devices));
}

void Trainer::share_initial(std::vector<float> &initial) {
  config_.world->broadcast(initial.data(), initial.size() * sizeof(float), 0, config_.timeout_seconds);
}

std::pair<size_t, size_t> Trainer::process_span(size_t p) const {
  const std::vector<size_t> &bounds = shards_.bounds();
  return {bounds[process_first_[p]], bounds[process_first_[p + 1]]};
}

std::vector<std::pair<size_t, size_t>> Trainer::process_spans_of(size_t p) const {
  if (pipeline_ == nullptr) return {process_span(p)};
  if (state_over_copies_) return process_state_spans_[p];
  if (stages_across_processes()) return {{process_stages_[p].param_begin, process_stages_[p].param_end}};
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const auto [begin, end] = stage_span(s, p);
    spans.emplace_back(stages_[s].param_begin + begin, stages_[s].param_begin + end);
  }
  return spans;
}

std::vector<size_t> Trainer::process_spans() const {
  std::vector<size_t> spans;
  if (!world_shards()) return spans;
  for (size_t p = 0; p < config_.world->size(); ++p) spans.push_back(process_span(p).first);
  spans.push_back(shards_.count());
  return spans;
}

std::vector<ShardPiece> Trainer::process_pieces() const {
  if (config_.world == nullptr || config_.shard == ShardMode::kNone || world_shards()) return {};
  return pieces_over_processes(shards_,
                               std::vector<size_t>(process_weights_.begin(), process_weights_.end()));
}

ProcessRoutes Trainer::process_routes_of_gpus() const {
  if (config_.world == nullptr || config_.world->size() < 2 || config_.shard != ShardMode::kOptimizer ||
      world_shards() ||
      std::none_of(process_weights_.begin(), process_weights_.end(), [](double d) { return d > 1; }))
    return {};
  return process_routes(shards_.count(),
                        std::vector<size_t>(process_weights_.begin(), process_weights_.end()),
                        config_.world->rank());
}

// Within the process each device's updated range goes to the others (ThreadCollective::all_gather over
// this process's part of the layout); then device 0's thread copies every process's span to every
// process (one broadcast per process, rooted there, in place: no staging), and the process's other devices
// copy the spans from it.
void Trainer::gather_across_world(size_t rank) {
  ThreadCollective &local = group_->collective();
  float *params = replicas_[rank]->params.data();
  local.all_gather(rank, params, shards_.bounds().data() + shards_.first());
  const World &world = *config_.world;
  if (rank == 0)
    for (size_t p = 0; p < world.size(); ++p) {
      const auto [begin, end] = process_span(p);
      if (end > begin)
        world.broadcast(params + begin, (end - begin) * sizeof(float), p, config_.timeout_seconds);
    }
  for (size_t p = 0; p < world.size(); ++p) {
    const auto [begin, end] = process_span(p);
    if (p != world.rank() && end > begin) local.broadcast(rank, params + begin, end - begin, 0);
  }
}

// save_state fills the ranges of this process's devices; each process's part of every state array goes to
// every process in turn (broadcasts rooted at its owner, in place: the bits as they are).
void Trainer::share_state_across_world(float *state) const {
  const World &world = *config_.world;
  const size_t arrays = state_floats_per_parameter(config_.optimizer), count = shards_.count();
  try {
    for (size_t a = 0; a < arrays; ++a)
      for (size_t p = 0; p < world.size(); ++p)
        for (const auto &[begin, end] : process_spans_of(p))
          if (end > begin)
            world.broadcast(state + a * count + begin, (end - begin) * sizeof(float), p,
                            config_.timeout_seconds);
  } catch (const Error &) {
    broken_ = true;  // the processes are out of step
    throw;
  }
}

// A sum over the processes from the trainer's own thread; a failure leaves the processes out of step.
void Trainer::world_sum(double *values, size_t count) {
  try {
    config_.world->all_reduce(values, count, config_.timeout_seconds);
  } catch (const Error &) {
    broken_ = true;
    throw;
  }
}

}  // namespace dpt
