// dpt_trainer_*: what a trainer reports of itself: per-replica times and memory, the timeline, its
// devices, pipeline cuts and batch split.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api_support.hpp"
#include "handles.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

namespace {
// The two per-replica time queries: the last step call's (Trainer::replica_times) or every step's summed
// (Trainer::replica_totals).
dpt_status replica_times_query(const char *function, const dpt_trainer *trainer, size_t device,
                               dpt_replica_times *times,
                               dpt::ReplicaTimes (dpt::Trainer::*query)(size_t) const) {
  return guarded(function, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(times, "times");
    dpt::capi::check_result(times, "times");
    const dpt::ReplicaTimes t = (trainer->impl.get()->*query)(device);
    dpt_replica_times r;
    std::memset(&r, 0, sizeof r);
    r.compute_seconds = t.compute;
    r.communication_seconds = t.communication;
    r.update_seconds = t.update;
    r.idle_seconds = t.idle;
    r.bus_bandwidth = t.bus_bandwidth;
    dpt::capi::write_result(times, r);
  });
}
}  // namespace

dpt_status dpt_trainer_replica_times(const dpt_trainer *trainer, size_t device, dpt_replica_times *times) {
  return replica_times_query(__func__, trainer, device, times, &dpt::Trainer::replica_times);
}

dpt_status dpt_trainer_replica_totals(const dpt_trainer *trainer, size_t device, dpt_replica_times *times) {
  return replica_times_query(__func__, trainer, device, times, &dpt::Trainer::replica_totals);
}

dpt_status dpt_trainer_replica_memory(const dpt_trainer *trainer, size_t device, dpt_replica_memory *memory) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(memory, "memory");
    dpt::capi::check_result(memory, "memory");
    const dpt::ReplicaMemory m = trainer->impl->replica_memory(device);
    dpt_replica_memory r;
    std::memset(&r, 0, sizeof r);
    r.parameters = m.parameters;
    r.gradients = m.gradients;
    r.optimizer_state = m.optimizer_state;
    r.buffers = m.buffers;
    r.activations = m.activations;
    r.total = m.total();
    dpt::capi::write_result(memory, r);
  });
}

dpt_status dpt_trainer_trace_start(dpt_trainer *trainer, size_t max_events) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    trainer->impl->start_trace(max_events);
  });
}

dpt_status dpt_trainer_trace_write(dpt_trainer *trainer, const char *path) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(path, "path");
    DPT_REQUIRE(*path != '\0', DPT_ERROR_INVALID_ARGUMENT, "path is empty");
    trainer->impl->write_trace(path);
  });
}

dpt_status dpt_trainer_device_count(const dpt_trainer *trainer, size_t *count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(count, "count");
    *count = trainer->impl->device_count();
  });
}

dpt_status dpt_trainer_pipeline_cuts(const dpt_trainer *trainer, char *buffer, size_t capacity,
                                     size_t *needed) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    std::string names;
    for (const std::string &name : trainer->impl->pipeline_cut_names())
      names += (names.empty() ? "" : ",") + name;
    dpt::capi::copy_text(names, buffer, capacity, needed, "the cuts");
  });
}

dpt_status dpt_trainer_split_sizes(const dpt_trainer *trainer, size_t batch_size, size_t *counts,
                                   size_t count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(counts, "counts");
    DPT_REQUIRE(count == trainer->impl->device_count(), DPT_ERROR_SIZE_MISMATCH,
                "count is " + std::to_string(count) + ", the trainer has " +
                    std::to_string(trainer->impl->device_count()) + " devices");
    const std::vector<size_t> sizes = trainer->impl->split_sizes(batch_size);
    std::copy(sizes.begin(), sizes.end(), counts);
  });
}

}  // extern "C"
