// One device's full copy of the model: its kernels (on a GPU: its own stream), network, parameters, summed
// gradients and optimizer state, all in the device's memory. The optimizer state covers the parameters the
// replica updates: all of them, or its shard (ShardLayout) when the optimizer is sharded; so do the
// gradient and the parameters when they are sharded too. A pipeline stage's replica holds the stage's
// model (parallel/pipeline_plan.hpp): its range of the parameters, gradients, state and buffers.
#pragma once

#include <memory>

#include "backend/device.hpp"
#include "graph/network.hpp"
#include "optim/optimizer.hpp"

namespace dpt {

struct Replica {
  Replica(Device &device, const ModelSpec &spec, const OptimizerConfig &optimizer,
          const KernelOptions &options, DType matmul_dtype, DType activation_dtype, size_t parameter_count,
          size_t gradient_count, size_t state_parameters, StagePlacement placement = {})
      : device(&device),
        kernels(device.create_kernels(options)),
        network(spec, *kernels, matmul_dtype, activation_dtype, placement),
        params(kernels->memory(), parameter_count),
        grads(kernels->memory(), gradient_count),
        buffers(kernels->memory(), spec.buffer_count()),
        state(kernels->memory(), state_parameters * state_floats_per_parameter(optimizer)) {
    grads.zero();
    state.zero();
  }

  Device *device;
  std::unique_ptr<DeviceKernels> kernels;  // first: everything below lives in its memory
  Network network;
  DeviceBuffer params, grads, buffers, state;  // buffers: running statistics, not trained
  // This replica's slice of the current batch, and what its task found: loss statistics, the gradient
  // norm, timings. Kept here, not on the caller's stack: a task that outlives a timeout still writes them.
  size_t begin = 0, count = 0;
  LossStats stats;
  bool nonfinite = false;  // the slice's inputs or loss held a NaN or an infinity
  double norm = 0;         // the all-reduced gradient's norm, divided by the window's samples
  // The last step call's own work on this device: its forward and backward; its update (with the norm's
  // block sums and the parameter all-gather when sharded, without the reduction).
  double compute_seconds = 0, update_seconds = 0;
  double probe_seconds = 1e300;
};

}  // namespace dpt
