// The gradient reduction of a pipeline (parallel/pipeline.hpp): each device holds the summed gradient of
// its stage's range over its own slices, so at the end of a window the R replicas of each stage all-reduce
// that range among themselves (the DeviceGroup's subgroup of the stage), on their device threads. Across MPI
// processes (each running every stage) device 0's thread then all-reduces every stage's sum over the
// processes, one stage after the other (one thread calls MPI), and the stage's other replicas copy it.
// With one replica per stage in one process there is nothing to reduce.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

class StageGradientCollective final : public GradientCollective {
 public:
  // replicas: stage d / replicas_per_stage on device d; the group's subgroups are the stages.
  StageGradientCollective(DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas,
                          size_t replicas_per_stage, AllReduceAlgorithm algorithm, WireType wire,
                          const World *world, double timeout_seconds, TraceRecorder &trace)
      : group_(group),
        replicas_(replicas),
        width_(replicas_per_stage),
        algorithm_(algorithm),
        wire_(wire),
        world_(world != nullptr && world->size() > 1 ? world : nullptr),
        timeout_(timeout_seconds),
        trace_(trace),
        seconds_(replicas.size(), 0.0) {}

  void reduce_between_phases(bool) override {}
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
  std::vector<double> seconds_;  // per rank, of the last reduction
};

}  // namespace dpt
