// The gradient all-reduce of GPU replicas (backend/cuda/collective.hpp: NCCL, also across the processes of an
// MPI world, or the virtual all-reduce of replicas sharing one GPU), one group of bucketed ranges per
// window, from the trainer's thread between the backward and update phases: a CUDA context is used by one
// thread at a time, and the device workers are idle then.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "graph/model_spec.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/replica.hpp"

namespace dpt {

class CudaGradientCollective final : public GradientCollective {
 public:
  // The replicas run on CUDA devices; world: the MPI processes, each with GPU replicas of its own (nullptr:
  // this process alone). With one replica in all there is nothing to reduce. Throws as CudaCollective does
  // (DPT_ERROR_UNSUPPORTED: some replicas share a GPU and others do not, or share one across processes).
  // wire: what the all-reduce sends (float32, or 16-bit values: CudaCollective::all_reduce).
  CudaGradientCollective(const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
                         size_t bucket_bytes, const World *world, double timeout_seconds, WireType wire);

  // nullptr with one replica. Test seam (CudaCollective::inject_hang).
  CudaCollective *collective() { return collective_.get(); }

  void reduce_between_phases(bool reduced) override;
  void reduce_in_update(size_t, bool) override {}
  void gather_between_phases(const std::vector<size_t> &bounds) override;
  AllReduceTimes times(bool) const override { return {seconds_, seconds_, seconds_}; }
  RankReduction rank_reduction(size_t, bool) const override { return {seconds_, bus_bytes_}; }

 private:
  double timeout_;
  WireType wire_;
  std::unique_ptr<CudaCollective> collective_;
  std::vector<std::pair<size_t, size_t>> buckets_;  // ranges of the gradient, one NCCL call each
  std::vector<float *> grads_;                      // every replica's gradient buffer
  std::vector<float *> params_;                     // and parameter buffer
  double seconds_ = 0;                              // of the last reduction
  double bus_bytes_ = 0;  // an all-reduce of the gradient over every rank, as NCCL counts it
};

}  // namespace dpt
