// Sharded gradients (ZeRO stage 2) on GPU replicas: no replica holds the whole gradient. Within one process,
// or across every GPU of an MPI job (the world scope: one communicator over every process's GPUs, the job's
// layout of ranges).
// Backward writes each gradient bucket (plan_buckets: whole layers, back to front) into the replica's one
// staging bucket in its GPU's memory; once a replica has finished a bucket its device thread meets the
// others' at a barrier, and replica 0's thread reduce-scatters the bucket into the replicas' ranges
// (ShardLayout; a replica's gradient buffer is its range) while the others wait at a second barrier: a
// NCCL communicator's ranks are driven from one thread. On distinct GPUs: one ncclReduce per range, rooted
// at its owner (a 16-bit wire: the module's 16-bit reduce of the ranges), started on the replicas'
// communication streams beside backward (CudaCollective::start_reduce_ranges); each replica has two staging
// buckets, and once a bucket is started the streams are made to wait (on the device) for the one before it,
// whose staging the next bucket reuses; replica 0 waits for them all after backward. On one GPU (cuda:0x2)
// the virtual all-reduce of the buckets, then each owner's copy of its range, waited for bucket by bucket:
// one staging bucket then suffices. The first micro-batch of a window writes its sums into
// the ranges, later ones add theirs (reduced in place in the owner's staging bucket, then added: the sum
// first, then one addition, as on CPU devices). A tied parameter's gradient (ModelSpec::tie) has two writers:
// the tying node, early in backward, adds into the source's place in the staging bucket when the source's
// bucket is the one open, else into a small per-replica copy in the GPU's memory (TiedSources), which becomes
// the source's part of the staging bucket when that bucket opens, instead of zeros (as on CPU devices: the
// unsharded backward's order of additions, so its bits).
//
// Bits: on one GPU and against the simulator, those of the unsharded all-reduce (sums in rank order); on
// distinct GPUs NCCL's reduce, which for two ranks is the all-reduce's one addition and beyond two may add
// in another order than its all-reduce.
//
// A 16-bit wire (allreduce_dtype) gives the bits of the 16-bit all-reduce (backend_interface.h's rule, in
// rank order on every path).
//
// Several MPI processes each sharding within itself (the process scope, hybrid: every process's replica r
// owns the same range): each bucket is reduced to its owners within the process as above; at the end of the
// window, from the trainer's thread, the ranges (the window's sums over this process's replicas) are summed
// over the processes (copied to one host buffer, World::all_reduce, copied back): the CPU path's order
// (ShardedGradientCollective: within the process, the window, then across), so its bits, on a 16-bit wire
// too (World::all_reduce's 16-bit sum); the trainer refuses a pipeline and sharded parameters on GPUs
// before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "comm/thread_collective.hpp"
#include "comm/wire_type.hpp"
#include "comm/world.hpp"
#include "graph/model_spec.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/tied_sources.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class CudaShardedGradientCollective final : public GradientCollective {
 public:
  // Allocates each replica's staging bucket in its GPU's memory (DPT_ERROR_OUT_OF_MEMORY naming the GPU).
  // local: the replicas' threads (the device group's collective), aborted with the group; each reduction is
  // recorded on the replica's compute row of the timeline (it waits for it). world: the MPI
  // processes (nullptr or one: this process alone), whose GPUs share the layout `shards` (world_scope:
  // collective, every process creates its part) or not (refused).
  CudaShardedGradientCollective(ThreadCollective &local,
                                const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
                                size_t bucket_bytes, const ShardLayout &shards, WireType wire,
                                const World *world, bool world_scope, double timeout_seconds,
                                TraceRecorder &trace);

  // The communicator over every replica of the job (nullptr in the hybrid, whose NCCL communicator is this
  // process's alone: batch statistics then go over the host and MPI).
  CudaCollective *collective() { return world_ != nullptr ? nullptr : collective_.get(); }

  bool overlaps_backward() const override { return true; }
  bool reduces_every_micro_batch() const override { return true; }
  void start_micro_batch(bool first_of_window, bool last_of_window) override;
  BackwardHook backward_hook(size_t rank) override;
  BackwardHook probe_hook(size_t rank) override;
  void finish_backward(size_t rank) override;
  // The hybrid: the ranges summed over the processes (nothing otherwise: backward reduced them).
  void reduce_between_phases(bool) override;
  void reduce_in_update(size_t, bool) override {}
  void gather_between_phases(const std::vector<size_t> &bounds) override;
  // The reductions ran during backward. Overlapped: their span from the first start to the end of the
  // wait, the wait after backward exposed; otherwise backward waited for each: all of their time exposed.
  AllReduceTimes times(bool) const override {
    if (overlap_) return {world_seconds_, span_seconds_ + world_seconds_, wait_seconds_ + world_seconds_};
    return {world_seconds_, seconds_[0] + world_seconds_, seconds_[0] + world_seconds_};
  }
  RankReduction rank_reduction(size_t rank, bool) const override;
  uint64_t staging_bytes(size_t rank) const override {
    return (slots_[rank].size() + (tied_.empty() ? 0 : tied_grads_[rank].size())) * sizeof(float);
  }

 private:
  // One replica's progress through the buckets of the current backward. Each on its own cache line.
  struct alignas(64) Lane {
    CudaShardedGradientCollective *owner = nullptr;
    size_t rank = 0;
    size_t opened = 0;   // buckets whose staging has been zeroed and handed to backward
    size_t reduced = 0;  // buckets reduced
    bool probe = false;  // a measured backward: nothing is reduced, the staging is reused at once
  };
  static float *gradients(void *context, size_t node);
  static float *tied_gradients(void *context, size_t node, size_t offset);
  static void layer_done(void *context, size_t node);
  void open_next(Lane &lane);
  // Device thread rank: bucket `bucket` reduce-scattered over every replica (a collective of the threads).
  void reduce(size_t rank, size_t bucket);
  // Replica 0's thread, every replica waiting: the reduce-scatter itself, on every replica's stream.
  void reduce_bucket(size_t bucket);
  // Replica rank's staging of bucket `bucket` (overlapped: one of two, by the bucket's parity).
  float *slot(size_t rank, size_t bucket);
  // parts_ and slot_pointers_ of bucket `bucket`; then local rank r's part: its offset in the bucket, its
  // length, where it lies in r's range.
  void plan_parts(size_t bucket);
  size_t part(size_t r) const;
  size_t part_length(size_t r) const;
  float *own(size_t r, const GradientBucket &b) const;
  // Replica 0's thread: a later micro-batch's sums of bucket `bucket` (in the owners' staging, the reduce
  // ordered before) added into the ranges.
  void add_sums(size_t bucket);

  ThreadCollective &local_;
  const ShardLayout &shards_;
  double timeout_;
  WireType wire_;
  TraceRecorder &trace_;
  std::unique_ptr<CudaCollective> collective_;
  const World *world_ = nullptr;  // the hybrid's processes (nullptr: one communicator over every replica)
  std::vector<float> host_;       // the hybrid's host copy of the ranges
  double world_seconds_ = 0;      // the hybrid's sum over the processes, in the last window
  std::vector<DeviceKernels *> kernels_;
  std::vector<GradientBucket> buckets_;
  std::vector<size_t> bucket_of_node_;  // per node with parameters: its bucket
  std::vector<size_t> node_offsets_;    // per node: its param_offset
  // Reduces started on a communication stream beside backward (GPUs of their own, any wire): two
  // staging buckets per replica, a bucket reusing the one of the bucket two before it.
  bool overlap_ = false;
  size_t largest_ = 0;               // floats of the largest bucket
  std::vector<DeviceBuffer> slots_;  // per replica: the staging buckets, the largest bucket's size each
  double first_start_ = 0;           // when replica 0 started the micro-batch's first bucket
  double wait_seconds_ = 0, span_seconds_ = 0;  // overlapped: the window's waits after backward, spans
  TiedSources tied_;
  std::vector<size_t> tied_bucket_;       // per tied source: its bucket
  std::vector<DeviceBuffer> tied_grads_;  // per replica: the tying nodes' contributions, packed
  std::vector<float *> shard_gradients_, params_;
  std::vector<Lane> lanes_;
  bool accumulate_ = false;  // this micro-batch adds into the ranges (not the first of its window)
  // Scratch of reduce_bucket (kept: a step allocates nothing).
  std::vector<size_t> parts_;  // every rank's (of every process) part of the bucket
  std::vector<const float *> sends_;
  std::vector<float *> recvs_, slot_pointers_;
  std::vector<std::pair<size_t, size_t>> whole_bucket_ = {{0, 0}};  // one GPU: the bucket's range
  std::vector<double> seconds_;  // per replica: its reductions in the last window
};

}  // namespace dpt
