// The gradient reduction of a pipeline (parallel/pipeline.hpp): each device holds the summed gradient of
// its stage's range over its own slices, so at the end of a window the R replicas of each stage all-reduce
// that range among themselves (the DeviceGroup's subgroup of the stage), on their device threads. Across MPI
// processes (each running every stage) device 0's thread then all-reduces every stage's sum over the
// processes, one stage after the other (one thread calls MPI), and the stage's other replicas copy it. With
// the optimizer state sharded across the processes (the world scope) each process needs only its part of
// each stage: device 0 reduce-scatters the stage's range instead (World::reduce_scatter; its mirror of a
// tied parameter is still all-reduced), and the other replicas copy that part. With one replica per stage in
// one process there is nothing to reduce. With the optimizer state sharded among the stage's replicas of a
// single process, each replica needs the sums of its own part only: the replicas reduce-scatter the stage's
// range (ThreadCollective::reduce_scatter, the all-reduce's bits in each part, half its traffic; ZeRO-1's
// reduce-scatter) and all-reduce only the mirror of a tied parameter. So they do too in each process that
// runs every stage (the process scope): device 0 then all-reduces every replica's part over the processes
// piece by piece (the pieces between every process's cuts, so that processes of different widths make the
// same calls), in place in the part's owner, and the mirror from the stage's first replica; the others copy
// only the mirror.
//
// A window's last micro-batch reduces within each stage as soon as the stage's replicas have run their
// schedule (finish_backward, on their device threads), while other stages still drain the pipeline (1F1B:
// the last stage finishes first); what crosses the processes stays in the update phase (one thread calls
// MPI). The bits are those of the reduction in the update phase.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class StageGradientCollective final : public GradientCollective {
 public:
  // replicas: stage d / replicas_per_stage on device d; the group's subgroups are the stages. spans: empty,
  // or (the world scope) per stage its processes' parts, world size + 1 offsets from the stage's first
  // parameter; stage_floats: per stage, its range's length (without a mirror of a tied parameter);
  // replica_parts: empty, or (the optimizer sharded among the replicas of one process, alone or in the
  // process scope) per stage its replicas' parts, replicas_per_stage + 1 offsets from the stage's first
  // parameter. pieces: empty, or (the process scope) per stage the pieces its sums over the processes go
  // by (Trainer::stage_pieces_).
  StageGradientCollective(DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas,
                          size_t replicas_per_stage, AllReduceAlgorithm algorithm, WireType wire,
                          const World *world, double timeout_seconds, TraceRecorder &trace,
                          std::vector<std::vector<size_t>> spans, std::vector<size_t> stage_floats,
                          std::vector<std::vector<size_t>> replica_parts,
                          std::vector<std::vector<ShardPiece>> pieces)
      : group_(group),
        replicas_(replicas),
        width_(replicas_per_stage),
        algorithm_(algorithm),
        wire_(wire),
        world_(world != nullptr && world->size() > 1 ? world : nullptr),
        timeout_(timeout_seconds),
        trace_(trace),
        spans_(std::move(spans)),
        stage_floats_(std::move(stage_floats)),
        replica_parts_(std::move(replica_parts)),
        pieces_(std::move(pieces)),
        seconds_(replicas.size(), 0.0),
        finished_(replicas.size()) {}

  bool overlaps_backward() const override { return width_ > 1; }
  // Device thread rank, after its stage's schedule: the reduction among the stage's replicas.
  void finish_backward(size_t rank) override;
  void reduce_between_phases(bool) override {}
  // The reduction among the stage's replicas unless finish_backward ran it (reduced), then across the
  // processes.
  void reduce_in_update(size_t rank, bool reduced) override;
  AllReduceTimes times(bool reduced) const override;
  RankReduction rank_reduction(size_t rank, bool reduced) const override;

 private:
  DeviceGroup &group_;
  const std::vector<std::unique_ptr<Replica>> &replicas_;
  size_t width_;
  AllReduceAlgorithm algorithm_;
  WireType wire_;
  const World *world_;  // the processes, each running every stage (nullptr: this process alone)
  double timeout_;
  TraceRecorder &trace_;
  std::vector<std::vector<size_t>> spans_;
  std::vector<size_t> stage_floats_;
  std::vector<std::vector<size_t>> replica_parts_;
  std::vector<std::vector<ShardPiece>> pieces_;
  std::vector<double> seconds_;  // per rank, of the last reduction (in the update phase)
  struct Span {
    double start = 0, end = 0;
  };
  std::vector<Span> finished_;  // per rank, of the last reduction after its stage's schedule

  // Among the stage's replicas: the sums of the whole range, or of the rank's part (and the mirror).
  void reduce_within_stage(size_t rank) const;

  // Device 0's thread: stage s's sum (in its first replica) over the processes.
  void reduce_across_processes(size_t s) const;
};

}  // namespace dpt
