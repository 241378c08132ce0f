#include "parallel/trace_recorder.hpp"

#include <cstdio>
#include <new>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/platform.hpp"
#include "graph/json.hpp"

namespace dpt {

void TraceRecorder::start(size_t max_events) {
  recording_.store(false);
  try {
    for (Row &r : rows_) {
      r.events.assign(max_events, Event{});
      r.count = 0;
      r.dropped = 0;
    }
  } catch (const std::bad_alloc &) {
    for (Row &r : rows_) r.events = {};
    throw_error(DPT_ERROR_OUT_OF_MEMORY,
                "cannot reserve room for " + std::to_string(max_events) + " trace events per device");
  }
  origin_ = platform::now_seconds();
  recording_.store(true);
}

namespace {

std::string event_name(const ModelSpec &spec, TraceKind kind, size_t index) {
  auto node = [&](const char *direction) {
    const Node &n = spec.nodes()[index];
    return n.name + " " + n.op->name + " " + direction;
  };
  switch (kind) {
    case TraceKind::kForward:
      return node("forward");
    case TraceKind::kBackward:
      return node("backward");
    case TraceKind::kAllReduce:
      return "all-reduce";
    case TraceKind::kReduceScatter:
      return "reduce-scatter";
    case TraceKind::kBucketAllReduce:
      return "all-reduce bucket " + std::to_string(index);
    case TraceKind::kBucketReduceScatter:
      return "reduce-scatter bucket " + std::to_string(index);
    case TraceKind::kGather:
      return "gather bucket " + std::to_string(index);
    case TraceKind::kGatherReadAhead:
      return "gather bucket " + std::to_string(index) + " (read ahead)";
    case TraceKind::kUpdate:
      return "update";
  }
  return "?";
}

const char *category(TraceKind kind) {
  switch (kind) {
    case TraceKind::kForward:
      return "forward";
    case TraceKind::kBackward:
      return "backward";
    case TraceKind::kUpdate:
      return "update";
    case TraceKind::kGather:
    case TraceKind::kGatherReadAhead:
      return "gather";
    default:
      return "communication";
  }
}

}  // namespace

void TraceRecorder::write(const std::string &path, const ModelSpec &spec,
                          const std::vector<std::string> &device_names) {
  DPT_REQUIRE(recording(), DPT_ERROR_INVALID_STATE, "no trace is being recorded (start one first)");
  recording_.store(false);
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char number[96];
  bool first = true;
  auto separator = [&] {
    if (!first) json += ",\n";
    first = false;
  };
  for (size_t row = 0; row < rows_.size(); ++row) {
    const std::string row_name = device_names[row / 2] + (row % 2 == 0 ? " compute" : " communication");
    separator();
    json += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":" + std::to_string(row) +
            ",\"args\":{\"name\":";
    json::append_string(json, row_name);
    json += "}}";
    separator();
    json += "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":0,\"tid\":" + std::to_string(row) +
            ",\"args\":{\"sort_index\":" + std::to_string(row) + "}}";
    const Row &r = rows_[row];
    for (size_t i = 0; i < r.count; ++i) {
      const Event &e = r.events[i];
      separator();
      json += "{\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(row) + ",\"name\":";
      json::append_string(json, event_name(spec, e.kind, e.index));
      std::snprintf(number, sizeof number, ",\"cat\":\"%s\",\"ts\":%.3f,\"dur\":%.3f}", category(e.kind),
                    (e.start - origin_) * 1e6, (e.end - e.start) * 1e6);
      json += number;
    }
    if (r.dropped > 0) {  // an instant event at the end of the row says how many did not fit
      separator();
      std::snprintf(number, sizeof number, "%.3f",
                    r.count > 0 ? (r.events[r.count - 1].end - origin_) * 1e6 : 0.0);
      json += "{\"ph\":\"i\",\"s\":\"t\",\"pid\":0,\"tid\":" + std::to_string(row) + ",\"ts\":" + number +
              ",\"name\":\"" + std::to_string(r.dropped) + " events dropped (the row was full)\"}";
    }
  }
  json += "\n]}\n";
  file_io::write_file_atomic(path, std::vector<unsigned char>(json.begin(), json.end()));
}

}  // namespace dpt
