// The gradient reduction of a pipeline on GPUs (parallel/pipeline.hpp): at the end of a window the R
// replicas of each stage all-reduce the stage's gradient (its range and a tied parameter's mirror) among
// themselves, one CudaCollective per stage (NCCL among distinct GPUs, the module's virtual all-reduce among
// replicas sharing one), from the trainer's thread between the backward and update phases, as
// CudaGradientCollective does for a data-parallel trainer (a CUDA context is used by one thread at a time,
// and the device workers are idle then). Across the processes of an MPI world (each running every stage on
// its own GPUs) a stage's communicator spans every process's replicas of it. With the optimizer sharded among
// the ranks of a stage's communicator (its replicas in one process, or every process's in the world shard
// scope) on distinct GPUs, each rank needs only its part's sums: the stage's range is reduced to the parts'
// owners (CudaCollective::reduce_ranges, one ncclReduce per part, ZeRO-1's reduce-scatter: half an
// all-reduce's bytes; a tied parameter's mirror still all-reduced), else all-reduced whole. Each rank
// updates its part of the stage and the parts are gathered afterwards, from the same thread
// (CudaCollective::all_gather: peer copies among the process's replicas; NCCL broadcasts from each part's
// owner when the parts are the communicator's ranks'). In the process scope across processes (the parts are
// each process's own, the communicator spans the processes) each piece between every process's part cuts
// is reduced to its owner in one process and then sent to its owners in the others (process_routes,
// CudaCollective::exchange; in buckets, each bucket's part started after its reduce: start_exchange). With
// one replica per stage in one process there is nothing to reduce.
//
// A window's last micro-batch reduces each stage as soon as its replicas have run their schedule, while
// other stages still drain the pipeline (their GPUs are others): the stage's device threads meet at the
// stage's barrier and its first replica's thread reduces the stage over its communicator (the stage's
// contexts are idle then); stages reduce at once on communicators of disjoint GPUs. A stage whose gradient
// spans several buckets (plan_buckets over its sub-model) on GPUs of its own (all-reduced whole, or its
// range reduced to the parts' owners and a tied parameter's mirror all-reduced) reduces earlier still, beside
// its own last backward, as CudaGradientCollective does for a data-parallel trainer: each bucket started on
// the communication streams by the stage's first replica's thread once every replica of the stage has queued
// the bucket's backward, one wait after the schedule. Earlier micro-batches (accumulation) reduce nothing.
// The reduction's bits are those of the reduction after the phase.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class CudaStageGradientCollective final : public GradientCollective {
 public:
  // replicas: stage d / replicas_per_stage on device d (CUDA devices); world: the MPI processes (nullptr:
  // this one alone; collective: every process creates the stages' communicators in stage order); parts:
  // empty, or (a sharded optimizer) per stage its replicas' parts, replicas_per_stage + 1 offsets from the
  // stage's first parameter. Throws as CudaCollective does (DPT_ERROR_UNSUPPORTED: a stage's replicas partly
  // sharing a GPU, or sharing one across processes).
  // group: the trainer's devices, whose subgroups are the stages (DeviceGroup::enable_subgroups). buckets:
  // per stage of this process, plan_buckets of its sub-model (ranges of its gradient buffer; empty: none).
  // trace: the timeline's bucket reductions, on the communication row of each stage's first replica.
  // routes: empty, or (the process scope across processes) per stage of this process, the routes of its
  // pieces over its communicator (process_routes; every process passes them, one of one replica too).
  CudaStageGradientCollective(DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas,
                              size_t replicas_per_stage, const World *world, double timeout_seconds,
                              WireType wire, std::vector<std::vector<size_t>> parts,
                              const std::vector<std::vector<GradientBucket>> &buckets, TraceRecorder &trace,
                              const std::vector<ProcessRoutes> &routes = {});

  // Stage s's communicator (its replicas in every process), or nullptr when it has none (one replica per
  // stage in one process).
  CudaCollective *stage(size_t s) { return stages_.empty() ? nullptr : stages_[s].get(); }

  bool overlaps_backward() const override { return !stages_.empty(); }
  void start_micro_batch(bool first_of_window, bool last_of_window) override;
  // Device thread rank, the stage's last backward: the hook that starts each bucket (stages in buckets).
  BackwardHook backward_hook(size_t rank) override;
  // Device thread rank, after its stage's schedule: the stage reduced by its first replica's thread, or
  // its buckets' reductions, started during its last backward, waited for.
  void finish_backward(size_t rank) override;
  // Every stage, one after the other, unless the stages reduced at the end of their schedules.
  void reduce_between_phases(bool reduced) override;
  void reduce_in_update(size_t, bool) override {}
  // Every stage's replicas gather its parts (the layout's bounds are not used: each stage has its own).
  void gather_between_phases(const std::vector<size_t> &bounds) override;
  // total: the stages' reductions added up; exposed: after the phase every one of them (the step waits for
  // them all), or, reduced at the end of their schedules, from the last stage's start to the last end.
  AllReduceTimes times(bool) const override { return {0, seconds_, exposed_seconds_}; }
  RankReduction rank_reduction(size_t rank, bool) const override;

 private:
  double timeout_;
  WireType wire_;
  size_t width_;
  size_t ranks_ = 1;       // of each stage's all-reduce: its replicas in every process
  size_t first_rank_ = 0;  // this process's first replica's rank in a stage's communicator
  std::vector<std::unique_ptr<CudaCollective>> stages_;  // per stage (none with one replica per stage)
  std::vector<std::vector<float *>> grads_, params_;     // per stage, its replicas' buffers
  std::vector<std::vector<size_t>> parts_;
  // Per stage, the roots of its range's reduce, ranks_ + 1 offsets (empty: all-reduced whole): parts_[s]
  // when the parts are the communicator's ranks', or the process scope's routes; then the pieces sent on
  // from the roots to the other processes' owners (CudaCollective::exchange).
  std::vector<std::vector<size_t>> reduce_parts_;
  std::vector<std::vector<dpt_backend_message>> deliveries_;
  std::vector<std::vector<std::vector<dpt_backend_message>>> bucket_deliveries_;  // in buckets: per bucket
  std::vector<size_t> floats_;  // per stage, the floats all-reduced
  DeviceGroup &group_;
  double seconds_ = 0, exposed_seconds_ = 0;
  std::vector<double> starts_, ends_;  // per stage: its last reduction (at the end of its schedule)
  std::vector<double> waits_;          // per stage in buckets: when its first replica began to wait
  // Stages reduced in buckets beside their last backward: per stage its buckets' ranges (empty: the stage
  // reduces whole after its schedule), the layer that completes each, and per replica how many it started.
  std::vector<std::vector<std::pair<size_t, size_t>>> buckets_;
  std::vector<std::vector<size_t>> lowest_layer_;
  std::vector<std::vector<double>> bucket_starts_;  // per stage: when each bucket started (the timeline)
  TraceRecorder &trace_;
  struct alignas(64) Lane {
    CudaStageGradientCollective *owner = nullptr;
    size_t rank = 0, started = 0;
  };
  std::vector<Lane> lanes_;
  // reduce_to_owners' scratch, per stage (stages reduce at once), kept so that a step allocates nothing
  std::vector<std::vector<const float *>> sends_;
  std::vector<std::vector<float *>> recvs_;
  std::vector<std::vector<std::pair<size_t, size_t>>> ranges_;  // per stage: all_reduce_range's one range
  std::vector<std::vector<size_t>> bucket_parts_;  // per stage: every rank's part of a started bucket

  // Stage s's reduction over its communicator.
  void reduce_stage(size_t s);
  // Backward of rank's stage has finished layer `node` of its sub-model: the buckets it completes started.
  static void layer_done(void *context, size_t node);
  void start_bucket(size_t s, size_t begin, size_t end);
  // Bucket b of rank's stage started on its communicator by the stage's first replica's thread, between two
  // barriers of the stage's replicas (each has queued the bucket's backward; the contexts are free again).
  void start(size_t rank, size_t bucket);
  // Stage s's gradient [begin, end) all-reduced among its replicas.
  void all_reduce_range(size_t s, size_t begin, size_t end);

  // Stage s's range is reduced to its parts' owners (on distinct GPUs).
  bool reduces_to_owners(size_t s) const { return !reduce_parts_[s].empty(); }
  void reduce_to_owners(size_t s);
  // After stage s's reduce: its pieces sent on to the other processes' owners (the process scope).
  void deliver(size_t s);
};

}  // namespace dpt
