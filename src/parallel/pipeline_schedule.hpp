// The order in which a pipeline stage runs the forward (F) and backward (B) passes of a step's
// micro-batches. GPipe: every forward, then every backward (in micro-batch order); a stage keeps all M
// micro-batches' activations. 1F1B (PipeDream-Flush, as Megatron-LM): stage s of S first runs
// min(S - s - 1, M) forwards, then alternates one forward and one backward, then runs the backwards left;
// it keeps at most S - s micro-batches' activations, and the bubble is GPipe's, (S - 1) / (M + S - 1) of
// the step. Both run each stage's backwards in micro-batch order, so the gradients add up in the order one
// device's accumulation adds them.
#pragma once

#include <cstddef>
#include <vector>

namespace dpt {

enum class PipelineSchedule { kOneFOneB, kGPipe };

struct PipelineOp {
  bool backward = false;
  size_t micro = 0;  // the micro-batch
};

std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, size_t stage, size_t stages,
                                       size_t micro_batches);

// The most micro-batches whose activations stage keeps at once under the schedule.
size_t micro_batches_in_flight(PipelineSchedule schedule, size_t stage, size_t stages, size_t micro_batches);

// GPipe's bubble: the fraction of a step each stage idles, (S - 1) / (M + S - 1), with equal stages.
inline double ideal_bubble(size_t stages, size_t micro_batches) {
  return double(stages - 1) / double(micro_batches + stages - 1);
}

}  // namespace dpt
