// The gradient reduction of a pipeline on GPUs (parallel/pipeline.hpp): at the end of a window the R
// replicas of each stage all-reduce the stage's gradient (its range and a tied parameter's mirror) among
// themselves, one CudaCollective per stage (NCCL among distinct GPUs, the module's virtual all-reduce among
// replicas sharing one), from the trainer's thread between the backward and update phases, as
// CudaGradientCollective does for a data-parallel trainer (a CUDA context is used by one thread at a time,
// and the device workers are idle then). With the optimizer sharded among a stage's replicas, each updates
// its part of the stage and the parts are gathered afterwards, from the same thread
// (CudaCollective::all_gather: NCCL broadcasts from each part's owner, or peer copies among replicas sharing
// a GPU). One process; with one replica per stage there is nothing to reduce.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"

namespace dpt {

class CudaStageGradientCollective final : public GradientCollective {
 public:
  // replicas: stage d / replicas_per_stage on device d (CUDA devices); parts: empty, or (a sharded optimizer)
  // per stage its replicas' parts, replicas_per_stage + 1 offsets from the stage's first parameter. Throws as
  // CudaCollective does (DPT_ERROR_UNSUPPORTED: a stage's replicas partly sharing a GPU).
  CudaStageGradientCollective(const std::vector<std::unique_ptr<Replica>> &replicas,
                              size_t replicas_per_stage, double timeout_seconds, WireType wire,
                              std::vector<std::vector<size_t>> parts);

  void reduce_between_phases(bool reduced) override;
  void reduce_in_update(size_t, bool) override {}
  // Every stage's replicas gather its parts (the layout's bounds are not used: each stage has its own).
  void gather_between_phases(const std::vector<size_t> &bounds) override;
  // The stages reduce one after the other: the step waits for all of them.
  AllReduceTimes times(bool) const override { return {seconds_, seconds_, seconds_}; }
  RankReduction rank_reduction(size_t rank, bool) const override;

 private:
  double timeout_;
  WireType wire_;
  size_t width_;
  std::vector<std::unique_ptr<CudaCollective>> stages_;  // per stage (none with one replica per stage)
  std::vector<std::vector<float *>> grads_, params_;     // per stage, its replicas' buffers
  std::vector<std::vector<size_t>> parts_;
  std::vector<size_t> floats_;  // per stage, the floats all-reduced
  double seconds_ = 0;
};

}  // namespace dpt
