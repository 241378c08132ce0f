// Sharded gradients (ZeRO stage 2) on CPU devices: no device holds the whole gradient. Backward writes each
// gradient bucket (plan_buckets: whole layers, back to front) into one of two staging slots of the bucket
// size, and the ranks' communication threads (the BucketReducer) reduce-scatter each finished bucket from
// the slots into the ranks' shards of the gradient (ShardLayout; the replica's gradient buffer is its
// shard), while backward goes on with the layers below. A slot is reused once its previous bucket is
// reduced, i.e. every rank has read it. Every micro-batch is reduced this way: the first of a window
// stores its sums, the others add theirs. Each element is summed in the all-reduce's order
// (ThreadCollective::reduce_scatter_bucket), so with one micro-batch per window the shards hold the very
// bits of the unsharded all-reduce.
//
// A tied parameter's gradient (ModelSpec::tie) has two writers: the tying node, late in forward and so
// early in backward, and its source's node. The tying node adds into the source's place in the open slot
// when both are in one bucket, else into a small per-rank copy (TiedSources), which becomes the source's
// part of its slot when that bucket opens, instead of zeros: the source's node then adds its part, in the
// order of the unsharded backward (so the same bits).
//
// Across MPI processes the sharding is hybrid (PyTorch FSDP's HYBRID_SHARD): each process shards among its
// own devices, so the ranks of a process hold together one whole gradient; in the backward of a window's
// last micro-batch, as soon as a bucket is reduce-scattered within the process (its part of every range
// then holds the window's sum over the process), rank 0's communication thread sums that part over the
// processes on the World's buckets channel (whose collectives run on one thread per process; sync batch
// norm's sums go over the main channel meanwhile). Processes with different device counts cut their ranges
// differently: the sums go by pieces, those between the cuts of every process (each lies in one range of
// every process; pieces_over_processes), cut at the buckets, in offset order on every process, so the MPI
// calls match.
//
// Sharded across every process's devices (DPT_SHARD_SCOPE_WORLD; a model without batch statistics, since
// the communication threads then call MPI during backward, as the unsharded trainer's buckets do): the
// process's devices sum each bucket in the ring's order into one bucket buffer of device 0 (each device its
// part of it), device 0's communication thread reduce-scatters it across the processes by their spans
// (World::reduce_scatter), and each device takes its range of the job's layout from it: no device holds
// more of the gradient than its range and the staging buckets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "graph/model_spec.hpp"
#include "parallel/bucket_reducer.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/tied_sources.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class ShardedGradientCollective final : public GradientCollective {
 public:
  // Allocates the staging slots (and the tied gradients' copies) in each replica's device memory
  // (DPT_ERROR_OUT_OF_MEMORY naming the device) and enables the group's bucket reducer. world may be nullptr
  // (this process only); process_pieces: then (each process sharding among its own devices) the pieces
  // the sums over the processes go by (pieces_over_processes); process_spans: empty, or (shards laid out
  // across every process's devices) each process's span of the flat vector, world size + 1 offsets;
  // timeout_seconds bounds each sum across processes.
  ShardedGradientCollective(DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas,
                            const ModelSpec &spec, size_t bucket_bytes, AllReduceAlgorithm algorithm,
                            WireType wire, const ShardLayout &shards, const World *world,
                            std::vector<ShardPiece> process_pieces, std::vector<size_t> process_spans,
                            double timeout_seconds, TraceRecorder &trace);

  bool overlaps_backward() const override { return true; }
  bool reduces_every_micro_batch() const override { return true; }
  void start_micro_batch(bool first_of_window, bool last_of_window) override;
  BackwardHook backward_hook(size_t rank) override;
  BackwardHook probe_hook(size_t rank) override;
  void finish_backward(size_t rank) override;
  void reduce_between_phases(bool) override {}
  // Done during backward, within the process and across processes.
  void reduce_in_update(size_t, bool) override {}
  AllReduceTimes times(bool reduced) const override;
  RankReduction rank_reduction(size_t rank, bool) const override;
  uint64_t staging_bytes(size_t rank) const override;

 private:
  // One rank's progress through the buckets of the current backward. Each on its own cache line.
  struct alignas(64) Lane {
    ShardedGradientCollective *owner = nullptr;
    size_t rank = 0;
    size_t opened = 0;   // buckets whose slot has been zeroed and handed to backward
    size_t posted = 0;   // buckets handed to the reducer
    bool probe = false;  // a measured backward: nothing is reduced, slots are reused at once
  };
  static float *gradients(void *context, size_t node);
  static float *tied_gradients(void *context, size_t node, size_t offset);
  static void layer_done(void *context, size_t node);
  // Hands bucket lane.opened's slot to backward: waits until the slot's previous bucket is reduced on every
  // rank (not for a probe), then zeroes the bucket's part of it.
  void open_next(Lane &lane);
  float *slot(size_t rank, size_t bucket) { return slots_[rank][bucket % slots_[rank].size()].data(); }
  double reduce(ThreadCollective &collective, size_t rank, size_t bucket);
  // The bucket summed over every device of every process, rank's range of it into its shard.
  void reduce_across_world(ThreadCollective &collective, size_t rank, size_t bucket);

  DeviceGroup &group_;
  const ShardLayout &shards_;
  const World *world_;         // the main channel: the update phase's sums (device thread 0)
  const World *bucket_world_;  // the buckets' channel: the communication thread's sums during backward
  double timeout_;
  TraceRecorder &trace_;
  AllReduceAlgorithm algorithm_;
  WireType wire_;
  std::vector<size_t> bucket_of_node_;            // per node with parameters: its bucket
  std::vector<size_t> node_offsets_;              // per node: its param_offset
  std::vector<std::vector<DeviceBuffer>> slots_;  // [rank][slot], each the largest bucket's size
  TiedSources tied_;
  std::vector<size_t> tied_bucket_;       // per tied source: its bucket
  std::vector<DeviceBuffer> tied_grads_;  // per rank: the tying nodes' contributions, packed
  std::vector<float *> shard_gradients_;  // each rank's gradient buffer: its shard
  // Across processes: the segments summed over them, each [begin, end) of the flat vector in the shard
  // of rank `owner` here.
  std::vector<ShardPiece> pieces_;  // process_pieces
  // The process scope across processes, in a window's last micro-batch: each bucket's part of the pieces
  // summed over the processes (rank 0's thread; every rank waits for it).
  void sum_bucket_across_processes(ThreadCollective &collective, size_t rank, size_t bucket);
  // Sharded across every process's devices: the processes' spans, per bucket its split among this
  // process's devices for their sum, and the bucket buffer of that sum (in device 0's memory; none for one
  // device, whose staging slot is the sum).
  std::vector<size_t> spans_;
  std::vector<std::vector<size_t>> bucket_splits_;
  std::vector<DeviceBuffer> sum_;
  // The ranks' ranges: the layout's, or the whole vector in a process of one device (which shards nothing
  // but sums by the pieces of the processes that do).
  std::vector<size_t> bounds_;
  std::vector<Lane> lanes_;
  BucketReducer *reducer_ = nullptr;  // the group's
  std::vector<GradientBucket> buckets_;
  bool accumulate_ = false;  // this micro-batch adds into the shards (not the first of its window)
  bool sum_across_ = false;  // this micro-batch's buckets are summed over the processes (the window's last)
};

}  // namespace dpt
