// Optimizer steps on flat parameter vectors: SGD (momentum, Nesterov, L2 weight decay, PyTorch semantics)
// and AdamW (decoupled weight decay), with learning-rate schedules. Every replica runs the same update on
// identical inputs, so replicas stay bitwise identical.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt {

enum class OptimizerKind { kSgd, kAdamW };
enum class ScheduleKind { kConstant, kStep, kCosine };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.1f;
  float momentum = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  ScheduleKind schedule = ScheduleKind::kConstant;
  uint64_t warmup_steps = 0;
  uint64_t step_size = 0;
  float gamma = 0.1f;
  uint64_t total_steps = 0;
  float min_learning_rate = 0.0f;
  float clip_norm = 0.0f;  // 0 = no clipping
  // weight_decay applies to the weight matrices only (ParamInfo::matrix), not to every parameter.
  bool decay_matrices_only = false;
};

// Throws DPT_ERROR_INVALID_ARGUMENT (or OUT_OF_RANGE) naming the offending field.
void validate(const OptimizerConfig &config);

// Learning rate of update number t (0-based).
double learning_rate_at(const OptimizerConfig &config, uint64_t t);

// Floats of optimizer state per parameter (momentum buffer, Adam moments).
size_t state_floats_per_parameter(const OptimizerConfig &config);

// Applies update number t: the gradient used is grad_scale * grads[i] (grads hold the all-reduced sums;
// grad_scale folds in 1/global batch and the clipping factor). state starts zeroed.
void apply_update(const OptimizerConfig &config, uint64_t t, float lr, float grad_scale, float *params,
                  const float *grads, float *state, size_t count);

// Euclidean norm of grads, summed in double in a fixed order that depends on the index only (so every
// replica, and every device that holds a shard of the gradient, gets the same value): the vector is cut
// into blocks of kNormBlock floats; in each block element i goes to partial sum i % 8, in index order, and
// the eight partial sums are added in order; the block sums are added in block order.
constexpr size_t kNormBlock = 4096;
double l2_norm(const float *grads, size_t count);
// The block sums of the elements [begin, end) of a vector, range[0] being element begin: sums[b] for the
// blocks the range covers, in order. With begin a multiple of kNormBlock and end a multiple or the vector's
// end, the sums are l2_norm's; a block the range covers in part gets the sum of that part (a pipeline
// stage's range: the parts' sums, added, differ from the block's in the last bits).
void l2_block_sums(const float *range, size_t begin, size_t end, double *sums);
// sqrt of the block sums added in block order: l2_norm from l2_block_sums over the whole vector.
double l2_norm_of_blocks(const double *sums, size_t blocks);
inline size_t norm_blocks(size_t count) {
  return (count + kNormBlock - 1) / kNormBlock;
}

}  // namespace dpt
