// The all-reduce of the replicas' summed gradients, behind one interface. The trainer picks the
// implementation once, when it is created, from the kind of its devices, and its step calls it at fixed
// points without knowing which one it is:
//
//   backward phase, device thread rank   backward_hook(rank), finish_backward(rank)  (overlapped only)
//   trainer thread, between the phases   reduce_between_phases(reduced)
//   update phase, device thread rank     reduce_in_update(rank, reduced)
//   trainer thread, after the update     times(reduced)
//
// Each implementation reduces at the point its devices allow: HostGradientCollective (CPU devices, whose
// threads are their compute) on the device threads, over the group's ThreadCollective and the MPI World,
// or during backward through the BucketReducer; ShardedGradientCollective (CPU devices, sharded
// gradients) during the backward of every micro-batch, into each rank's shard; CudaGradientCollective
// (GPU replicas) on the trainer's thread while the workers are idle, since a CUDA context is used by one
// thread at a time.
//
// Deadlines and aborts: what a device thread waits on in here is aborted with the DeviceGroup (its
// ThreadCollective and BucketReducer) when a peer fails or the deadline passes, or bounded by the timeout
// (World, NCCL). A failure leaves the gradients in an unknown state: the trainer then refuses further work.
//
// Batch norm's statistics, a few doubles summed in the middle of forward and backward, are not here: the
// pass calls a StatisticsReducer (graph/pass_info.hpp; parallel/statistics_reducer.hpp on the host,
// parallel/cuda_statistics_reducer.hpp over NCCL), made by the trainer beside the gradient collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/network.hpp"

namespace dpt {

// What one window's reduction took, for StepStats.
struct AllReduceTimes {
  double in_update = 0;  // the part spent inside the update (not counted as update_seconds)
  double total = 0;      // allreduce_seconds
  double exposed = 0;    // allreduce_exposed_seconds: the part the step waited for after backward
};

class GradientCollective {
 public:
  virtual ~GradientCollective() = default;

  // True when the last micro-batch of a window reduces its gradients during backward (bucket overlap);
  // the trainer then passes reduced = true to the calls below for that window.
  virtual bool overlaps_backward() const { return false; }
  // True when every micro-batch (not only a window's last) is reduced during backward: the gradient is
  // sharded, so no device can hold a window's sum of its own.
  virtual bool reduces_every_micro_batch() const { return false; }
  // Trainer thread, before the backward phase of a micro-batch that overlaps (the first and the last of its
  // accumulation window: one micro-batch a window is both).
  virtual void start_micro_batch(bool /*first_of_window*/, bool /*last_of_window*/) {}
  // Device thread rank: the hook for a backward that is measured, not reduced (SplitPolicy::kAuto's
  // probes), when the gradient is not a whole vector on the rank.
  virtual BackwardHook probe_hook(size_t /*rank*/) { return {}; }
  // True when the reduction leaves the whole summed gradient on every rank; false when each rank holds the
  // sums of the range it owns only (the norm then comes from the ranges' block sums).
  virtual bool sums_whole() const { return true; }
  // Bytes the collective keeps in rank's device memory (gradient staging).
  virtual uint64_t staging_bytes(size_t /*rank*/) const { return 0; }
  // Device thread rank, an overlapped micro-batch, before backward: the hook that hands each gradient
  // bucket over as soon as backward has finished it. Allocates nothing.
  virtual BackwardHook backward_hook(size_t /*rank*/) { return {}; }
  // Device thread rank, after the backward of an overlapped micro-batch (also one that skipped backward:
  // an empty or non-finite slice, so the peers' reduction still completes): hands over the buckets still
  // held back and waits until every bucket is reduced on this rank. Throws DPT_ERROR_COMMUNICATION when
  // aborted.
  virtual void finish_backward(size_t /*rank*/) {}

  // Trainer thread, after the backward phase and before the update phase, while every device worker is
  // idle. Throws as the underlying collective does.
  virtual void reduce_between_phases(bool reduced) = 0;
  // Device thread rank, first in the update phase: afterwards the rank's gradient buffer holds the sum
  // over every replica of every process, at least in the range the rank owns (ShardLayout: the whole
  // vector unless the optimizer is sharded). Throws as the underlying collective does.
  virtual void reduce_in_update(size_t rank, bool reduced) = 0;
  // Trainer thread, after an update phase in which each replica updated only the range it owns of whole
  // parameter vectors (sharded optimizer state, bounds: the layout's ranks + 1 offsets, within the process or
  // across the job), where the devices cannot gather
  // inside the phase (GPUs: CPU devices all-gather on their threads): afterwards every replica holds every
  // range. Throws as the underlying copies do.
  virtual void gather_between_phases(const std::vector<size_t> & /*bounds*/) {}
  // Trainer thread, after the update phase: the timings of the window's reduction.
  virtual AllReduceTimes times(bool reduced) const = 0;
  // Trainer thread, after a reduction: rank's share of it, as NCCL's tests count a collective: its own
  // seconds, and the bytes its bus bandwidth divides by them (the float32 gradient's bytes times
  // 2 (K - 1) / K for an all-reduce, (K - 1) / K for a reduce-scatter).
  struct RankReduction {
    double seconds = 0, bus_bytes = 0;
    double beside = 0;  // of seconds, what ran beside the rank's own compute (a pipeline stage's buckets)
  };
  virtual RankReduction rank_reduction(size_t rank, bool reduced) const = 0;
};

}  // namespace dpt
