// Sharded parameters (ZeRO stage 3) on CPU devices: each replica holds its range of the parameters only
// (ShardLayout). A pass reads a node's parameters from the replica's gather slot, into which the node's
// bucket (plan_buckets: whole layers) is copied from the owners' ranges the first time one of its nodes
// asks, and kept until a node of another bucket asks (forward and backward each visit a bucket's nodes one
// after the other, so a bucket is gathered once per pass and direction). The CPU devices share memory, so
// a gather is a copy out of the peers' buffers, which nobody writes during a pass: the update runs in a
// phase of its own. The values are copies: a pass computes the very bits it computes from whole
// parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/model_spec.hpp"
#include "graph/pass_info.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class ParameterGatherer {
 public:
  // The model has no tied parameters (ParameterSource). Allocates one slot of the largest bucket in each
  // replica's device memory (DPT_ERROR_OUT_OF_MEMORY naming the device).
  ParameterGatherer(const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
                    size_t bucket_bytes, const ShardLayout &shards, TraceRecorder &trace);

  // For a pass of replica rank, on its device thread: forgets what the slot held (the parameters may have
  // changed since the last pass).
  ParameterSource source(size_t rank) const;
  uint64_t slot_bytes(size_t rank) const { return slots_[rank].size() * sizeof(float); }

 private:
  struct alignas(64) Lane {
    const ParameterGatherer *owner = nullptr;
    size_t rank = 0;
    size_t bucket = SIZE_MAX;  // the bucket in the slot
  };
  static const float *node_parameters(void *context, size_t node);
  void gather(size_t rank, size_t bucket) const;

  const ShardLayout &shards_;
  TraceRecorder &trace_;
  std::vector<GradientBucket> buckets_;
  std::vector<size_t> bucket_of_node_, node_offsets_;  // per node (with parameters): its bucket, its offset
  std::vector<const float *> ranges_;                  // each replica's parameter buffer: its range
  mutable std::vector<DeviceBuffer> slots_;            // per replica
  mutable std::vector<Lane> lanes_;
};

}  // namespace dpt
