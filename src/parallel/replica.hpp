// One device's full copy of the model: network, parameters, summed gradients and optimizer state, all in
// the device's arena.
#pragma once

#include "backend/device.hpp"
#include "nn/network.hpp"
#include "optim/optimizer.hpp"

namespace dpt {

struct Replica {
  Replica(Device &device, const ModelSpec &spec, const OptimizerConfig &optimizer)
      : device(&device),
        network(spec, device.arena()),
        params(device.arena(), spec.parameter_count()),
        grads(device.arena(), spec.parameter_count()),
        state(device.arena(), spec.parameter_count() * state_floats_per_parameter(optimizer)) {
    grads.zero();
    state.zero();
  }

  Device *device;
  Network network;
  DeviceBuffer params, grads, state;
  // This replica's slice of the current batch, and its loss statistics.
  size_t begin = 0, count = 0;
  LossStats stats;
  bool nonfinite = false;  // the slice's inputs or loss held a NaN or an infinity
};

}  // namespace dpt
