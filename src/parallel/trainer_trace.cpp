// A trainer's timeline: recording starts and stops between calls, from the caller's thread.
#include <mutex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

namespace {
constexpr size_t kMaxTraceEvents = size_t(1) << 24;  // per row: 16 M events of 24 bytes
}  // namespace

void Trainer::start_trace(size_t max_events) {
  DPT_REQUIRE(max_events > 0, DPT_ERROR_INVALID_ARGUMENT, "max_events must be positive");
  DPT_REQUIRE(max_events <= kMaxTraceEvents, DPT_ERROR_OUT_OF_RANGE,
              "max_events " + std::to_string(max_events) + " exceeds " + std::to_string(kMaxTraceEvents));
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  trace_->start(max_events);
}

void Trainer::write_trace(const std::string &path) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  std::vector<std::string> names;
  for (Device *d : devices_) names.push_back(d->name());
  trace_->write(path, spec_, names);
}

}  // namespace dpt
