// A pipeline whose stages are divided among the processes of an MPI job (TrainerConfig::pipeline_scope
// kWorld): this process holds the model's stages [first_stage, first_stage + its count) of total_stages.
// Its first stage takes its activations from the stage before, in process rank - stride, and hands their
// gradients back; its last stage hands its activations to process rank + stride and takes their gradients
// from it. Replica r talks to replica r there, by messages tagged with the kind and r, which arrive in the
// order sent (both schedules send and receive a boundary's micro-batches in micro-batch order). Sends are
// started from buffers the pass keeps and are finished when the device's pass ends, so no order of forwards
// and backwards can deadlock: a receive always waits for a send already started.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/world.hpp"
#include "parallel/stage_handoff.hpp"

namespace dpt {

struct PipelineNeighbours {
  const World *world = nullptr;  // nullptr: every stage is in this process
  size_t first_stage = 0, total_stages = 0;
  double timeout_seconds = 0;
  // The neighbours are processes rank - stride and rank + stride (stride processes hold copies of the same
  // stages, data parallel among them).
  size_t stride = 1;
  // The devices' memory is not the host's (GPUs): MPI sends and receives from host buffers, which the
  // pipeline copies the values out to and in from.
  bool host_staging = false;
};

class ProcessLink {
 public:
  // stages: this process's; devices: its replicas (sends are kept per device).
  ProcessLink(PipelineNeighbours neighbours, size_t stages, size_t devices);

  // The model's index of this process's first stage, and the model's stage count.
  size_t first_stage() const { return n_.first_stage; }
  bool host_staging() const { return n_.host_staging; }
  size_t total_stages() const { return n_.total_stages; }
  // Stages before this process's first (after its last) live in another process.
  bool previous() const { return previous_; }
  bool next() const { return next_; }

  // Device thread of replica r: count floats from the neighbour (the next process's when from_next) into to;
  // waits up to the timeout (DPT_ERROR_TIMEOUT, the receive withdrawn). Returns the seconds it waited for
  // the message to be sent (the stage's idle wait for its neighbour), before it came in.
  double receive(bool from_next, Crossing what, size_t r, float *to, size_t count) const;
  // Device thread d, replica r: starts sending count floats from `from` (left untouched until finish(d)).
  void send(size_t d, bool to_next, Crossing what, size_t r, const float *from, size_t count);
  // The end of device d's pass: waits for its sends, or (abandon: after a failure) withdraws them.
  void finish(size_t d, bool abandon);

 private:
  size_t neighbour(bool next) const {
    return next ? n_.world->rank() + n_.stride : n_.world->rank() - n_.stride;
  }
  static int tag(Crossing what, size_t r) { return int(what) * 64 + int(r); }  // at most 64 replicas

  PipelineNeighbours n_;
  bool previous_ = false, next_ = false;
  std::vector<std::vector<void *>> sends_;  // per device, the sends under way
};

}  // namespace dpt
