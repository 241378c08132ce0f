// A timeline of a trainer's work, written as Chrome trace-event JSON (chrome://tracing, Perfetto): two rows
// per device, its compute (each op's forward and backward, the update, a reduction or gather it runs
// itself) and its communication thread (the bucket reductions that overlap backward). Each row is written
// by one thread only, into room reserved when recording starts: recording allocates nothing and takes no
// lock; a full row drops further events and counts them. Gaps in a row are idle time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/model_spec.hpp"

namespace dpt {

enum class TraceKind : uint8_t {
  kForward,              // index: node
  kBackward,             // index: node
  kAllReduce,            // the whole gradient, after backward
  kReduceScatter,        // the whole gradient, after backward (sharded)
  kBucketAllReduce,      // index: bucket
  kBucketReduceScatter,  // index: bucket
  kGather,               // index: bucket of parameters (sharded parameters)
  kGatherReadAhead,      // index: bucket; the wait for a bucket read ahead (prefetch_parameters)
  kUpdate,               // the norm, the optimizer step, the parameter all-gather
};

class TraceRecorder {
 public:
  // rows: 2 per device (compute 2r, communication 2r + 1).
  explicit TraceRecorder(size_t devices) : rows_(2 * devices) {}

  // From the trainer's thread while no device works: clears and reserves room for max_events per row
  // (DPT_ERROR_OUT_OF_MEMORY when it cannot), and starts recording.
  void start(size_t max_events);
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // From the row's own thread. Times: platform::now_seconds().
  void record(size_t row, TraceKind kind, size_t index, double start, double end) {
    if (!recording()) return;
    Row &r = rows_[row];
    if (r.count == r.events.size()) {
      ++r.dropped;
      return;
    }
    r.events[r.count++] = Event{start, end, uint32_t(index), kind};
  }
  static size_t compute_row(size_t device) { return 2 * device; }
  static size_t communication_row(size_t device) { return 2 * device + 1; }

  // From the trainer's thread while no device works: stops recording and writes the timeline to path
  // (atomically; DPT_ERROR_IO). device_names: one per device. DPT_ERROR_INVALID_STATE when not recording.
  void write(const std::string &path, const ModelSpec &spec, const std::vector<std::string> &device_names);

 private:
  struct Event {
    double start, end;
    uint32_t index;
    TraceKind kind;
  };
  struct alignas(64) Row {
    std::vector<Event> events;
    size_t count = 0;
    uint64_t dropped = 0;
  };
  std::vector<Row> rows_;
  std::atomic<bool> recording_{false};
  double origin_ = 0;  // the clock at start(): time 0 of the timeline
};

}  // namespace dpt
