// One replica's network on one device: the layers of a model description plus the device buffers a pass
// needs (input staging, activations, saved state, gradient ping-pong, scratch). Parameters and gradients
// are flat buffers owned by the caller, so that the all-reduce sees one contiguous vector. Every pass runs
// through the device's kernels, so the same network runs on a CPU device or a GPU.
#pragma once

#include <memory>
#include <vector>

#include "backend/device_kernels.hpp"
#include "core/arena.hpp"
#include "nn/layer.hpp"
#include "nn/model_spec.hpp"
#include "nn/softmax_cross_entropy.hpp"

namespace dpt {

enum class InitScheme { kUniformFanIn, kNormal };

// Fills params (parameter_count floats) deterministically from the seed. Biases are zero.
void init_parameters(const ModelSpec &spec, float *params, uint64_t seed, InitScheme scheme, float std);

// Called by backward() after each layer's parameter gradients are final (the layer's index), so that the
// caller can start reducing them while backward goes on. A function pointer: nothing to allocate per step.
struct BackwardHook {
  void (*layer_done)(void *context, size_t layer) = nullptr;
  void *context = nullptr;
};

class Network {
 public:
  // Throws DPT_ERROR_UNSUPPORTED when a layer cannot run on the kernels' device.
  Network(const ModelSpec &spec, DeviceKernels &kernels);

  // Makes room for slices of n samples. Allocates only when n exceeds the largest slice seen so far.
  void reserve(size_t n);
  size_t capacity() const { return capacity_; }
  // Bytes reserve() allocates per sample of capacity.
  size_t bytes_per_sample() const;
  // The slice's inputs and labels go here before forward() (capacity samples of device memory).
  float *input() { return input_.data(); }
  int32_t *labels() { return reinterpret_cast<int32_t *>(labels_.data()); }

  // Forward over input()[0, info.n); with labels (device memory: labels()), also the loss, and for
  // training the logit gradient. Stops with DPT_ERROR_COMMUNICATION between layers once info.cancel is set.
  LossStats forward(const float *params, const int32_t *labels, const PassInfo &info);
  // After a training forward(): adds the slice's summed gradient into grads.
  void backward(const float *params, float *grads, const PassInfo &info, BackwardHook hook = {});
  // Device memory.
  const float *logits() const { return outputs_.back(); }
  DeviceKernels &kernels() { return kernels_; }

 private:
  const ModelSpec &spec_;
  DeviceKernels &kernels_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> param_offset_;
  size_t first_trainable_ = 0;  // backward stops at the first layer with parameters
  size_t capacity_ = 0;
  size_t max_width_ = 0;  // largest per-sample tensor of any layer boundary
  DeviceBuffer input_, labels_, scratch_, grad_a_, grad_b_;  // labels_: int32 in float-sized slots
  std::vector<DeviceBuffer> activations_, saved_;
  std::vector<float *> outputs_;  // per layer; a view layer's output is its input
};

}  // namespace dpt
