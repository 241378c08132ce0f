// What a pipeline's automatic cuts balance (TrainerConfig::pipeline_balance): one cost per node of the
// model, which balanced_cuts (parallel/pipeline_plan.hpp) divides so that the largest stage's sum is as
// small as it can be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/device.hpp"
#include "graph/model_spec.hpp"

namespace dpt {

enum class PipelineBalance {
  kWork,        // the estimated work (below): the same cuts on every machine, every run
  kTime,        // each node's measured time (torchgpipe's balance_by_time)
  kParameters,  // each node's parameters (DeepSpeed's partition_method "parameters"): memory, not time
};

// Each node's work per sample, estimated: the multiply-adds of its weight matrices (each output element
// takes fan_in of them: a convolution's C_in k^2, a dense layer's inputs) plus one operation per output
// element for everything else. Balancing it balances compute where the parameters would not: ResNet-18's
// last residual block holds 42% of its parameters but 16% of its work.
std::vector<double> estimated_work(const ModelSpec &spec);

// Each node's own parameters (floats; a tied slot is its source's and counts there): its share of the
// parameters, gradients and optimizer state a stage holds.
std::vector<double> parameter_floats(const ModelSpec &spec);

// The samples of a measuring pass when the batch is not known (TrainerConfig::pipeline_balance_batch 0).
constexpr size_t kBalanceProbeSamples = 16;

// Each node's measured seconds (forward plus backward) on `device`: the whole model trains on `samples`
// synthetic samples (inputs in [-1, 1) from the seed, token 0, label 0) once to warm up, then three times,
// each node's best of the three counted. A layer's time per sample depends on the samples (a small matrix
// product runs below the kernels' speed): measure with the micro-batch a stage's replica will run. Its memory
// (the whole model on this device) is freed before it returns; throws what a pass throws
// (DPT_ERROR_OUT_OF_MEMORY naming the device when the model does not fit).
std::vector<double> measured_times(const ModelSpec &spec, Device &device, const KernelOptions &options,
                                   DType matmul_dtype, DType activation_dtype, size_t samples, uint64_t seed);

}  // namespace dpt
