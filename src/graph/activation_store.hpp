// Where one replica's activations live during a training pass. In float32 storage (the default) every root
// tensor has a float32 buffer of its own for the whole pass. In 16-bit storage (TrainerConfig::
// activation_dtype bfloat16 or float16, as autocast keeps a bf16 matmul's output) a tensor lives in one of a
// few float32 working slots while forward produces and reads it, is rounded into a 16-bit copy once its last
// forward reader has run, and is widened back into a slot just before the backward of a node that reads or
// made it: the activations take about half the memory, and backward sees each activation rounded to the
// 16-bit type (docs/precision.md). The model's input (the executor's staging buffer) and its output (the
// logits, which the loss reads) stay float32. The executor calls after_forward after each node's forward
// and before_backward before each node's backward; at() is the float32 data of a tensor for the node.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "backend/device_kernels.hpp"
#include "core/arena.hpp"
#include "graph/model_spec.hpp"

namespace dpt {

class ActivationStore {
 public:
  // root: per tensor, the tensor whose memory it is (views alias); backward: per node, whether its
  // backward runs. dtype: kF32, kBF16 or kF16.
  ActivationStore(const ModelSpec &spec, const std::vector<size_t> &root, const std::vector<bool> &backward,
                  DeviceKernels &kernels, DType dtype);

  // Room for n samples (allocates; the previous contents are lost). input: the staging buffer of tensor 0.
  void reserve(size_t n, float *input);
  // Bytes reserve() allocates per sample (the input's staging buffer not counted).
  size_t bytes_per_sample() const { return bytes_per_sample(plan_); }
  // Bytes of device memory the store holds now.
  uint64_t allocated_bytes() const;
  DType dtype() const { return dtype_; }

  // The float32 data of a tensor where the current node reads or writes it.
  float *at(size_t tensor) const { return data_[root_[tensor]]; }
  // A forward pass starts: the stored tensors in their forward slots.
  void begin_forward();
  // The node's forward has run: a training pass keeps the 16-bit copy of each stored tensor it read last.
  void after_forward(size_t node, size_t n, bool training);
  // Widens the node's inputs and output into their working slots (16-bit storage).
  void before_backward(size_t node, size_t n);

 private:
  size_t floats(size_t t, size_t n) const { return n * spec_.tensors()[t].shape.size(); }

  struct Use {  // a stored root in a working slot for a node's backward
    size_t root, slot;
    bool widen;  // false: the slot still holds its values
  };
  struct Plan {
    std::vector<bool> stored;               // per tensor: a root kept in 16 bits between its uses
    std::vector<size_t> forward_slot;       // per stored root: its working slot while forward uses it
    std::vector<std::vector<size_t>> done;  // per node: the stored roots whose last forward reader it is
    std::vector<std::vector<Use>> backward_slots;  // per node
    std::vector<bool> copied;    // per tensor: a stored root that backward widens from its 16-bit copy
    std::vector<size_t> widths;  // per working slot: its floats per sample
  };
  Plan plan(size_t largest, const std::vector<bool> &backward) const;
  size_t bytes_per_sample(const Plan &p) const;

  const ModelSpec &spec_;
  const std::vector<size_t> root_;  // (a copy: the executor may move)
  DeviceKernels &kernels_;
  DType dtype_;
  Plan plan_;
  std::vector<DeviceBuffer> own_;     // per tensor: the float32 buffer of a root that is not stored
  std::vector<DeviceBuffer> stores_;  // per tensor: the 16-bit copy of a stored root (2 per float)
  std::vector<DeviceBuffer> work_;    // the working slots
  std::vector<float *> data_;         // per root tensor: where its float32 data is now
};

}  // namespace dpt
