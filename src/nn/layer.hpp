// The layer interface. A layer object holds only its shape; parameters, activations and scratch space are
// owned by the replica (network.hpp) and passed in, so one description serves every device.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nn/model_spec.hpp"

namespace dpt {

// What a forward/backward pass needs to know besides the tensors.
struct PassInfo {
  size_t n = 0;               // samples in this slice
  uint64_t first_sample = 0;  // position of the slice's first sample in the accumulation window
  uint64_t seed = 0;
  uint64_t step = 0;  // optimizer step being computed; keys the dropout masks
  size_t layer_index = 0;
  bool training = false;
  // Set when the pass should stop (a deadline passed or a peer device failed): checked between layers, so
  // an aborted device returns within one layer's time.
  const std::atomic<bool> *cancel = nullptr;
};

class Layer {
 public:
  explicit Layer(const LayerSpec &spec) : spec_(spec) {}
  virtual ~Layer() = default;
  const LayerSpec &spec() const { return spec_; }

  // Floats of scratch space one pass needs, independent of the batch (e.g. an im2col buffer).
  virtual size_t scratch_floats() const { return 0; }
  // Floats per sample kept from forward for backward (e.g. a dropout mask).
  virtual size_t saved_floats_per_sample() const { return 0; }
  // True when the output is the input itself (flatten): the replica aliases the buffers.
  virtual bool is_view() const { return false; }

  // y = f(x) for info.n samples.
  virtual void forward(const float *params, const float *x, float *y, float *saved, float *scratch,
                       const PassInfo &info) const = 0;
  // Given dL/dy: adds dL/dparams into dparams and writes dL/dx into dx (skipped when dx is null).
  virtual void backward(const float *params, const float *x, const float *y, const float *dy, float *dx,
                        float *dparams, const float *saved, float *scratch, const PassInfo &info) const = 0;

 private:
  LayerSpec spec_;
};

std::unique_ptr<Layer> make_layer(const LayerSpec &spec);

}  // namespace dpt
