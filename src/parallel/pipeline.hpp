// Pipeline model parallel (TrainerConfig::pipeline_stages): stage s of the model on device s. A step's
// batch is cut into micro-batches; each stage runs their forwards and backwards in its schedule's order
// (pipeline_schedule.hpp) on its device's thread, taking each micro-batch's input activations from the
// stage before and its output gradient from the stage after through buffers in the receiving device's
// memory (StageHandoff says when they are there). A stage keeps one activation context (a Network) per
// micro-batch in flight. Each stage adds its micro-batches' gradients into its own range in micro-batch
// order, as one device's accumulation over the same micro-batches would, so no gradient crosses devices.
// CPU devices.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "graph/network.hpp"
#include "parallel/pipeline_plan.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/replica.hpp"
#include "parallel/stage_handoff.hpp"

namespace dpt {

class Pipeline {
 public:
  // replicas[s] holds stage s; its network is the stage's first activation context.
  Pipeline(const std::vector<PipelineStage> &stages, std::vector<std::unique_ptr<Replica>> &replicas,
           size_t micro_batches, PipelineSchedule schedule, DType matmul_dtype, DType activation_dtype,
           const std::atomic<bool> &aborted);

  size_t stages() const { return stages_.size(); }
  size_t micro_batches() const { return micro_batches_; }
  PipelineSchedule schedule() const { return schedule_; }
  const PipelineStage &stage(size_t s) const { return stages_[s]; }

  // Caller thread: cuts a batch of n samples into micro-batches (a training pass: at most micro_batches(),
  // as even as possible; evaluation and prediction: none larger than a training micro-batch, so that they
  // allocate no more contexts) and makes room for them on every device. Throws DPT_ERROR_OUT_OF_MEMORY
  // naming the device before any pass starts.
  void reserve(size_t n, bool training);
  // Caller thread, after reserve: the batch's inputs (4-byte values: floats or int32 tokens) into the first
  // stage's device and its labels (nullptr: none) into the last stage's.
  void copy_in(const void *x, const int32_t *labels, size_t n);
  // Device thread of stage s: the forwards and backwards of a training step's micro-batches, their
  // gradients added into grads (the stage's range). base: the pass's fields (first_sample: the batch's
  // position in the accumulation window). Returns the loss statistics (the last stage; zero elsewhere)
  // and sets busy_seconds(s).
  LossStats train(size_t s, const PassInfo &base, const float *params, float *grads, float *buffers);
  // Device thread of stage s: the forwards of an evaluation (with_labels) or a prediction (the logits kept
  // on the last stage's device for copy_logits).
  LossStats infer(size_t s, const PassInfo &base, const float *params, float *buffers, bool with_labels);
  // Caller thread, after a prediction: n * output floats.
  void copy_logits(float *out) const;
  // The time stage s spent in its forwards and backwards in the last pass (the rest was waiting).
  double busy_seconds(size_t s) const { return busy_[s]; }
  // Device memory stage s holds besides its replica's vectors: its activation contexts and the buffers of
  // the values it receives.
  uint64_t allocated_bytes(size_t s) const;

 private:
  Network &context(size_t s, size_t micro) {
    const size_t c = micro % contexts_[s].size();
    return c == 0 ? replicas_[s]->network : *contexts_[s][c];
  }
  bool last(size_t s) const { return s + 1 == stages_.size(); }
  // Micro-batch m's pass info and its first sample in the batch.
  PassInfo micro_info(const PassInfo &base, size_t m) const;
  void receive_input(size_t s, Network &net, size_t m, bool with_labels);
  void send_output(size_t s, Network &net, size_t m);

  const std::vector<PipelineStage> &stages_;
  std::vector<std::unique_ptr<Replica>> &replicas_;
  size_t micro_batches_;
  PipelineSchedule schedule_;
  StageHandoff handoff_;
  // Per stage: its activation contexts (index 0 unused: the replica's network), its schedule for the
  // current micro-batch count, its busy time.
  std::vector<std::vector<std::unique_ptr<Network>>> contexts_;
  std::vector<std::vector<PipelineOp>> ops_;
  std::vector<double> busy_;
  // The current pass: micro-batch sizes and first samples; the largest training micro-batch reserved.
  std::vector<size_t> sizes_, offsets_;
  size_t micro_capacity_ = 0, batch_capacity_ = 0;
  // Per boundary b (between stages b and b + 1): the activations crossing it (in stage b + 1's memory) and
  // their gradients (in stage b's), batch_capacity_ samples each, micro-batch m at its first sample.
  std::vector<DeviceBuffer> activations_, gradients_;
  DeviceBuffer input_, labels_, logits_;  // first stage: the inputs; last stage: labels, logits
};

}  // namespace dpt
