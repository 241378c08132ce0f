// Destroying a trainer without waiting for a device that did not come back from a timed-out call (see
// DeviceGroup::lost): the task that still runs reaches the trainer's replicas, group and context, so they
// must outlive it. A trainer retired while a task is out is parked, and destroyed by a later retire or
// sweep once its tasks have returned. Nothing here blocks.
#pragma once

#include <cstddef>
#include <memory>

#include "parallel/trainer.hpp"

namespace dpt {

// Destroys trainer now when no task of it is out, else parks it. Also sweeps. Never throws.
void retire_trainer(std::unique_ptr<Trainer> trainer) noexcept;
// Destroys the parked trainers whose tasks have returned; returns how many are still parked.
size_t sweep_retired_trainers() noexcept;

}  // namespace dpt
