#include "nn/network.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace dpt {

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

Network::Network(const ModelSpec &spec, MemoryArena &arena) : spec_(spec), arena_(arena) {
  size_t offset = 0, scratch = 0;
  max_width_ = spec.input().size();
  for (const auto &l : spec.layers()) {
    layers_.push_back(make_layer(l));
    param_offset_.push_back(offset);
    offset += l.parameters();
    scratch = std::max(scratch, layers_.back()->scratch_floats());
    max_width_ = std::max(max_width_, l.out.size());
  }
  first_trainable_ = layers_.size();
  for (size_t l = layers_.size(); l-- > 0;)
    if (spec.layers()[l].parameters() != 0) first_trainable_ = l;
  scratch_ = DeviceBuffer(arena_, scratch);
  activations_.resize(layers_.size());
  saved_.resize(layers_.size());
  outputs_.assign(layers_.size() + 1, nullptr);  // last entry: the logits (input when there are no layers)
}

void Network::reserve(size_t n) {
  if (n <= capacity_) return;
  input_ = DeviceBuffer(arena_, n * spec_.input().size());
  grad_a_ = DeviceBuffer(arena_, n * max_width_);
  grad_b_ = DeviceBuffer(arena_, n * max_width_);
  float *previous = input_.data();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer &layer = *layers_[l];
    if (layer.is_view()) {
      activations_[l] = DeviceBuffer();
    } else {
      activations_[l] = DeviceBuffer(arena_, n * layer.spec().out.size());
      previous = activations_[l].data();
    }
    outputs_[l] = previous;
    saved_[l] = DeviceBuffer(arena_, n * layer.saved_floats_per_sample());
  }
  outputs_.back() = previous;
  capacity_ = n;
}

LossStats Network::forward(const float *params, const int32_t *labels, const PassInfo &info) {
  DPT_REQUIRE(info.n <= capacity_, DPT_ERROR_INTERNAL, "slice larger than the reserved capacity");
  const float *x = input_.data();
  for (size_t l = 0; l < layers_.size(); ++l) {
    PassInfo li = info;
    li.layer_index = l;
    if (!layers_[l]->is_view())
      layers_[l]->forward(params + param_offset_[l], x, outputs_[l], saved_[l].data(), scratch_.data(), li);
    x = outputs_[l];
  }
  if (labels == nullptr) return {};
  return softmax_cross_entropy(x, labels, info.n, spec_.output().size(),
                               info.training ? grad_a_.data() : nullptr);
}

void Network::backward(const float *params, float *grads, const PassInfo &info, BackwardHook hook) {
  float *dy = grad_a_.data(), *spare = grad_b_.data();
  for (size_t l = layers_.size(); l-- > first_trainable_;) {
    const Layer &layer = *layers_[l];
    if (layer.is_view()) continue;  // the gradient passes through unchanged
    PassInfo li = info;
    li.layer_index = l;
    const float *x = l == 0 ? input_.data() : outputs_[l - 1];
    float *dx = l == first_trainable_ ? nullptr : spare;  // nothing below needs a gradient
    layer.backward(params + param_offset_[l], x, outputs_[l], dy, dx, grads + param_offset_[l],
                   saved_[l].data(), scratch_.data(), li);
    std::swap(dy, spare);
    if (hook.layer_done != nullptr) hook.layer_done(hook.context, l);
  }
}

}  // namespace dpt
