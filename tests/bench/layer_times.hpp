// Per-layer forward and backward times of a model on one device (one thread), for dptrain_bench.
#pragma once

#include <cstdio>
#include <string>

namespace dpt::bench {

// Prints a table (and, when csv is not null, rows "layer,<name>,1,<metric>,<value>").
void print_layer_times(const std::string &model, size_t batch, size_t reps, std::FILE *csv);

}  // namespace dpt::bench
