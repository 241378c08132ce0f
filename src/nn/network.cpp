#include "nn/network.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace dpt {

namespace {
void stop_if_cancelled(const PassInfo &info) {
  if (info.cancel != nullptr && info.cancel->load(std::memory_order_relaxed))
    throw_error(DPT_ERROR_COMMUNICATION, "pass aborted: another device failed or the deadline passed");
}
}  // namespace

void init_parameters(const ModelSpec &spec, float *params, uint64_t seed, InitScheme scheme, float std) {
  float *p = params;
  for (size_t l = 0; l < spec.layers().size(); ++l) {
    const LayerSpec &layer = spec.layers()[l];
    if (layer.parameters() == 0) continue;
    Rng rng(hash_combine(hash_combine(seed, uint64_t(Stream::kInit)), l));
    const double bound = 1.0 / std::sqrt(double(layer.fan_in()));
    for (size_t i = 0; i < layer.weights(); ++i)
      p[i] = scheme == InitScheme::kNormal ? float(rng.normal() * std)
                                           : float((2.0 * rng.uniform() - 1.0) * bound);
    std::fill(p + layer.weights(), p + layer.parameters(), 0.0f);
    p += layer.parameters();
  }
}

Network::Network(const ModelSpec &spec, DeviceKernels &kernels) : spec_(spec), kernels_(kernels) {
  size_t offset = 0, scratch = 0;
  max_width_ = spec.input().size();
  for (const auto &l : spec.layers()) {
    kernels_.check_supported(l);
    layers_.push_back(make_layer(l));
    param_offset_.push_back(offset);
    offset += l.parameters();
    scratch = std::max(scratch, kernels_.scratch_floats(*layers_.back()));
    max_width_ = std::max(max_width_, l.out.size());
  }
  first_trainable_ = layers_.size();
  for (size_t l = layers_.size(); l-- > 0;)
    if (spec.layers()[l].parameters() != 0) first_trainable_ = l;
  scratch_ = DeviceBuffer(kernels_.memory(), scratch);
  activations_.resize(layers_.size());
  saved_.resize(layers_.size());
  outputs_.assign(layers_.size() + 1, nullptr);  // last entry: the logits (input when there are no layers)
}

void Network::reserve(size_t n) {
  if (n <= capacity_) return;
  input_ = DeviceBuffer(kernels_.memory(), n * spec_.input().size());
  static_assert(sizeof(int32_t) == sizeof(float));
  labels_ = DeviceBuffer(kernels_.memory(), n);
  grad_a_ = DeviceBuffer(kernels_.memory(), n * max_width_);
  grad_b_ = DeviceBuffer(kernels_.memory(), n * max_width_);
  float *previous = input_.data();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer &layer = *layers_[l];
    if (layer.is_view()) {
      activations_[l] = DeviceBuffer();
    } else {
      activations_[l] = DeviceBuffer(kernels_.memory(), n * layer.spec().out.size());
      previous = activations_[l].data();
    }
    outputs_[l] = previous;
    saved_[l] = DeviceBuffer(kernels_.memory(), n * layer.saved_floats_per_sample());
  }
  outputs_.back() = previous;
  capacity_ = n;
}

size_t Network::bytes_per_sample() const {
  size_t floats = spec_.input().size() + 1 + 2 * max_width_;  // + 1: the label
  for (const auto &layer : layers_)
    floats += (layer->is_view() ? 0 : layer->spec().out.size()) + layer->saved_floats_per_sample();
  return floats * sizeof(float);
}

LossStats Network::forward(const float *params, const int32_t *labels, const PassInfo &info) {
  DPT_REQUIRE(info.n <= capacity_, DPT_ERROR_INTERNAL, "slice larger than the reserved capacity");
  const float *x = input_.data();
  for (size_t l = 0; l < layers_.size(); ++l) {
    stop_if_cancelled(info);
    PassInfo li = info;
    li.layer_index = l;
    if (!layers_[l]->is_view())
      kernels_.forward(*layers_[l], params + param_offset_[l], x, outputs_[l], saved_[l].data(),
                       scratch_.data(), li);
    x = outputs_[l];
  }
  if (labels == nullptr) return {};
  return kernels_.loss(x, labels, info.n, spec_.output().size(), info.training ? grad_a_.data() : nullptr);
}

void Network::backward(const float *params, float *grads, const PassInfo &info, BackwardHook hook) {
  float *dy = grad_a_.data(), *spare = grad_b_.data();
  for (size_t l = layers_.size(); l-- > first_trainable_;) {
    const Layer &layer = *layers_[l];
    if (layer.is_view()) continue;  // the gradient passes through unchanged
    stop_if_cancelled(info);
    PassInfo li = info;
    li.layer_index = l;
    const float *x = l == 0 ? input_.data() : outputs_[l - 1];
    float *dx = l == first_trainable_ ? nullptr : spare;  // nothing below needs a gradient
    kernels_.backward(layer, params + param_offset_[l], x, outputs_[l], dy, dx, grads + param_offset_[l],
                      saved_[l].data(), scratch_.data(), li);
    std::swap(dy, spare);
    if (hook.layer_done != nullptr) hook.layer_done(hook.context, l);
  }
}

}  // namespace dpt
