// Sharded parameters (ZeRO stage 3): each replica holds its range of the parameters only (ShardLayout). A
// pass reads a node's parameters from the replica's gather slot, into which the node's bucket (plan_buckets:
// whole layers) is copied from the owners' ranges the first time one of its nodes asks, and kept until a
// node of another bucket asks (forward and backward each visit a bucket's nodes one after the other, so a
// bucket is gathered once per pass and direction). A gather is a copy out of the peers' buffers, which
// nobody writes during a pass (the update runs in a phase of its own): a memcpy between CPU devices, a
// peer copy queued on the replica's stream between GPUs (the trainer drains every stream after the update,
// so no copy reads a range before its update is in). The values are copies: a pass computes the very bits it
// computes from whole parameters. A tied slot (ModelSpec::tie) reads its source from a small per-replica copy
// of the tied sources (TiedSources), gathered at the start of every pass: the source's bucket is elsewhere in
// the pass. Sharded across the devices of every MPI process, the other processes' ranges of a bucket are read
// from them one-sidedly (ParameterOwners), each device thread on its own; optionally read ahead (the
// trainer's prefetch_parameters, across processes or on GPUs, whose copies then run on a copy stream beside
// the compute): each replica has a second slot, into which the bucket the pass will ask for next (the one
// after the current, in the direction the pass goes: forward and backward each visit the buckets in order)
// is read while the current one's layers run. A pass's last bucket has none after it, so no
// read outlives a pass that ends normally; one that an error left behind is finished when the next pass
// starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/model_spec.hpp"
#include "graph/pass_info.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/parameter_owners.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/tied_sources.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class ParameterGatherer {
 public:
  // Allocates one slot of the largest bucket (two when reading ahead) and the tied sources' copy in each
  // replica's device memory (DPT_ERROR_OUT_OF_MEMORY naming the device). Across processes
  // (placement.world): collective (ParameterOwners), and reads ahead if read_ahead is set.
  ParameterGatherer(const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
                    size_t bucket_bytes, const ShardLayout &shards, TraceRecorder &trace,
                    WorldPlacement placement, bool read_ahead);
  ~ParameterGatherer();

  // For a pass of replica rank, on its device thread: forgets what the slots held (the parameters may have
  // changed since the last pass; a read ahead left by a failed pass is finished) and gathers the tied
  // sources.
  ParameterSource source(size_t rank) const;
  // Where the ranges are: every parameter is read through it.
  const ParameterOwners &owners() const { return owners_; }
  // The slots (two when reading ahead) and the tied sources' copy of replica rank.
  uint64_t slot_bytes(size_t rank) const {
    return (slots_per_replica() * slots_[rank * slots_per_replica()].size() +
            (tied_.empty() ? 0 : tied_values_[rank].size())) *
           sizeof(float);
  }

 private:
  struct alignas(64) Lane {
    const ParameterGatherer *owner = nullptr;
    size_t rank = 0;
    size_t bucket = SIZE_MAX;    // the bucket in the current slot
    size_t previous = SIZE_MAX;  // the bucket before it in this pass
    size_t current = 0;          // which of the replica's slots is current
    size_t ahead = SIZE_MAX;     // the bucket being read into the other slot
    ParameterOwners::PendingCopy pending;
  };
  size_t slots_per_replica() const { return read_ahead_ ? 2 : 1; }
  float *slot(const Lane &lane, size_t which) const {
    return slots_[lane.rank * slots_per_replica() + which].data();
  }
  static const float *node_parameters(void *context, size_t node);
  static const float *tied_parameters(void *context, size_t offset);
  // Makes bucket the lane's current one: the read ahead's slot when it holds it, else copied now; then
  // starts reading the next one ahead.
  void bring(Lane &lane, size_t bucket) const;
  // Finishes the lane's read ahead, if any (its bytes unused).
  void settle(Lane &lane) const;

  ParameterOwners owners_;
  TraceRecorder &trace_;
  std::vector<GradientBucket> buckets_;
  std::vector<size_t> bucket_of_node_, node_offsets_;  // per node (with parameters): its bucket, its offset
  bool read_ahead_ = false;                            // asked for, and across processes or on GPUs
  mutable std::vector<DeviceBuffer> slots_;            // per replica, slots_per_replica() each
  TiedSources tied_;
  mutable std::vector<DeviceBuffer> tied_values_;  // per replica, packed
  mutable std::vector<Lane> lanes_;
};

}  // namespace dpt
