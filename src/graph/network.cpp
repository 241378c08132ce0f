#include "graph/network.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {

constexpr size_t kNone = SIZE_MAX;

void stop_if_cancelled(const PassInfo &info) {
  if (info.cancel != nullptr && info.cancel->load(std::memory_order_relaxed))
    throw_error(DPT_ERROR_COMMUNICATION, "pass aborted: another device failed or the deadline passed");
}

size_t floats_for(size_t bytes) {
  return (bytes + sizeof(float) - 1) / sizeof(float);
}

}  // namespace

Network::Network(const ModelSpec &spec, DeviceKernels &kernels, DType matmul_dtype, DType activation_dtype,
                 StagePlacement placement)
    : spec_(spec), kernels_(kernels), first_node_(placement.first_node) {
  const std::vector<TensorInfo> &tensors = spec.tensors();
  const std::vector<Node> &nodes = spec.nodes();
  root_.assign(tensors.size(), 0);
  requires_grad_.assign(tensors.size(), false);
  requires_grad_[0] = placement.input_gradient;
  for (const TensorInfo &t : tensors) max_width_ = std::max(max_width_, t.shape.size());
  size_t scratch = 0;
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node &node = nodes[j];
    kernels_.check_supported(node.op->name, tensors[node.output].dtype, matmul_dtype);
    root_[node.output] = node.layout.view ? root_[node.inputs[0]] : node.output;
    bool rg = !node.layout.params.empty();
    for (size_t t : node.inputs) rg = rg || requires_grad_[t];
    requires_grad_[node.output] = rg;

    Step step;
    step.call = call_template(spec, j);
    step.call.node = uint64_t(first_node_ + j);
    step.call.matmul_dtype = int32_t(matmul_dtype);
    if (!node.layout.view) scratch = std::max(scratch, kernels_.scratch_bytes(step.call));
    steps_.push_back(step);
  }
  plan_gradients();
  std::vector<bool> backward;
  for (const Step &step : steps_) backward.push_back(step.run_backward);
  store_ = std::make_unique<ActivationStore>(spec, root_, backward, kernels_, activation_dtype);
  scratch_ = DeviceBuffer(kernels_.memory(), floats_for(scratch));
  size_t largest = 0;
  for (const Node &node : nodes) {
    // What is saved once per pass exists before any slice does: an empty slice still runs the ops with
    // statistics.
    saved_.emplace_back(kernels_.memory(), floats_for(node.layout.saved_bytes));
    statistics_.emplace_back(kernels_.memory(), 2 * node.layout.statistics * sizeof(double) / sizeof(float));
    has_statistics_ = has_statistics_ || node.layout.statistics > 0;
    largest = std::max(largest, node.layout.statistics);
  }
  host_statistics_.assign(2 * largest, 0.0);
}

// Backward visits the nodes in reverse. A tensor's gradient lives in a slot from the moment the first op
// that reads it (the last in node order) writes it until the op that made it has run its backward; then the
// slot is free for another tensor. A chain needs two slots (ping-pong); a tensor read by several ops gets
// the later contributions through a spare slot, added in (so kernels only ever write their input
// gradients).
void Network::plan_gradients() {
  const std::vector<Node> &nodes = spec_.nodes();
  grad_slot_.assign(spec_.tensors().size(), kNone);
  std::vector<size_t> free_slots;
  size_t spares = 0;
  auto take = [&] {
    if (free_slots.empty()) return grad_slots_++;
    const size_t s = free_slots.back();
    free_slots.pop_back();
    return s;
  };
  const size_t out = root_[spec_.output_tensor()];
  if (requires_grad_[spec_.output_tensor()]) grad_slot_[out] = take();
  for (size_t j = nodes.size(); j-- > 0;) {
    const Node &node = nodes[j];
    Step &step = steps_[j];
    const size_t r = root_[node.output];
    step.run_backward = !node.layout.view && requires_grad_[node.output] && grad_slot_[r] != kNone;
    if (!step.run_backward) continue;
    size_t accumulating = 0;
    for (size_t t : node.inputs) {
      const size_t rt = root_[t];
      if (!requires_grad_[t]) {
        step.grads.push_back({kNone, false});
      } else if (grad_slot_[rt] == kNone) {
        grad_slot_[rt] = take();
        step.grads.push_back({rt, false});
      } else {
        step.grads.push_back({rt, true});
        ++accumulating;
      }
    }
    spares = std::max(spares, accumulating);
    free_slots.push_back(grad_slot_[r]);
  }
  spare_slot_ = grad_slots_;  // the spares come after the tensors' slots
  grad_slots_ += spares;
}

void Network::reserve(size_t n) {
  if (n <= capacity_) return;
  input_ = DeviceBuffer(kernels_.memory(), n * spec_.input().size());
  static_assert(sizeof(int32_t) == sizeof(float));
  labels_ = DeviceBuffer(kernels_.memory(), n * spec_.targets_per_sample());
  store_->reserve(n, input_.data());
  for (size_t j = 0; j < spec_.nodes().size(); ++j) {
    const NodeLayout &l = spec_.nodes()[j].layout;  // the per-sample part and the per-pass part
    saved_[j] = DeviceBuffer(kernels_.memory(), floats_for(n * l.saved_bytes_per_sample + l.saved_bytes));
  }
  slots_.clear();
  for (size_t s = 0; s < grad_slots_; ++s) slots_.emplace_back(kernels_.memory(), n * max_width_);
  capacity_ = n;
}

size_t Network::bytes_per_sample() const {
  const size_t floats = spec_.input().size() + spec_.targets_per_sample() + grad_slots_ * max_width_;
  size_t bytes = floats * sizeof(float) + store_->bytes_per_sample();
  for (const Node &node : spec_.nodes()) bytes += node.layout.saved_bytes_per_sample;
  return bytes;  // (the per-pass parts, allocated once, do not grow with the slice)
}

uint64_t Network::allocated_bytes() const {
  uint64_t floats = input_.size() + labels_.size() + scratch_.size();
  for (const auto *buffers : {&statistics_, &saved_, &slots_})
    for (const DeviceBuffer &b : *buffers) floats += b.size();
  return floats * sizeof(float) + store_->allocated_bytes();
}

void Network::fill_call(size_t j, dpt_op_call &c, const float *params, float *buffers, const PassInfo &info) {
  const Node &node = spec_.nodes()[j];
  c.n = int64_t(info.n);
  for (size_t i = 0; i < node.inputs.size(); ++i) c.inputs[i].data = store_->at(node.inputs[i]);
  c.output.data = store_->at(node.output);
  const float *base = params;  // where element 0 of the flat vector would be: base + offset
  size_t first = 0;
  if (info.parameters.node_parameters != nullptr && node.parameters() > 0)
    base = info.parameters.node_parameters(info.parameters.context, j), first = node.param_offset;
  const ParameterSource &source = info.parameters;
  for (size_t k = 0; k < node.layout.params.size(); ++k)
    c.params[k].data = const_cast<float *>(node.tied[k] && source.tied_parameters != nullptr
                                               ? source.tied_parameters(source.context, node.param_offsets[k])
                                               : base + (node.param_offsets[k] - first));
  float *b = buffers != nullptr ? buffers + node.buffer_offset : nullptr;
  for (size_t k = 0; k < node.layout.buffers.size(); ++k) {
    c.buffers[k].data = b;
    b += node.layout.buffers[k].size();
  }
  c.statistics = reinterpret_cast<double *>(statistics_[j].data());
  c.sync_statistics = info.sync_statistics ? 1 : 0;
  c.statistics_momentum = info.average_statistics > 0 ? 1.0 / double(info.average_statistics) : 0.0;
  c.phase = DPT_OP_PHASE_SINGLE;
  c.saved = saved_[j].data();
  c.saved_bytes = info.n * node.layout.saved_bytes_per_sample + node.layout.saved_bytes;
  c.statistics_count = 2 * node.layout.statistics;
  c.scratch = scratch_.data();
  c.scratch_bytes = scratch_.size() * sizeof(float);
  c.training = info.training ? 1 : 0;
  c.seed = info.seed;
  c.step = info.step;
  c.first_sample = info.first_sample;
}

// Phase 1 writes this slice's statistics; forward copies them to the second set, which is summed over every
// replica (the running statistics follow it in either mode); backward sums its set in place in sync mode
// only. Phase 2 then uses them. Summed over replicas, the statistics go through the host (a few doubles per
// channel), or stay on the GPUs with a NCCL reducer; a lone replica's are copied on the device.
void Network::run_phased(size_t j, dpt_op_call &c, const PassInfo &info, bool forward) {
  const size_t count = spec_.nodes()[j].layout.statistics;
  double *device = c.statistics, *host = host_statistics_.data();
  c.phase = DPT_OP_PHASE_STATISTICS;
  forward ? kernels_.forward(c) : kernels_.backward(c);
  const bool reduce = forward || info.sync_statistics;
  if (reduce && info.statistics != nullptr && info.statistics->device_memory()) {
    if (forward)
      kernels_.copy_device(reinterpret_cast<float *>(device + count), reinterpret_cast<const float *>(device),
                           2 * count);
    info.statistics->all_reduce(info.rank, forward ? device + count : device, count);
  } else if (reduce && info.statistics != nullptr) {
    float *as_floats = reinterpret_cast<float *>(host);
    kernels_.copy_to_host(as_floats, reinterpret_cast<const float *>(device), 2 * count);
    kernels_.synchronize();
    double *sums = forward ? host + count : host;
    if (forward) std::copy(host, host + count, sums);
    info.statistics->all_reduce(info.rank, sums, count);
    kernels_.copy_to_device(reinterpret_cast<float *>(device) + (forward ? 2 * count : 0),
                            reinterpret_cast<const float *>(sums), 2 * count);
    kernels_.synchronize();
  } else if (forward) {
    // One replica is the whole batch: its statistics are the global ones, copied on the device (a GPU
    // neither waits nor crosses to the host).
    kernels_.copy_device(reinterpret_cast<float *>(device) + 2 * count,
                         reinterpret_cast<const float *>(device), 2 * count);
  }
  c.phase = DPT_OP_PHASE_APPLY;
  forward ? kernels_.forward(c) : kernels_.backward(c);
}

double Network::timer_now() {
  kernels_.synchronize();
  return platform::now_seconds();
}

LossStats Network::forward(const float *params, float *buffers, const int32_t *labels, const PassInfo &info) {
  DPT_REQUIRE(info.n <= capacity_, DPT_ERROR_INTERNAL, "slice larger than the reserved capacity");
  pass_buffers_ = buffers;
  store_->begin_forward();
  for (size_t j = 0; j < steps_.size(); ++j) {
    const NodeLayout &layout = spec_.nodes()[j].layout;
    if (layout.view) continue;
    stop_if_cancelled(info);
    dpt_op_call &c = steps_[j].call;
    fill_call(j, c, params, buffers, info);
    const double start = info.timer.op_done != nullptr ? timer_now() : 0.0;
    if (layout.statistics > 0 && info.training)
      run_phased(j, c, info, true);
    else
      kernels_.forward(c);
    if (info.timer.op_done != nullptr)
      info.timer.op_done(info.timer.context, first_node_ + j, false, start, timer_now());
    store_->after_forward(j, info.n, info.training);
  }
  if (labels == nullptr) return {};
  const size_t out = root_[spec_.output_tensor()];
  float *dlogits = info.training && grad_slot_[out] != kNone ? slot(grad_slot_[out]) : nullptr;
  const size_t rows = info.n * spec_.targets_per_sample();
  const LossStats stats = kernels_.loss(store_->at(out), labels, rows, spec_.classes(), dlogits);
  if (dlogits != nullptr && info.loss_scale != 1.0f)
    kernels_.scale(dlogits, rows * spec_.classes(), info.loss_scale);
  return stats;
}

void Network::backward(const float *params, float *grads, const PassInfo &info, BackwardHook hook) {
  for (size_t j = steps_.size(); j-- > 0;) {
    Step &step = steps_[j];
    if (!step.run_backward) continue;
    stop_if_cancelled(info);
    const Node &node = spec_.nodes()[j];
    dpt_op_call &c = step.call;
    store_->before_backward(j, info.n);
    fill_call(j, c, params, pass_buffers_, info);
    c.output_grad = slot(grad_slot_[root_[node.output]]);
    // A tied parameter's gradient is its source's: this node adds into it before the source's node
    // (an earlier one) does, and the bucket hook posts it only after that node.
    float *base = grads;  // where element 0 of the flat gradient would be: base + offset
    size_t first = 0;
    if (hook.gradients != nullptr && node.parameters() > 0)
      base = hook.gradients(hook.context, j), first = node.param_offset;
    for (size_t k = 0; k < node.layout.params.size(); ++k)
      c.param_grads[k] = node.tied[k] && hook.tied_gradients != nullptr
                             ? hook.tied_gradients(hook.context, j, node.param_offsets[k])
                             : base + (node.param_offsets[k] - first);
    size_t spare = spare_slot_;
    for (size_t i = 0; i < step.grads.size(); ++i) {
      const InputGrad &ig = step.grads[i];
      c.input_grads[i] = ig.tensor == kNone ? nullptr
                         : ig.accumulate    ? slot(spare++)
                                            : slot(grad_slot_[ig.tensor]);
    }
    const double start = info.timer.op_done != nullptr ? timer_now() : 0.0;
    if (node.layout.statistics > 0)
      run_phased(j, c, info, false);
    else
      kernels_.backward(c);
    spare = spare_slot_;
    for (size_t i = 0; i < step.grads.size(); ++i) {
      const InputGrad &ig = step.grads[i];
      if (ig.tensor != kNone && ig.accumulate)
        kernels_.accumulate(slot(grad_slot_[ig.tensor]), slot(spare++),
                            info.n * spec_.tensors()[ig.tensor].shape.size());
    }
    for (size_t k = 0; k < node.layout.params.size(); ++k) c.param_grads[k] = nullptr;
    if (info.timer.op_done != nullptr)
      info.timer.op_done(info.timer.context, first_node_ + j, true, start, timer_now());
    if (hook.layer_done != nullptr) hook.layer_done(hook.context, j);
  }
}

}  // namespace dpt
