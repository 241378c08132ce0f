// The gradient all-reduce of CPU replicas, on their device threads: hierarchical_all_reduce over the
// group's ThreadCollective and (across processes) the World in the update phase, or, with gradient
// buckets, the group's BucketReducer during backward. With the optimizer state sharded among the process's
// devices (ZeRO-1 in one process, or in each process of a job: the process scope), each rank needs the sums
// of its own range: the gradient (or each bucket) is reduce-scattered within the process, half the bytes of
// an all-reduce, with the all-reduce's bits in every range (ThreadCollective adds each element in its ring
// chunk's order however it is cut), and across processes each rank's range is then all-reduced over them
// (no broadcast within the process afterwards). With the state sharded across every process's devices, the
// sum across the processes is a reduce-scatter too (hierarchical_reduce_scatter): each process receives
// only its span.
#pragma once

#include <cstddef>
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
#include "parallel/trace_recorder.hpp"

namespace dpt {

class HostGradientCollective final : public GradientCollective {
 public:
  // Enables the group's bucket reducer when bucket_bytes plans more than one bucket and there is someone
  // to reduce with (a second device or other processes). world may be nullptr (this process only).
  // wire: what the reductions send (float32, or 16-bit values: hierarchical_all_reduce). shards: the
  // ranges the ranks own (kept by the caller); sharded, a rank needs only its range summed. process_spans:
  // empty, or (the state sharded across every process's devices) each process's span of the flat vector,
  // world->size() + 1 offsets. process_pieces: empty, or (the optimizer state sharded within each process
  // of the job, in one process at least) pieces_over_processes(shards, every process's device count).
  HostGradientCollective(DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas,
                         const ModelSpec &spec, size_t bucket_bytes, AllReduceAlgorithm algorithm,
                         const World *world, double timeout_seconds, WireType wire, const ShardLayout &shards,
                         std::vector<size_t> process_spans, std::vector<ShardPiece> process_pieces,
                         TraceRecorder &trace);

  bool overlaps_backward() const override { return reducer_ != nullptr; }
  BackwardHook backward_hook(size_t rank) override;
  void finish_backward(size_t rank) override;
  void reduce_between_phases(bool) override {}
  void reduce_in_update(size_t rank, bool reduced) override;
  AllReduceTimes times(bool reduced) const override;
  RankReduction rank_reduction(size_t rank, bool reduced) const override;

 private:
  // Posts each bucket to the reducer as soon as backward has finished its lowest layer. One per rank,
  // each on its own cache line (written by its device thread only).
  struct alignas(64) Poster {
    BucketReducer *reducer = nullptr;
    size_t rank = 0;
    size_t posted = 0;
    static void layer_done(void *context, size_t layer);
  };

  DeviceGroup &group_;
  const World *world_;         // the main channel: the update phase's sums (device thread 0)
  const World *bucket_world_;  // the buckets' channel: the communication threads' sums during backward
  AllReduceAlgorithm algorithm_;
  WireType wire_;
  double timeout_;
  const ShardLayout &shards_;
  TraceRecorder &trace_;
  std::vector<float *> grads_;        // every replica's gradient buffer
  size_t count_;                      // floats in each
  BucketReducer *reducer_ = nullptr;  // the group's, when it overlaps
  std::vector<Poster> posters_;
  std::vector<double> seconds_;     // of each rank's reduction in the update phase
  std::vector<size_t> spans_;       // process_spans
  std::vector<size_t> to_first_;    // device 0 owning the whole vector: hierarchical_reduce_scatter's reduce
  std::vector<ShardPiece> pieces_;  // process_pieces
  // Sums [begin, end) of rank's gradient over every device of every process (or, with spans_, this
  // process's span of it), across the processes on world's channel.
  double sum_range(ThreadCollective &local, const World *world, size_t rank, size_t begin, size_t end);
  // The optimizer state sharded among this process's devices (alone, or in each process of the job: the
  // process scope): each rank needs the sums of its range only.
  bool scatters() const { return shards_.sharded() && spans_.empty(); }
  // The sum over the processes goes piece by piece (pieces_ not empty): every process does so, even one
  // of a single device, which shards nothing.
  bool by_pieces() const { return !pieces_.empty(); }
  // Each piece's part of [begin, end), summed over this process's devices in its owner's buffer, all-reduced
  // over the processes from rank 0's thread (the World is used by one thread per process), in offset order;
  // every rank waits for it.
  double sum_pieces_across_processes(ThreadCollective &local, const World *world, size_t rank, size_t begin,
                                     size_t end);
  // The sum of [begin, end) that rank needs: its range (scatters()) or the whole, over every device of every
  // process.
  double reduce_range(ThreadCollective &local, const World *world, size_t rank, size_t begin, size_t end);
};

}  // namespace dpt
