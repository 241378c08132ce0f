// A trainer across the processes of an MPI world: the check that every process built the same trainer, the
// split across processes, the common start, and sums over the processes from the trainer's thread.
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "parallel/process_agreement.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// Checks that every process built the same trainer (what shapes the collectives and keeps the replicas
// identical), learns every process's device count (the weights of the split across processes), and starts
// every process from process 0's parameters.
void Trainer::join_world(std::vector<float> &initial) {
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
  // Sharded gradients: each process shards among its own devices and sums its ranges over the processes
  // in the update; a process of one device shards nothing and all-reduces its gradient whole, which the
  // others' sums would not meet.
  const bool sharded_sums = config_.shard == ShardMode::kGradients || config_.shard == ShardMode::kParameters;
  const auto single = std::count(process_weights_.begin(), process_weights_.end(), 1.0);
  DPT_REQUIRE(
      !sharded_sums || single == 0 || size_t(single) == process_weights_.size(), DPT_ERROR_UNSUPPORTED,
      "sharded gradients and parameters across MPI processes need at least 2 devices in every process "
      "(each process shards among its own devices), or 1 in every process (nothing is sharded)");
  world.broadcast(initial.data(), initial.size() * sizeof(float), 0, config_.timeout_seconds);
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
