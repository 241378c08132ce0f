// The starting values of a model's parameters and buffers, deterministic from the seed.
#pragma once

#include <cstdint>

#include "graph/model_spec.hpp"

namespace dpt {

enum class InitScheme { kUniformFanIn, kNormal };

// Fills params (spec.parameter_count() floats): each kFanIn tensor uniform in +-1/sqrt(fan_in) (or normal
// with std), drawn from a stream keyed by (seed, node index), so that a node's values do not depend on the
// nodes before it; kZero / kOne tensors constant.
void init_parameters(const ModelSpec &spec, float *params, uint64_t seed, InitScheme scheme, float std);
// Fills buffers (spec.buffer_count() floats) with their constants (running mean 0, running variance 1).
void init_buffers(const ModelSpec &spec, float *buffers);

}  // namespace dpt
