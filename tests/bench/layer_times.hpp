// Per-layer forward and backward times of a model on one device (one thread), for dptrain_bench.
#pragma once

#include <cstdio>
#include <string>

#include "graph/tensor.hpp"

namespace dpt::bench {

// Prints a table (and, when csv is not null, rows "layer,<name>,<precision>,<metric>,<value>"); precision:
// the matrix products' inputs (kF32, kBF16, kF16), as dpt_trainer_options.precision sets them.
void print_layer_times(const std::string &model, size_t batch, size_t reps, DType precision, std::FILE *csv);

}  // namespace dpt::bench
