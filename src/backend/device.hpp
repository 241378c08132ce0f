// A device: somewhere a replica lives and its work runs. Work is submitted as tasks that run in order on
// the device's own thread (the CPU backend) or stream (a GPU backend).
#pragma once

#include <dptrain/device.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/arena.hpp"

namespace dpt {

class Device {
 public:
  virtual ~Device() = default;
  virtual dpt_device_kind kind() const = 0;
  virtual size_t ordinal() const = 0;
  virtual const std::string &name() const = 0;
  virtual uint64_t total_memory() const = 0;
  virtual MemoryArena &arena() = 0;
  // Runs task on the device; done() is called on the device's thread when it has finished.
  virtual void submit(std::function<void()> task) = 0;
};

}  // namespace dpt
