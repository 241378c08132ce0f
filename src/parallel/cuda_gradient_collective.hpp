// The gradient all-reduce of GPU replicas (backend/cuda/collective.hpp: NCCL, also across the processes of an
// MPI world, or the virtual all-reduce of replicas sharing one GPU).
//
// With buckets (more than one, replicas on GPUs of their own; any wire), a window's last
// micro-batch reduces during backward, as PyTorch's DDP does: once every replica has queued the backward of
// a bucket's layers, their device threads meet at a barrier and replica 0's thread starts the bucket's NCCL
// all-reduce on every replica's communication stream (CudaCollective::start_all_reduce: ordered after the
// bucket's gradients, beside the backward of the layers before it); the others wait at a second barrier (a
// NCCL communicator's ranks are driven from one thread, and a context by one thread at a time). After
// backward, replica 0's thread waits for every started bucket (wait_started: bounded by the timeout, then
// aborted). Otherwise (one bucket, replicas sharing a GPU, earlier micro-batches) the
// buckets are all-reduced in one NCCL group from the trainer's thread between the backward and update
// phases, while the device workers are idle.
//
// With a sharded optimizer whose ranks are the communicator's (distinct GPUs), each bucket's part of each
// range is reduced to its owner instead (CudaCollective::start_reduce_ranges / reduce_ranges: ZeRO-1's
// reduce-scatter), the rest of a replica's gradient left as backward wrote it. In the process scope across
// processes (the layout is each process's, the communicator the job's) each piece between every process's
// cuts is reduced so to one of its owners, and after the reduces the pieces are sent on to their owners in
// the other processes (process_routes, CudaCollective::exchange; beside backward, each bucket's part
// started on the communication streams after its reduce: start_exchange).
//
// Bits: each bucket is one ncclAllReduce (or ncclReduce per part) in either case (NCCL's algorithm and order
// of sums; the simulator sums in rank order; a 16-bit wire the module's rule in rank order), the same bits
// on every replica.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "comm/thread_collective.hpp"
#include "graph/model_spec.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class CudaGradientCollective final : public GradientCollective {
 public:
  // The replicas run on CUDA devices; world: the MPI processes, each with GPU replicas of its own (nullptr:
  // this process alone). With one replica in all there is nothing to reduce. Throws as CudaCollective does
  // (DPT_ERROR_UNSUPPORTED: some replicas share a GPU and others do not, or share one across processes).
  // wire: what the all-reduce sends (float32, or 16-bit values: CudaCollective::all_reduce).
  // local: the replicas' threads (the device group's collective), aborted with the group; trace: where
  // each replica's overlapped reduction is recorded (its communication row). owners: a sharded optimizer's
  // layout (nullptr: none); when its ranks are the communicator's (distinct GPUs, within a process or
  // across every GPU of the job), each range's sums go to its owner only (reduce_ranges: ZeRO-1's
  // reduce-scatter, half an all-reduce's bytes), and the other ranges of a replica's gradient keep its own
  // values, which nothing reads (the norm comes from the ranges' block sums: sums_whole()). routes: the
  // layout is each process's own (the process scope) and the communicator spans the processes (distinct
  // GPUs): process_routes' plan for this process (empty: none), each piece reduced to its owner in one
  // process and sent from there to its owners in the others (CudaCollective::exchange).
  CudaGradientCollective(ThreadCollective &local, const std::vector<std::unique_ptr<Replica>> &replicas,
                         const ModelSpec &spec, size_t bucket_bytes, const World *world,
                         double timeout_seconds, WireType wire, TraceRecorder &trace,
                         const ShardLayout *owners = nullptr, ProcessRoutes routes = {});

  // nullptr with one replica. Test seam (CudaCollective::inject_hang).
  CudaCollective *collective() { return collective_.get(); }

  bool overlaps_backward() const override { return overlap_; }
  void start_micro_batch(bool first_of_window, bool last_of_window) override;
  BackwardHook backward_hook(size_t rank) override;
  void finish_backward(size_t rank) override;
  void reduce_between_phases(bool reduced) override;
  void reduce_in_update(size_t, bool) override {}
  void gather_between_phases(const std::vector<size_t> &bounds) override;
  bool sums_whole() const override { return owners_ == nullptr; }
  // Overlapped: total from the first bucket's start to the end of the wait (the GPU's own time in NCCL is
  // not measured), exposed the wait after backward; otherwise the whole reduction, all of it exposed.
  AllReduceTimes times(bool) const override { return {0, seconds_, exposed_seconds_}; }
  RankReduction rank_reduction(size_t, bool) const override { return {seconds_, bus_bytes_}; }

 private:
  // The gradient [begin, end) reduced: all-reduced, or its parts sent to their owners (owners_); started
  // beside backward or waited for.
  void reduce(size_t begin, size_t end, bool started);
  // After the reduces are in: the process scope's pieces sent on to their owners in the other processes.
  void deliver();
  // One replica's progress through the buckets of the current backward.
  struct alignas(64) Lane {
    CudaGradientCollective *owner = nullptr;
    size_t rank = 0;
    size_t started = 0;  // buckets started
  };
  static void layer_done(void *context, size_t node);
  // Device thread rank: bucket `bucket` started on every replica (a collective of the threads).
  void start(size_t rank, size_t bucket);

  ThreadCollective &local_;
  double timeout_;
  WireType wire_;
  TraceRecorder &trace_;
  std::unique_ptr<CudaCollective> collective_;
  std::vector<std::pair<size_t, size_t>> buckets_;  // ranges of the gradient, one NCCL call each
  std::vector<size_t> lowest_layer_;  // per bucket: the last of its layers that backward reaches
  std::vector<float *> grads_;        // every replica's gradient buffer
  std::vector<float *> params_;       // and parameter buffer
  bool overlap_ = false;              // buckets reduced during backward
  std::vector<Lane> lanes_;
  std::vector<std::pair<size_t, size_t>> one_bucket_ = {
      {0, 0}};              // a start's range (a step allocates nothing)
  double first_start_ = 0;  // when replica 0 started the first bucket of the overlapped backward
  double seconds_ = 0, exposed_seconds_ = 0;  // of the last reduction
  double bus_bytes_ = 0;  // an all-reduce of the gradient over every rank, as NCCL counts it
  // Reduced to the owners of a sharded optimizer's ranges: the layout, and a reduce's scratch (kept, so
  // that a step allocates nothing): every rank's part of the reduced span, and the send and receive
  // pointers of this process's replicas.
  const ShardLayout *owners_ = nullptr;
  // The parts' roots: the layout's bounds and this process's first rank in them, or the process scope's
  // (ProcessRoutes::reduce_bounds, the process's first global rank) with its messages.
  std::vector<size_t> reduce_bounds_;
  size_t first_rank_ = 0;
  std::vector<dpt_backend_message> deliveries_;
  std::vector<std::vector<dpt_backend_message>> bucket_deliveries_;  // overlapped: per bucket, its part
  std::vector<size_t> parts_;
  std::vector<const float *> sends_;
  std::vector<float *> recvs_;
};

}  // namespace dpt
