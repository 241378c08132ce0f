// Runs one task per device concurrently and waits for all of them. The first error (in device order)
// is rethrown on the calling thread after every task has finished, so no device is left mid-task.
#pragma once

#include <array>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <vector>

#include "backend/device.hpp"
#include "core/error.hpp"

namespace dpt {

// Most devices one trainer can span.
constexpr size_t kMaxTrainerDevices = 64;

template <typename Fn>  // Fn: void(size_t rank)
void run_on_devices(const std::vector<Device *> &devices, Fn &&fn) {
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    size_t remaining;
    std::array<std::exception_ptr, kMaxTrainerDevices> errors;
    Fn *fn;
  } state;
  DPT_REQUIRE(devices.size() <= kMaxTrainerDevices, DPT_ERROR_INTERNAL, "too many devices");
  state.remaining = devices.size();
  state.fn = &fn;
  // The task captures two words only, so std::function stores it without a heap allocation.
  std::exception_ptr submit_error;
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    try {
      devices[rank]->submit([s = &state, rank] {
        try {
          (*s->fn)(rank);
        } catch (...) {
          s->errors[rank] = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(s->mutex);
        if (--s->remaining == 0) s->done.notify_one();
      });
    } catch (...) {  // (out of memory growing a queue) the tasks already queued still point at `state`
      submit_error = std::current_exception();
      std::lock_guard<std::mutex> lock(state.mutex);
      state.remaining -= devices.size() - rank;
      break;
    }
  }
  std::unique_lock<std::mutex> lock(state.mutex);
  state.done.wait(lock, [&] { return state.remaining == 0; });
  if (submit_error) std::rethrow_exception(submit_error);
  for (size_t rank = 0; rank < devices.size(); ++rank)
    if (state.errors[rank]) std::rethrow_exception(state.errors[rank]);
}

}  // namespace dpt
