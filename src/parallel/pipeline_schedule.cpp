#include "parallel/pipeline_schedule.hpp"

#include <algorithm>

namespace dpt {

std::vector<PipelineOp> stage_schedule(PipelineSchedule schedule, size_t stage, size_t stages,
                                       size_t micro_batches) {
  std::vector<PipelineOp> ops;
  const size_t m = micro_batches;
  const size_t warmup = schedule == PipelineSchedule::kGPipe ? m : std::min(stages - stage - 1, m);
  for (size_t i = 0; i < warmup; ++i) ops.push_back({false, i});
  for (size_t i = 0; i + warmup < m; ++i) {
    ops.push_back({false, warmup + i});
    ops.push_back({true, i});
  }
  for (size_t i = m - warmup; i < m; ++i) ops.push_back({true, i});
  return ops;
}

size_t micro_batches_in_flight(PipelineSchedule schedule, size_t stage, size_t stages, size_t micro_batches) {
  if (schedule == PipelineSchedule::kGPipe) return micro_batches;
  return std::min(stages - stage, micro_batches);
}

}  // namespace dpt
