// A parameter tied across pipeline stages that different MPI processes hold (TrainerConfig::pipeline_scope
// kWorld; GPT-2's LM head in the last stage, its token embedding in the first): the later stage's mirror of
// the source (PipelineStage::mirror_source) is in one process, the source in another. What a tie within one
// process does by copies (Trainer::add_mirror_gradients, refresh_mirrors) goes here as messages, each
// replica r to replica r of copy c of the other stage: in the update phase, after each stage's gradient is
// summed among its replicas and copies, the mirror sends its gradient, which the source adds to its own
// before the norm; after the update the source sends its new values into the mirror. Every send is
// finished before the call returns (a window skipped for a non-finite norm then leaves nothing in flight).
// On GPUs (host_staging) MPI reads and writes host buffers, which the values are copied out to and in from.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/device_kernels.hpp"
#include "comm/world.hpp"

namespace dpt {

class RemoteTies {
 public:
  struct End {
    size_t stage = 0;     // this process's index of the stage that holds this end
    bool mirror = false;  // this end is the mirror (else the source)
    size_t process = 0;   // the process that holds the other end (the same copy of its stage)
    size_t offset = 0;    // this end's first float in the stage's parameter and gradient buffers
    size_t floats = 0;
    size_t tie = 0;  // the tie's index in the model (its messages' tags)
  };

  RemoteTies() = default;
  RemoteTies(const World *world, std::vector<End> ends, size_t devices, double timeout_seconds,
             bool host_staging);

  bool empty() const { return ends_.empty(); }
  // The most floats one end exchanges (the room a GPU needs to add a received gradient).
  size_t largest() const;
  // Update phase, device thread `device` (its stage `stage`, replica r of it): the mirror's gradient to the
  // source, whose kernels add it (with host staging from `scratch`, room for largest() floats on the
  // device).
  void exchange_gradients(size_t device, size_t stage, size_t r, DeviceKernels &kernels, float *grads,
                          float *scratch);
  // After the update: the source's values to the mirror.
  void exchange_values(size_t device, size_t stage, size_t r, DeviceKernels &kernels, float *params);

 private:
  // Above the stage hand-overs' tags (ProcessLink: kind * 64 + replica), one pair per tie.
  static int tag(size_t tie, bool values, size_t r) { return int(1024 + (2 * tie + values) * 64 + r); }
  // Sends floats of the device's `from` (through the device's host buffer with host staging).
  void send(size_t device, DeviceKernels &kernels, const float *from, size_t floats, size_t process, int tag);
  float *host_buffer(size_t device, size_t floats);

  const World *world_ = nullptr;
  std::vector<End> ends_;
  std::vector<std::vector<float>> host_;  // per device: what it sends or receives, in host memory
  double timeout_seconds_ = 0;
  bool host_staging_ = false;
};

}  // namespace dpt
