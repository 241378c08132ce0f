// A device: somewhere a replica lives and its work runs. Work is submitted as tasks that run in order on
// the device's own thread (the CPU backend) or stream (a GPU backend).
#pragma once

#include <dptrain/device.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/device_kernels.hpp"
#include "core/arena.hpp"

namespace dpt {

// A fault a test injects into a device (see Device::inject_fault).
// kStall sleeps until the group aborts (a device a reset brings back); kHang sleeps its whole time
// whatever happens (a device that does not come back within the deadline).
enum class FaultKind { kNone, kFail, kStall, kHang };

struct Fault {
  FaultKind kind = FaultKind::kNone;
  double stall_seconds = 0;
};

// What discovery knows of a device beyond the basics (dpt_device_info); zero or empty where it does not
// apply.
struct DeviceDetails {
  uint64_t free_memory = 0;
  int32_t compute_capability_major = 0;
  int32_t compute_capability_minor = 0;
  int32_t multiprocessor_count = 0;
  std::string pci_bus_id;
  std::string product_name;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual dpt_device_kind kind() const = 0;
  virtual size_t ordinal() const = 0;
  virtual const std::string &name() const = 0;
  virtual uint64_t total_memory() const = 0;
  virtual MemoryArena &arena() = 0;
  // Queues task to run on the device's worker thread `lane`, after the tasks queued there before it. A GPU
  // has a worker per replica it holds (lane: the replica's index among a trainer's replicas on that GPU),
  // so that replicas sharing it can meet in a collective in the middle of a pass (batch-norm statistics);
  // a CPU device holds one replica of a trainer and has lane 0 only.
  virtual void submit(std::function<void()> task, size_t lane) = 0;
  // Kernels for one replica on this device (a GPU: with a stream of its own). Throws as allocation does.
  virtual std::unique_ptr<DeviceKernels> create_kernels(const KernelOptions &options) = 0;
  // Discovery facts, measured now. By default (a CPU device): the free room of its arena.
  virtual DeviceDetails details() {
    DeviceDetails d;
    const uint64_t total = total_memory(), used = arena().in_use();
    d.free_memory = total > used ? total - used : 0;
    return d;
  }

  // Test seam: the (after_tasks + 1)-th task a DeviceGroup runs on this device from now fails (throws
  // DPT_ERROR_DEVICE), stalls (sleeps stall_seconds, or until the group aborts) or hangs (sleeps
  // stall_seconds). Once.
  void inject_fault(FaultKind kind, uint64_t after_tasks, double stall_seconds = 0) {
    fault_stall_seconds_ = stall_seconds;
    fault_countdown_ = after_tasks + 1;
    fault_kind_ = kind;
  }
  // Counts one task; returns the fault when it is due.
  Fault take_fault() {
    if (fault_kind_.load(std::memory_order_relaxed) == FaultKind::kNone) return {};
    if (fault_countdown_.fetch_sub(1) != 1) return {};
    return Fault{fault_kind_.exchange(FaultKind::kNone), fault_stall_seconds_.load()};
  }

 private:
  std::atomic<FaultKind> fault_kind_{FaultKind::kNone};
  std::atomic<uint64_t> fault_countdown_{0};
  std::atomic<double> fault_stall_seconds_{0};
};

}  // namespace dpt
