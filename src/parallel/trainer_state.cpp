// A trainer's state from and to the host: parameters, their checksum, and the checkpointed state, always
// from the caller's thread between phases.
#include <mutex>
#include <string>
#include <vector>

#include "core/checksum.hpp"
#include "core/error.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// From the caller's thread, between phases (the work mutex keeps the device workers off the replica).
void Trainer::copy_to_host(size_t replica, const DeviceBuffer &buffer, float *out) const {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  DeviceKernels &k = *replicas_[replica]->kernels;
  k.copy_to_host(out, buffer.data(), buffer.size());
  k.synchronize();
}

void Trainer::get_parameters(size_t replica, float *out) const {
  DPT_REQUIRE(replica < replicas_.size(), DPT_ERROR_OUT_OF_RANGE,
              "replica " + std::to_string(replica) + " does not exist (the trainer has " +
                  std::to_string(replicas_.size()) + ")");
  copy_to_host(replica, replicas_[replica]->params, out);
}

void Trainer::set_parameters(const float *in) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_parameters_locked(in);
}

void Trainer::set_parameters_locked(const float *in) {
  for (auto &r : replicas_) r->kernels->copy_to_device(r->params.data(), in, r->params.size());
  for (auto &r : replicas_) r->kernels->synchronize();
}

void Trainer::set_buffers_locked(const float *in) {
  for (auto &r : replicas_) r->kernels->copy_to_device(r->buffers.data(), in, r->buffers.size());
  for (auto &r : replicas_) r->kernels->synchronize();
}

void Trainer::get_buffers(size_t replica, float *out) const {
  DPT_REQUIRE(replica < replicas_.size(), DPT_ERROR_OUT_OF_RANGE,
              "replica " + std::to_string(replica) + " does not exist (the trainer has " +
                  std::to_string(replicas_.size()) + ")");
  copy_to_host(replica, replicas_[replica]->buffers, out);
}

void Trainer::set_buffers(const float *in) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_buffers_locked(in);
}

uint64_t Trainer::parameter_checksum() const {
  std::vector<float> p(parameter_count());
  copy_to_host(0, replicas_[0]->params, p.data());
  return fnv1a64(p.data(), p.size() * sizeof(float));
}

TrainerState Trainer::save_state() const {
  check_usable();
  DPT_REQUIRE(pending_micro_ == 0, DPT_ERROR_INVALID_STATE,
              "cannot checkpoint inside an accumulation window (" + std::to_string(pending_micro_) + " of " +
                  std::to_string(config_.accumulation_steps) + " micro-batches done)");
  const Replica &r = *replicas_[0];
  TrainerState state;
  state.parameters.resize(r.params.size());
  state.optimizer_state.resize(r.state.size());
  state.buffers.resize(r.buffers.size());
  copy_to_host(0, r.params, state.parameters.data());
  copy_to_host(0, r.state, state.optimizer_state.data());
  copy_to_host(0, r.buffers, state.buffers.data());
  state.optimizer_steps = optimizer_steps_;
  state.epochs_done = epochs_done;
  state.seed = config_.seed;
  if (scaler_.enabled()) {
    state.loss_scale = scaler_.scale();
    state.loss_scale_growth_tracker = scaler_.growth_tracker();
  }
  return state;
}

void Trainer::load_state(const TrainerState &state) {
  check_usable();
  const Replica &first = *replicas_[0];
  DPT_REQUIRE(state.parameters.size() == first.params.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.parameters.size()) + " parameters, the model " +
                  std::to_string(first.params.size()));
  DPT_REQUIRE(state.optimizer_state.size() == first.state.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.optimizer_state.size()) +
                  " floats of optimizer state, the trainer's optimizer needs " +
                  std::to_string(first.state.size()));
  DPT_REQUIRE(state.buffers.size() == first.buffers.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.buffers.size()) +
                  " floats of running statistics, the model " + std::to_string(first.buffers.size()));
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  for (auto &r : replicas_) {
    r->kernels->copy_to_device(r->params.data(), state.parameters.data(), r->params.size());
    r->kernels->copy_to_device(r->state.data(), state.optimizer_state.data(), r->state.size());
    r->kernels->copy_to_device(r->buffers.data(), state.buffers.data(), r->buffers.size());
    r->grads.zero();
  }
  for (auto &r : replicas_) r->kernels->synchronize();
  optimizer_steps_ = state.optimizer_steps;
  epochs_done = state.epochs_done;
  config_.seed = state.seed;
  if (scaler_.enabled() && state.loss_scale != 0)
    scaler_.restore(state.loss_scale, state.loss_scale_growth_tracker);
  pending_micro_ = 0;
  pending_samples_ = 0;
  pending_targets_ = 0;
}

}  // namespace dpt
