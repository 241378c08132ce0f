// What a forward/backward pass needs to know besides the tensors.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dpt {

// Sums a replica's per-pass statistics (batch_norm's sums) over every replica of the global batch: the
// trainer's devices and every MPI process. Called from replica rank's device task in the middle of a pass;
// every replica makes the same calls with the same counts, so it is a collective: it throws
// DPT_ERROR_COMMUNICATION (or DPT_ERROR_TIMEOUT) when a peer fails or the deadline passes. The sums are
// identical, bit for bit, on every replica.
// values are in host memory, or in the replica's device memory where device_memory() (a NCCL reducer: the
// sums never leave the GPUs).
class StatisticsReducer {
 public:
  virtual ~StatisticsReducer() = default;
  virtual bool device_memory() const { return false; }
  virtual void all_reduce(size_t rank, double *values, size_t count) = 0;
};

// Where a pass reads the parameters of a node when the replica does not hold them whole (sharded
// parameters): node_parameters returns where the node's own parameters [param_offset, param_offset +
// parameters()) are, valid until the next call. Unset: the pass's params + offsets.
struct ParameterSource {
  const float *(*node_parameters)(void *context, size_t node) = nullptr;
  void *context = nullptr;
  // With node_parameters: where a tied slot reads the source parameter starting at flat element `offset`.
  const float *(*tied_parameters)(void *context, size_t offset) = nullptr;
};

// Times each op of a pass when set (a timeline of the trainer's work): op_done(context, node, backward,
// start, end), the clock being platform::now_seconds(). The executor drains the device's queue before
// reading the clock, so on a GPU an op's interval is its device time (and a timed pass pays a
// synchronisation per op; work between ops, such as 16-bit activation copies, shows as gaps).
struct OpTimer {
  void (*op_done)(void *context, size_t node, bool backward, double start, double end) = nullptr;
  void *context = nullptr;
};

struct PassInfo {
  size_t n = 0;               // samples in this slice
  uint64_t first_sample = 0;  // position of the slice's first sample in the accumulation window
  uint64_t seed = 0;
  uint64_t step = 0;  // optimizer step being computed; keys the dropout masks
  bool training = false;
  // Set when the pass should stop (a deadline passed or a peer device failed): checked between ops, so
  // an aborted device returns within one op's time.
  const std::atomic<bool> *cancel = nullptr;
  // Training passes of a model with batch statistics: the replica's rank and the reducer (nullptr: this
  // replica is the whole batch), and whether the ops normalise with the global batch's statistics (sync)
  // or their slice's (local).
  size_t rank = 0;
  StatisticsReducer *statistics = nullptr;
  bool sync_statistics = false;
  // Training passes: the loss gradient is multiplied by this before backward (loss scaling; a power of two).
  float loss_scale = 1.0f;
  ParameterSource parameters = {};
  OpTimer timer = {};
  // Training passes that recompute the running statistics (Trainer::recompute_statistics): k > 0 when this
  // pass's batch is the k-th of their plain average (each op weighs it 1/k in place of its momentum); 0:
  // the ops' momentum.
  uint64_t average_statistics = 0;
};

}  // namespace dpt
