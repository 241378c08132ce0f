#include "parallel/pipeline.hpp"

#include <algorithm>

#include "core/platform.hpp"
#include "parallel/splitter.hpp"

namespace dpt {

namespace {

// Grows buffer to at least floats (its contents are lost when it grows).
void grow(DeviceBuffer &buffer, DeviceMemory &memory, size_t floats) {
  if (buffer.size() < floats) buffer = DeviceBuffer(memory, floats);
}

// A batch of n samples in micro-batches of at most cap (0: into `count`), as even as possible.
std::vector<size_t> micro_sizes(size_t n, size_t count, size_t cap) {
  if (n == 0) return {};  // a process's empty share across processes: nothing to pipeline
  if (cap > 0) count = (n + cap - 1) / cap;
  return split_batch(n, std::vector<double>(std::min(count, n), 1.0));
}

}  // namespace

Pipeline::Pipeline(const std::vector<PipelineStage> &stages, std::vector<std::unique_ptr<Replica>> &replicas,
                   size_t replicas_per_stage, size_t micro_batches, PipelineSchedule schedule,
                   DType matmul_dtype, DType activation_dtype, const std::atomic<bool> &aborted,
                   PipelineNeighbours neighbours)
    : stages_(stages),
      replicas_(replicas),
      width_(replicas_per_stage),
      micro_batches_(micro_batches),
      schedule_(schedule),
      handoff_((stages.size() - 1) * replicas_per_stage, aborted),
      contexts_(replicas.size()),
      busy_(replicas.size(), 0.0),
      transfer_(replicas.size(), 0.0),
      ops_(stages.size()),
      activations_((stages.size() - 1) * replicas_per_stage),
      gradients_((stages.size() - 1) * replicas_per_stage),
      input_(replicas_per_stage),
      labels_(replicas_per_stage),
      logits_(replicas_per_stage),
      link_(neighbours, stages.size(), replicas.size()),
      sent_activations_(replicas_per_stage),
      sent_gradients_(replicas_per_stage),
      unused_gradient_(replicas.size()),
      host_sent_activations_(replicas_per_stage),
      host_sent_gradients_(replicas_per_stage),
      host_received_(replicas.size()) {
  for (size_t d = 0; d < replicas.size(); ++d) {
    const size_t s = stage(d), model_stage = link_.first_stage() + s;
    contexts_[d].resize(micro_batches_in_flight(schedule, model_stage, link_.total_stages(), micro_batches));
    for (size_t c = 1; c < contexts_[d].size(); ++c)
      contexts_[d][c] =
          std::make_unique<Network>(stages[s].spec, *replicas[d]->kernels, matmul_dtype, activation_dtype,
                                    StagePlacement{stages[s].first_node, model_stage > 0});
  }
}

std::vector<size_t> Pipeline::samples_per_device(size_t n) const {
  std::vector<size_t> per_replica(width_, 0);
  for (size_t size : micro_sizes(n, micro_batches_, 0)) {
    const std::vector<size_t> parts = split_batch(size, std::vector<double>(width_, 1.0));
    for (size_t r = 0; r < width_; ++r) per_replica[r] += parts[r];
  }
  std::vector<size_t> out;
  for (size_t d = 0; d < replicas_.size(); ++d) out.push_back(per_replica[d % width_]);
  return out;
}

void Pipeline::reserve(size_t n, bool training) {
  if (n == planned_batch_ && training == planned_training_) {  // steps of one size allocate nothing
    handoff_.reset(slices_.size() / width_);
    return;
  }
  const std::vector<size_t> sizes = micro_sizes(n, micro_batches_, training ? 0 : micro_capacity_);
  const size_t count = sizes.size();
  slices_.assign(count * width_, Slice{});
  replica_samples_.assign(width_, 0);
  size_t first = 0, largest = 0;
  for (size_t m = 0; m < count; ++m) {
    const std::vector<size_t> parts = split_batch(sizes[m], std::vector<double>(width_, 1.0));
    for (size_t r = 0; r < width_; ++r) {
      slices_[m * width_ + r] = Slice{parts[r], first, replica_samples_[r]};
      first += parts[r];
      replica_samples_[r] += parts[r];
      largest = std::max(largest, parts[r]);
    }
  }
  if (training && !sizes.empty())
    micro_capacity_ = std::max(micro_capacity_, *std::max_element(sizes.begin(), sizes.end()));
  for (size_t s = 0; s < stages_.size(); ++s) {
    ops_[s].clear();
    if (training) {
      ops_[s] = stage_schedule(schedule_, link_.first_stage() + s, link_.total_stages(), count);
    } else {
      for (size_t m = 0; m < count; ++m) ops_[s].push_back({false, m});
    }
  }
  const size_t last_stage = stages_.size() - 1;
  const ModelSpec &first_model = stages_[0].spec, &last_model = stages_[last_stage].spec;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    replicas_[d]->network.reserve(largest);
    for (size_t c = 1; training && c < contexts_[d].size(); ++c) contexts_[d][c]->reserve(largest);
  }
  for (size_t r = 0; r < width_; ++r) {
    const size_t samples = replica_samples_[r];
    DeviceMemory &front = replicas_[r]->kernels->memory();
    DeviceMemory &back = replicas_[last_stage * width_ + r]->kernels->memory();
    if (!link_.previous()) grow(input_[r], front, samples * first_model.input().size());
    if (!link_.next()) grow(labels_[r], back, samples * last_model.targets_per_sample());
    if (!training && !link_.next()) grow(logits_[r], back, samples * last_model.output().size());
    const size_t sent_activations = link_.next() ? samples * last_model.output().size() : 0;
    const size_t sent_gradients = link_.previous() && training ? samples * first_model.input().size() : 0;
    if (link_.host_staging()) {
      host_sent_activations_[r].resize(std::max(host_sent_activations_[r].size(), sent_activations));
      host_sent_gradients_[r].resize(std::max(host_sent_gradients_[r].size(), sent_gradients));
    } else {
      if (sent_activations > 0) grow(sent_activations_[r], back, sent_activations);
      if (sent_gradients > 0) grow(sent_gradients_[r], front, sent_gradients);
    }
    for (size_t b = 0; b < last_stage; ++b) {
      const size_t width = stages_[b].spec.output().size();
      grow(activations_[b * width_ + r], replicas_[b * width_ + r]->kernels->memory(), samples * width);
      if (training)
        grow(gradients_[b * width_ + r], replicas_[(b + 1) * width_ + r]->kernels->memory(), samples * width);
    }
  }
  handoff_.reset(count);
  planned_batch_ = n;
  planned_training_ = training;
}

// The copies go through the devices' kernels (a GPU's stream; memcpy on a CPU device), 4-byte values with
// their bits unchanged (int32 tokens too).
void Pipeline::copy_in(const void *x, const int32_t *labels) {
  const size_t in = stages_[0].spec.input().size(), per = stages_.back().spec.targets_per_sample();
  const size_t last_stage = stages_.size() - 1;
  for (const Slice &s : slices_) {
    const size_t r = size_t(&s - slices_.data()) % width_;
    if (s.count == 0) continue;
    if (!link_.previous())
      replicas_[r]->kernels->copy_to_device(input_[r].data() + s.local * in,
                                            static_cast<const float *>(x) + s.first * in, s.count * in);
    if (labels != nullptr && !link_.next())
      replicas_[last_stage * width_ + r]->kernels->copy_labels_to_device(
          reinterpret_cast<int32_t *>(labels_[r].data()) + s.local * per, labels + s.first * per,
          s.count * per);
  }
  for (const auto &replica : replicas_) replica->kernels->synchronize();  // the caller's buffers are read
}

PassInfo Pipeline::slice_info(const PassInfo &base, const Slice &sl) {
  PassInfo info = base;
  info.n = sl.count;
  info.first_sample = base.first_sample + sl.first;
  return info;
}

void Pipeline::copy_within(size_t d, float *to, const float *from, size_t count) {
  if (count > 0) replicas_[d]->kernels->copy_device(to, from, count);
}

float *Pipeline::message(bool activations, size_t r, size_t offset) {
  if (link_.host_staging())
    return (activations ? host_sent_activations_[r] : host_sent_gradients_[r]).data() + offset;
  return (activations ? sent_activations_[r] : sent_gradients_[r]).data() + offset;
}

void Pipeline::copy_to_message(size_t d, float *to, const float *from, size_t count) {
  if (!link_.host_staging())
    copy_within(d, to, from, count);
  else if (count > 0)
    replicas_[d]->kernels->copy_to_host(to, from, count);
}

double Pipeline::receive_message(size_t d, bool from_next, Crossing what, float *to, size_t count) {
  const size_t r = d % width_;
  if (!link_.host_staging()) return link_.receive(from_next, what, r, to, count);  // straight in
  std::vector<float> &staged = host_received_[d];
  staged.resize(std::max(staged.size(), count));
  const double waited = link_.receive(from_next, what, r, staged.data(), count);
  if (count > 0) {
    replicas_[d]->kernels->copy_to_device(to, staged.data(), count);
    replicas_[d]->kernels->synchronize();  // the next message reuses the host buffer
  }
  return waited;
}

void Pipeline::receive_input(size_t d, Network &net, size_t m, bool with_labels) {
  const size_t s = stage(d), r = d % width_;
  const Slice &sl = slice(m, r);
  const size_t width = stages_[s].spec.input().size();
  const float *from = input_[r].data();
  if (s > 0) {
    handoff_.wait(Crossing::kActivations, (s - 1) * width_ + r, m);
    from = activations_[(s - 1) * width_ + r].data();
  }
  const double start = platform::now_seconds();
  double waited = 0;  // for the process before to send (idle, as the wait for a stage in this process)
  if (receives_from_previous_process(d))  // from the process before, straight into the input
    waited = receive_message(d, false, Crossing::kActivations, net.input(), sl.count * width);
  else  // from the stage before: a peer copy (the first stage's inputs are its own)
    copy_within(d, net.input(), from + sl.local * width, sl.count * width);
  if (with_labels && last(d)) {
    const size_t per = stages_[s].spec.targets_per_sample();
    copy_within(d, reinterpret_cast<float *>(net.labels()), labels_[r].data() + sl.local * per,
                sl.count * per);
  }
  transfer_[d] += platform::now_seconds() - start - waited;
}

void Pipeline::send_output(size_t d, Network &net, size_t m) {
  const size_t s = stage(d), r = d % width_;
  const Slice &sl = slice(m, r);
  const size_t width = stages_[s].spec.output().size();
  const double start = platform::now_seconds();
  if (sends_to_next_process(d)) {  // kept until the pass ends: a context's output is overwritten before
    float *out = message(true, r, sl.local * width);
    copy_to_message(d, out, net.logits(), sl.count * width);
    replicas_[d]->kernels->synchronize();  // MPI reads it from the host's side
    link_.send(d, true, Crossing::kActivations, r, out, sl.count * width);
    transfer_[d] += platform::now_seconds() - start;
    return;
  }
  copy_within(d, activations_[s * width_ + r].data() + sl.local * width, net.logits(), sl.count * width);
  replicas_[d]->kernels->synchronize();  // the next stage reads them once posted
  transfer_[d] += platform::now_seconds() - start;
  handoff_.post(Crossing::kActivations, s * width_ + r, m);
}

void Pipeline::receive_output_gradient(size_t d, Network &net, size_t m) {
  const size_t s = stage(d), r = d % width_;
  const Slice &sl = slice(m, r);
  const size_t width = stages_[s].spec.output().size();
  if (sends_to_next_process(d)) {
    const double start = platform::now_seconds();
    double waited = 0;
    if (float *to = net.output_gradient()) {
      waited = receive_message(d, true, Crossing::kGradients, to, sl.count * width);
    } else {  // the next process sends it all the same: the messages stay in step (into a host buffer)
      unused_gradient_[d].resize(sl.count * width);
      waited = link_.receive(true, Crossing::kGradients, r, unused_gradient_[d].data(), sl.count * width);
    }
    transfer_[d] += platform::now_seconds() - start - waited;  // the wait for the next process is idle
    return;
  }
  handoff_.wait(Crossing::kGradients, s * width_ + r, m);
  const double start = platform::now_seconds();
  // A stage whose output needs no gradient (no parameters before it) has nowhere to put it.
  if (float *to = net.output_gradient())  // from the stage after: a peer copy
    copy_within(d, to, gradients_[s * width_ + r].data() + sl.local * width, sl.count * width);
  transfer_[d] += platform::now_seconds() - start;
}

void Pipeline::send_input_gradient(size_t d, Network &net, size_t m) {
  const size_t s = stage(d), r = d % width_;
  const Slice &sl = slice(m, r);
  const size_t width = stages_[s].spec.input().size();
  const double start = platform::now_seconds();
  const bool remote = receives_from_previous_process(d);
  float *to = remote ? message(false, r, sl.local * width)
                     : gradients_[(s - 1) * width_ + r].data() + sl.local * width;
  const float *from = net.input_gradient();
  if (from != nullptr && remote)
    copy_to_message(d, to, from, sl.count * width);
  else if (from != nullptr)
    copy_within(d, to, from, sl.count * width);
  else if (remote && link_.host_staging())  // no gradient to send: zeros, in host memory
    std::fill(to, to + sl.count * width, 0.0f);
  else if (sl.count > 0)
    replicas_[d]->kernels->memory().zero(to, sl.count * width * sizeof(float));
  replicas_[d]->kernels->synchronize();  // the stage before (or MPI) reads it once posted
  if (remote) {
    link_.send(d, false, Crossing::kGradients, r, to, sl.count * width);
    transfer_[d] += platform::now_seconds() - start;
    return;
  }
  transfer_[d] += platform::now_seconds() - start;
  handoff_.post(Crossing::kGradients, (s - 1) * width_ + r, m);
}

template <typename Pass>
auto Pipeline::run_pass(size_t d, Pass pass) -> decltype(pass()) {
  try {
    auto result = pass();
    link_.finish(d, false);
    return result;
  } catch (...) {
    try {
      link_.finish(d, true);
    } catch (...) {  // the pass's own error is the one to report
    }
    throw;
  }
}

LossStats Pipeline::train(size_t d, const PassInfo &base, const float *params, float *grads, float *buffers,
                          BackwardHook last_backward) {
  return run_pass(d, [&] { return train_pass(d, base, params, grads, buffers, last_backward); });
}

LossStats Pipeline::train_pass(size_t d, const PassInfo &base, const float *params, float *grads,
                               float *buffers, BackwardHook last_backward) {
  const size_t s = stage(d), r = d % width_;
  LossStats total;
  double busy = 0;
  transfer_[d] = 0;
  size_t end_of_backwards = ops_[s].size();  // past the stage's last backward (every schedule ends with one)
  while (end_of_backwards > 0 && !ops_[s][end_of_backwards - 1].backward) --end_of_backwards;
  for (size_t i = 0; i < ops_[s].size(); ++i) {
    const PipelineOp &op = ops_[s][i];
    const size_t m = op.micro;
    const Slice &sl = slice(m, r);
    Network &net = context(d, m);
    PassInfo info = slice_info(base, sl);
    if (!op.backward) {
      receive_input(d, net, m, true);
      const double start = platform::now_seconds();
      const LossStats stats = net.forward(params, buffers, last(d) ? net.labels() : nullptr, info);
      busy += platform::now_seconds() - start;
      total.loss_sum += stats.loss_sum;
      total.correct += stats.correct;
      if (!last(d)) send_output(d, net, m);
      continue;
    }
    if (!last(d)) receive_output_gradient(d, net, m);
    const double start = platform::now_seconds();
    net.backward(params, grads, info, i + 1 == end_of_backwards ? last_backward : BackwardHook{});
    busy += platform::now_seconds() - start;
    if (s > 0 || link_.previous()) send_input_gradient(d, net, m);
  }
  replicas_[d]->kernels->synchronize();  // a GPU's queued work belongs to this pass
  busy_[d] = busy;
  return total;
}

LossStats Pipeline::infer(size_t d, const PassInfo &base, const float *params, float *buffers,
                          bool with_labels) {
  return run_pass(d, [&] { return infer_pass(d, base, params, buffers, with_labels); });
}

LossStats Pipeline::infer_pass(size_t d, const PassInfo &base, const float *params, float *buffers,
                               bool with_labels) {
  const size_t s = stage(d), r = d % width_;
  LossStats total;
  double busy = 0;
  transfer_[d] = 0;
  Network &net = replicas_[d]->network;
  for (const PipelineOp &op : ops_[s]) {
    const size_t m = op.micro;
    const Slice &sl = slice(m, r);
    PassInfo info = slice_info(base, sl);
    receive_input(d, net, m, with_labels);
    const double start = platform::now_seconds();
    const LossStats stats =
        net.forward(params, buffers, last(d) && with_labels ? net.labels() : nullptr, info);
    busy += platform::now_seconds() - start;
    total.loss_sum += stats.loss_sum;
    total.correct += stats.correct;
    if (!last(d)) {
      send_output(d, net, m);
    } else if (!with_labels) {
      const size_t width = stages_[s].spec.output().size();
      copy_within(d, logits_[r].data() + sl.local * width, net.logits(), sl.count * width);
    }
  }
  replicas_[d]->kernels->synchronize();  // a GPU's queued work belongs to this pass
  busy_[d] = busy;
  return total;
}

void Pipeline::recompute_statistics(size_t d, const PassInfo &base, const float *params, float *buffers) {
  run_pass(d, [&] {
    recompute_pass(d, base, params, buffers);
    return 0;
  });
}

void Pipeline::recompute_pass(size_t d, const PassInfo &base, const float *params, float *buffers) {
  const size_t s = stage(d), r = d % width_, count = slices_.size() / width_;
  transfer_[d] = 0;
  for (const PipelineOp &op : ops_[s]) {
    if (op.backward) continue;  // a context is free again once its output is sent: nothing comes back
    const size_t m = op.micro;
    const Slice &sl = slice(m, r);
    Network &net = context(d, m);
    PassInfo info = slice_info(base, sl);
    info.average_statistics = (base.average_statistics - 1) * count + m + 1;
    receive_input(d, net, m, false);
    net.forward(params, buffers, nullptr, info);
    if (!last(d)) send_output(d, net, m);
  }
  replicas_[d]->kernels->synchronize();
}

void Pipeline::copy_logits(float *out) const {
  const size_t width = stages_.back().spec.output().size(), last_stage = stages_.size() - 1;
  for (size_t i = 0; i < slices_.size(); ++i) {
    const Slice &s = slices_[i];
    if (s.count > 0)
      replicas_[last_stage * width_ + i % width_]->kernels->copy_to_host(
          out + s.first * width, logits_[i % width_].data() + s.local * width, s.count * width);
  }
  for (size_t r = 0; r < width_; ++r) replicas_[last_stage * width_ + r]->kernels->synchronize();
}

uint64_t Pipeline::allocated_bytes(size_t d) const {
  const size_t s = stage(d), r = d % width_;
  uint64_t bytes = replicas_[d]->network.allocated_bytes();
  for (size_t c = 1; c < contexts_[d].size(); ++c) bytes += contexts_[d][c]->allocated_bytes();
  uint64_t floats = 0;
  if (s == 0) floats += input_[r].size() + sent_gradients_[r].size();
  if (s + 1 == stages_.size()) floats += labels_[r].size() + logits_[r].size() + sent_activations_[r].size();
  if (s > 0) floats += activations_[(s - 1) * width_ + r].size();
  if (s + 1 < stages_.size()) floats += gradients_[s * width_ + r].size();
  return bytes + floats * sizeof(float);
}

}  // namespace dpt
