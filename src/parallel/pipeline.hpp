// Pipeline model parallel (TrainerConfig::pipeline_stages): S stages of the model, each on R devices
// (data-parallel replicas of the stage), K = S x R; device d holds stage d / R as replica d % R. A step's
// batch is cut into micro-batches, and each micro-batch into R slices (the even split, as a data-parallel
// trainer splits it). Replica r of each stage runs the forwards and backwards of its slices in its stage's
// schedule's order (pipeline_schedule.hpp) on its device's thread, taking each slice's input activations
// from replica r of the stage before and its output gradient from replica r of the stage after, copying
// them from buffers in the sending device's memory (StageHandoff says when they are there; on GPUs a peer
// copy, the sender's stream drained before it posts). A replica keeps one activation context (a Network)
// per micro-batch in flight, and adds its slices' gradients into its own range in micro-batch order, as one
// device's accumulation over the same micro-batches would; the stage's replicas sum their batch statistics
// per micro-batch (sync batch norm) and, at the end of the window, their gradients
// (StageGradientCollective; on GPUs CudaStageGradientCollective). CPU devices or GPUs.
// The stages may also be divided among the processes of an MPI job (ProcessLink): this process then holds a
// run of them, and the values that cross to the stage before its first or after its last travel as
// messages between the processes (CPU devices).
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "comm/thread_collective.hpp"
#include "graph/network.hpp"
#include "parallel/pipeline_plan.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/process_link.hpp"
#include "parallel/replica.hpp"
#include "parallel/stage_handoff.hpp"

namespace dpt {

class Pipeline {
 public:
  // replicas[d] holds stage d / replicas_per_stage (of this process's stages); its network is the
  // replica's first activation context.
  Pipeline(const std::vector<PipelineStage> &stages, std::vector<std::unique_ptr<Replica>> &replicas,
           size_t replicas_per_stage, size_t micro_batches, PipelineSchedule schedule, DType matmul_dtype,
           DType activation_dtype, const std::atomic<bool> &aborted, PipelineNeighbours neighbours = {});

  size_t stages() const { return stages_.size(); }
  size_t replicas_per_stage() const { return width_; }
  size_t micro_batches() const { return micro_batches_; }
  PipelineSchedule schedule() const { return schedule_; }
  const PipelineStage &stage_of(size_t device) const { return stages_[device / width_]; }
  // This process holds the model's last stage (its devices compute the loss and the logits).
  bool holds_last_stage() const { return !link_.next(); }

  // The samples of the first (largest) micro-batch of a training batch of n.
  size_t first_micro_batch(size_t n) const {
    const size_t count = std::min(micro_batches_, n);
    return (n + count - 1) / count;
  }
  // The samples each device trains on in a batch of n (the slices of its replica index, summed).
  std::vector<size_t> samples_per_device(size_t n) const;
  // Caller thread: cuts a batch of n samples into micro-batches (a training pass: at most micro_batches(),
  // as even as possible; evaluation and prediction: none larger than a training micro-batch, so that they
  // allocate no more contexts), each into the replicas' slices, and makes room for them on every device.
  // Throws DPT_ERROR_OUT_OF_MEMORY naming the device before any pass starts.
  void reserve(size_t n, bool training);
  // Caller thread, after reserve: each first-stage replica's slices of the inputs (4-byte values: floats or
  // int32 tokens) into its device, and each last-stage replica's slices of the labels (nullptr: none); a
  // process without the model's first (last) stage takes no inputs (labels).
  void copy_in(const void *x, const int32_t *labels);
  // Device thread d: the forwards and backwards of a training step's slices, their gradients added into
  // grads (the stage's range). base: the pass's fields (first_sample: the batch's position in the
  // accumulation window; rank and statistics: the replica's among its stage's). Returns the loss
  // statistics (last stage; zero elsewhere) and sets busy_seconds(d). last_backward: the hook of the
  // stage's last backward (its gradients are final layer by layer then: a stage's buckets reduced beside it).
  LossStats train(size_t d, const PassInfo &base, const float *params, float *grads, float *buffers,
                  BackwardHook last_backward = {});
  // Device thread d: the forwards of an evaluation (with_labels) or a prediction (the logits kept on the
  // last stage's devices for copy_logits).
  LossStats infer(size_t d, const PassInfo &base, const float *params, float *buffers, bool with_labels);
  // Device thread d, after reserve(n, true): the forwards of a training pass in the schedule's order, without
  // labels or backwards, recomputing the running statistics (Trainer::recompute_statistics): each
  // micro-batch is a batch of their plain average, micro-batch m of base.average_statistics's batch k the
  // ((k - 1) * micro-batches of the pass + m + 1)-th, as the stages normalise per micro-batch.
  void recompute_statistics(size_t d, const PassInfo &base, const float *params, float *buffers);
  // Caller thread, after a prediction of n samples: n * output floats, in sample order (holds_last_stage()).
  void copy_logits(float *out) const;
  // The time device d spent in its forwards and backwards in the last pass, and in handing values over
  // (copying its inputs and gradients in and its outputs and input gradients out); the rest was waiting.
  double busy_seconds(size_t d) const { return busy_[d]; }
  double transfer_seconds(size_t d) const { return transfer_[d]; }
  // Device memory d holds besides its replica's vectors: its activation contexts and the buffers of the
  // values it receives.
  uint64_t allocated_bytes(size_t d) const;

 private:
  size_t stage(size_t d) const { return d / width_; }
  // The model's last stage (the loss); this process's last stage, whose outputs go to the next process.
  bool last(size_t d) const { return stage(d) + 1 == stages_.size() && !link_.next(); }
  bool sends_to_next_process(size_t d) const { return stage(d) + 1 == stages_.size() && link_.next(); }
  bool receives_from_previous_process(size_t d) const { return stage(d) == 0 && link_.previous(); }
  Network &context(size_t d, size_t micro) {
    const size_t c = micro % contexts_[d].size();
    return c == 0 ? replicas_[d]->network : *contexts_[d][c];
  }
  // Slice (micro-batch m, replica r): its samples, its first sample in the batch, and its first sample in
  // the replica's own buffers (which hold the replica's slices one after the other).
  struct Slice {
    size_t count = 0, first = 0, local = 0;
  };
  const Slice &slice(size_t m, size_t r) const { return slices_[m * width_ + r]; }
  LossStats train_pass(size_t d, const PassInfo &base, const float *params, float *grads, float *buffers,
                       BackwardHook last_backward);
  LossStats infer_pass(size_t d, const PassInfo &base, const float *params, float *buffers, bool with_labels);
  void recompute_pass(size_t d, const PassInfo &base, const float *params, float *buffers);
  void receive_input(size_t d, Network &net, size_t m, bool with_labels);
  void send_output(size_t d, Network &net, size_t m);
  // Backward of micro-batch m on device d: the gradient of its output in, the gradient of its input out.
  void receive_output_gradient(size_t d, Network &net, size_t m);
  void send_input_gradient(size_t d, Network &net, size_t m);
  // Runs device d's part of a pass; the sends it started to other processes end with it, also when it
  // throws.
  template <typename Pass>
  auto run_pass(size_t d, Pass pass) -> decltype(pass());

  const std::vector<PipelineStage> &stages_;
  std::vector<std::unique_ptr<Replica>> &replicas_;
  size_t width_;  // replicas per stage
  size_t micro_batches_;
  PipelineSchedule schedule_;
  StageHandoff handoff_;  // per boundary and replica index: b * width_ + r
  // Per device: its activation contexts (index 0 unused: the replica's network), its busy time.
  std::vector<std::vector<std::unique_ptr<Network>>> contexts_;
  std::vector<double> busy_, transfer_;
  // Per stage: its schedule for the current micro-batch count.
  std::vector<std::vector<PipelineOp>> ops_;
  // The current pass: the slices (micro-batch major), each replica index's samples; the largest training
  // micro-batch reserved.
  std::vector<Slice> slices_;
  std::vector<size_t> replica_samples_;
  size_t micro_capacity_ = 0;
  size_t planned_batch_ = 0;  // the pass the slices, schedules and buffers are planned for
  bool planned_training_ = false;
  // Per boundary b and replica r (b * width_ + r): the activations crossing it (in replica r of stage b's
  // memory) and their gradients (in replica r of stage b + 1's), the replica's slices in order: each in its
  // sender's memory, from which the receiver copies once the handoff is posted (on GPUs a peer copy, which
  // the module takes from another device into its own).
  std::vector<DeviceBuffer> activations_, gradients_;
  // Per replica index r: the first stage's inputs; the last stage's labels and logits.
  std::vector<DeviceBuffer> input_, labels_, logits_;
  // Stages in other processes: the link to them, and per replica index r what it sends to them (its last
  // stage's activations, its first stage's input gradients, the replica's slices in order); per device room
  // for a gradient its stage has no slot for.
  ProcessLink link_;
  std::vector<DeviceBuffer> sent_activations_, sent_gradients_;
  std::vector<std::vector<float>> unused_gradient_;
  // With host staging (GPUs), what is sent lives in host memory instead (per replica index r, as
  // sent_activations_ and sent_gradients_), and each device receives into a host buffer of its own first.
  std::vector<std::vector<float>> host_sent_activations_, host_sent_gradients_, host_received_;
  // A slice's pass: base's fields, its samples and its first sample's position in the window.
  static PassInfo slice_info(const PassInfo &base, const Slice &sl);
  // Device thread d: count floats from `from` (on any device) into `to` (on d), queued on d.
  void copy_within(size_t d, float *to, const float *from, size_t count);
  // Where replica r's message to another process starts, at float offset (activations to the next
  // process, or input gradients to the one before): in device memory, or with host staging on the host.
  float *message(bool activations, size_t r, size_t offset);
  // Device thread d: count floats of its device's `from` into message `to` (queued; the caller
  // synchronizes before MPI reads it).
  void copy_to_message(size_t d, float *to, const float *from, size_t count);
  // Device thread d, replica r: count floats from the neighbouring process into `to` on d (with host
  // staging through d's host buffer, copied in before it returns); returns the seconds it waited for them.
  double receive_message(size_t d, bool from_next, Crossing what, float *to, size_t count);
};

}  // namespace dpt
