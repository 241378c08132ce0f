#include "parallel/pipeline.hpp"

#include <algorithm>
#include <cstring>

#include "core/platform.hpp"
#include "parallel/splitter.hpp"

namespace dpt {

namespace {

// Grows buffer to at least floats (its contents are lost when it grows).
void grow(DeviceBuffer &buffer, DeviceMemory &memory, size_t floats) {
  if (buffer.size() < floats) buffer = DeviceBuffer(memory, floats);
}

void copy_floats(float *to, const float *from, size_t count) {
  std::memcpy(to, from, count * sizeof(float));  // also int32 tokens and labels, bits unchanged
}

}  // namespace

Pipeline::Pipeline(const std::vector<PipelineStage> &stages, std::vector<std::unique_ptr<Replica>> &replicas,
                   size_t micro_batches, PipelineSchedule schedule, DType matmul_dtype,
                   DType activation_dtype, const std::atomic<bool> &aborted)
    : stages_(stages),
      replicas_(replicas),
      micro_batches_(micro_batches),
      schedule_(schedule),
      handoff_(stages.size() - 1, aborted),
      contexts_(stages.size()),
      ops_(stages.size()),
      busy_(stages.size(), 0.0),
      activations_(stages.size() - 1),
      gradients_(stages.size() - 1) {
  for (size_t s = 0; s < stages.size(); ++s) {
    contexts_[s].resize(micro_batches_in_flight(schedule, s, stages.size(), micro_batches));
    for (size_t c = 1; c < contexts_[s].size(); ++c)
      contexts_[s][c] =
          std::make_unique<Network>(stages[s].spec, *replicas[s]->kernels, matmul_dtype, activation_dtype,
                                    StagePlacement{stages[s].first_node, s > 0});
  }
}

void Pipeline::reserve(size_t n, bool training) {
  size_t count = std::min(micro_batches_, n);
  if (!training) {
    const size_t cap = micro_capacity_ > 0 ? micro_capacity_ : (n + micro_batches_ - 1) / micro_batches_;
    count = (n + cap - 1) / cap;
  }
  sizes_ = split_batch(n, std::vector<double>(count, 1.0));
  offsets_.assign(count, 0);
  for (size_t m = 1; m < count; ++m) offsets_[m] = offsets_[m - 1] + sizes_[m - 1];
  const size_t largest = *std::max_element(sizes_.begin(), sizes_.end());
  if (training) micro_capacity_ = std::max(micro_capacity_, largest);
  const size_t last = stages_.size() - 1;
  for (size_t s = 0; s < stages_.size(); ++s) {
    replicas_[s]->network.reserve(largest);
    for (size_t c = 1; training && c < contexts_[s].size(); ++c) contexts_[s][c]->reserve(largest);
    ops_[s].clear();
    if (training) {
      ops_[s] = stage_schedule(schedule_, s, stages_.size(), count);
    } else {
      for (size_t m = 0; m < count; ++m) ops_[s].push_back({false, m});
    }
  }
  const ModelSpec &first = stages_[0].spec, &final = stages_[last].spec;
  grow(input_, replicas_[0]->kernels->memory(), n * first.input().size());
  grow(labels_, replicas_[last]->kernels->memory(), n * final.targets_per_sample());
  if (!training) grow(logits_, replicas_[last]->kernels->memory(), n * final.output().size());
  for (size_t b = 0; b < last; ++b) {
    const size_t width = stages_[b].spec.output().size();
    grow(activations_[b], replicas_[b + 1]->kernels->memory(), n * width);
    if (training) grow(gradients_[b], replicas_[b]->kernels->memory(), n * width);
  }
  handoff_.reset(count);
}

void Pipeline::copy_in(const void *x, const int32_t *labels, size_t n) {
  copy_floats(input_.data(), static_cast<const float *>(x), n * stages_[0].spec.input().size());
  if (labels != nullptr)
    copy_floats(labels_.data(), reinterpret_cast<const float *>(labels),
                n * stages_.back().spec.targets_per_sample());
}

PassInfo Pipeline::micro_info(const PassInfo &base, size_t m) const {
  PassInfo info = base;
  info.n = sizes_[m];
  info.first_sample = base.first_sample + offsets_[m];
  return info;
}

void Pipeline::receive_input(size_t s, Network &net, size_t m, bool with_labels) {
  const size_t width = stages_[s].spec.input().size();
  const float *from = input_.data();
  if (s > 0) {
    handoff_.wait(Crossing::kActivations, s - 1, m);
    from = activations_[s - 1].data();
  }
  copy_floats(net.input(), from + offsets_[m] * width, sizes_[m] * width);
  if (with_labels && last(s)) {
    const size_t per = stages_[s].spec.targets_per_sample();
    copy_floats(reinterpret_cast<float *>(net.labels()), labels_.data() + offsets_[m] * per, sizes_[m] * per);
  }
}

void Pipeline::send_output(size_t s, Network &net, size_t m) {
  const size_t width = stages_[s].spec.output().size();
  copy_floats(activations_[s].data() + offsets_[m] * width, net.logits(), sizes_[m] * width);
  handoff_.post(Crossing::kActivations, s, m);
}

LossStats Pipeline::train(size_t s, const PassInfo &base, const float *params, float *grads, float *buffers) {
  LossStats total;
  double busy = 0;
  for (const PipelineOp &op : ops_[s]) {
    const size_t m = op.micro;
    Network &net = context(s, m);
    const PassInfo info = micro_info(base, m);
    if (!op.backward) {
      receive_input(s, net, m, true);
      const double start = platform::now_seconds();
      const LossStats stats = net.forward(params, buffers, last(s) ? net.labels() : nullptr, info);
      busy += platform::now_seconds() - start;
      total.loss_sum += stats.loss_sum;
      total.correct += stats.correct;
      if (!last(s)) send_output(s, net, m);
      continue;
    }
    const size_t out_width = stages_[s].spec.output().size();
    if (!last(s)) {
      handoff_.wait(Crossing::kGradients, s, m);
      // A stage whose output needs no gradient (no parameters before it) has nowhere to put it.
      if (float *to = net.output_gradient())
        copy_floats(to, gradients_[s].data() + offsets_[m] * out_width, sizes_[m] * out_width);
    }
    const double start = platform::now_seconds();
    net.backward(params, grads, info);
    busy += platform::now_seconds() - start;
    if (s > 0) {
      const size_t in_width = stages_[s].spec.input().size();
      float *to = gradients_[s - 1].data() + offsets_[m] * in_width;
      if (const float *from = net.input_gradient())
        copy_floats(to, from, sizes_[m] * in_width);
      else
        std::fill(to, to + sizes_[m] * in_width, 0.0f);
      handoff_.post(Crossing::kGradients, s - 1, m);
    }
  }
  busy_[s] = busy;
  return total;
}

LossStats Pipeline::infer(size_t s, const PassInfo &base, const float *params, float *buffers,
                          bool with_labels) {
  LossStats total;
  double busy = 0;
  Network &net = replicas_[s]->network;
  for (const PipelineOp &op : ops_[s]) {
    const size_t m = op.micro;
    receive_input(s, net, m, with_labels);
    const double start = platform::now_seconds();
    const LossStats stats =
        net.forward(params, buffers, last(s) && with_labels ? net.labels() : nullptr, micro_info(base, m));
    busy += platform::now_seconds() - start;
    total.loss_sum += stats.loss_sum;
    total.correct += stats.correct;
    if (!last(s)) {
      send_output(s, net, m);
    } else if (!with_labels) {
      const size_t width = stages_[s].spec.output().size();
      copy_floats(logits_.data() + offsets_[m] * width, net.logits(), sizes_[m] * width);
    }
  }
  busy_[s] = busy;
  return total;
}

void Pipeline::copy_logits(float *out) const {
  size_t n = 0;
  for (size_t size : sizes_) n += size;
  copy_floats(out, logits_.data(), n * stages_.back().spec.output().size());
}

uint64_t Pipeline::allocated_bytes(size_t s) const {
  uint64_t bytes = replicas_[s]->network.allocated_bytes();
  for (size_t c = 1; c < contexts_[s].size(); ++c) bytes += contexts_[s][c]->allocated_bytes();
  uint64_t floats = 0;
  if (s == 0) floats += input_.size();
  if (last(s)) floats += labels_.size() + logits_.size();
  if (s > 0) floats += activations_[s - 1].size();
  if (!last(s)) floats += gradients_[s].size();
  return bytes + floats * sizeof(float);
}

}  // namespace dpt
