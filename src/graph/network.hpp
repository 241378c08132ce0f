// The graph executor: one replica's instance of a model description on one device. It allocates the device
// buffers a pass needs (input staging, the activations (graph/activation_store.hpp), what each op saves,
// gradient slots, scratch, statistics), runs forward over the nodes in order and backward in reverse, and
// knows no op by name: each node becomes a dpt_op_call (modules/interface/op_call.h) for the device's
// kernels; an op with batch statistics runs in two phases with the statistics summed across replicas in
// between (PassInfo::statistics). Parameters, gradients and buffers (running statistics) are flat vectors
// owned by the caller, so that the all-reduce sees one contiguous vector.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/device_kernels.hpp"
#include "core/arena.hpp"
#include "graph/activation_store.hpp"
#include "graph/model_spec.hpp"
#include "graph/pass_info.hpp"

namespace dpt {

// Called by backward() after each node's parameter gradients are final (the node's index), so that the
// caller can start reducing them while backward goes on. Function pointers: nothing to allocate per step.
struct BackwardHook {
  void (*layer_done)(void *context, size_t node) = nullptr;
  void *context = nullptr;
  // When set, called before the backward of each node with parameters: where that node's gradients go
  // (its elements [param_offset, param_offset + parameters()) of the flat gradient, which the node adds
  // into), instead of into backward's grads.
  float *(*gradients)(void *context, size_t node) = nullptr;
  // With gradients: called for each tied slot of a node (ModelSpec::tie) before its backward: where the
  // gradient of the source parameter starting at flat element `offset` goes, which the node adds into.
  float *(*tied_gradients)(void *context, size_t node, size_t offset) = nullptr;
};

// Where a network sits in a pipeline (parallel/pipeline.hpp): a stage's sub-model numbers its nodes from
// first_node of the whole model (the ops key their dropout masks, and the timeline names the ops, by the
// whole model's index), and a stage after the first computes the gradient of its input, which goes back to
// the stage before it. The default is the whole model.
struct StagePlacement {
  size_t first_node = 0;
  bool input_gradient = false;
};

class Network {
 public:
  // matmul_dtype: what the ops' matrix products take their inputs in (dpt_op_call::matmul_dtype: kF32, or
  // kBF16 / kF16 for the trainer's 16-bit precisions). activation_dtype: how activations are kept between
  // forward and backward (ActivationStore: kF32, or 16-bit copies). Throws DPT_ERROR_UNSUPPORTED when an op
  // cannot run on the kernels' device.
  Network(const ModelSpec &spec, DeviceKernels &kernels, DType matmul_dtype = DType::kF32,
          DType activation_dtype = DType::kF32, StagePlacement placement = {});

  // Makes room for slices of n samples. Allocates only when n exceeds the largest slice seen so far.
  void reserve(size_t n);
  size_t capacity() const { return capacity_; }
  // Bytes reserve() allocates per sample of capacity; activation_bytes_per_sample() of them hold the
  // activations (ActivationStore).
  size_t bytes_per_sample() const;
  size_t activation_bytes_per_sample() const { return store_->bytes_per_sample(); }
  // Bytes of device memory the network holds now (everything but the caller's parameters, gradients and
  // buffers).
  uint64_t allocated_bytes() const;
  // The slice's inputs (float32, or int32 tokens in the same 4-byte slots) and labels (targets_per_sample
  // per sample) go here before forward() (capacity samples of device memory).
  float *input() { return input_.data(); }
  int32_t *labels() { return reinterpret_cast<int32_t *>(labels_.data()); }

  // Forward over input()[0, info.n); with labels (device memory: labels()), also the loss, and for
  // training the logit gradient. Stops with DPT_ERROR_COMMUNICATION between ops once info.cancel is set.
  // buffers: the replica's spec.buffer_count() floats, updated by a training pass.
  LossStats forward(const float *params, float *buffers, const int32_t *labels, const PassInfo &info);
  // After a training forward(): adds the slice's summed gradient into grads (or where hook.gradients says).
  void backward(const float *params, float *grads, const PassInfo &info, BackwardHook hook = {});
  // True when a training pass holds collectives (ops with batch statistics): then every replica must run
  // forward and backward, also with an empty or non-finite slice, so that its peers are not left waiting.
  bool has_statistics() const { return has_statistics_; }
  // Device memory.
  const float *logits() const { return store_->at(spec_.output_tensor()); }
  // A pipeline stage (StagePlacement), device memory of capacity() samples, valid after reserve(): where
  // backward reads the gradient of the output (a stage before the last is given it by the next stage instead
  // of computing a loss), and, after backward, the gradient of the input (placement.input_gradient).
  // nullptr: the stage needs no such gradient (nothing before its output has parameters; or the input's
  // gradient was not asked for).
  float *output_gradient() { return slot_of(root_[spec_.output_tensor()]); }
  const float *input_gradient() { return slot_of(0); }
  DeviceKernels &kernels() { return kernels_; }

 private:
  // Where backward puts the gradient of one input of a node: a slot of its own (the first op to reach it
  // writes it), or the spare slot, then added to the tensor's slot (a tensor several ops read).
  struct InputGrad {
    size_t tensor = 0;  // root tensor
    bool accumulate = false;
  };
  struct Step {                    // one node's pass
    dpt_op_call call{};            // shapes and attributes; pointers filled per pass
    std::vector<InputGrad> grads;  // per input; tensor == SIZE_MAX: no gradient needed
    bool run_backward = false;
  };

  void plan_gradients();
  void fill_call(size_t node, dpt_op_call &call, const float *params, float *buffers, const PassInfo &info);
  // The two phases of a training pass of an op with statistics, the reduction in between.
  void run_phased(size_t node, dpt_op_call &call, const PassInfo &info, bool forward);
  // The op timer's clock, read once the device's queue is drained (PassInfo::timer).
  double timer_now();
  float *slot(size_t index) { return slots_.empty() ? nullptr : slots_[index].data(); }
  float *slot_of(size_t root) { return grad_slot_[root] == SIZE_MAX ? nullptr : slot(grad_slot_[root]); }

  const ModelSpec &spec_;
  DeviceKernels &kernels_;
  size_t first_node_ = 0;            // StagePlacement::first_node
  std::vector<size_t> root_;         // per tensor: the tensor whose memory it is (views alias)
  std::vector<bool> requires_grad_;  // per tensor: depends on a parameter
  std::vector<size_t> grad_slot_;    // per root tensor that needs a gradient: its slot
  size_t grad_slots_ = 0;            // slots of max_width_ floats per sample, the spares included
  size_t spare_slot_ = 0;            // the first spare
  std::vector<Step> steps_;
  size_t capacity_ = 0;
  size_t max_width_ = 0;  // largest per-sample tensor
  bool has_statistics_ = false;
  std::vector<DeviceBuffer> statistics_;     // per node: two sets of doubles (this slice's, the global)
  std::vector<double> host_statistics_;      // staging for the reduction, two of the largest set
  DeviceBuffer input_, labels_, scratch_;    // labels_: int32 in float-sized slots
  std::vector<DeviceBuffer> saved_, slots_;  // slots_: gradient slots, the spares last
  std::unique_ptr<ActivationStore> store_;   // (made once the backward plan is known)
  float *pass_buffers_ = nullptr;            // the buffers of the last forward (backward continues its pass)
};

}  // namespace dpt
