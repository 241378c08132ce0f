// SplitPolicy::kAuto: the split weights from each device's measured speed, and on GPUs the samples each
// replica has memory for.
#include <algorithm>
#include <vector>

#include "core/platform.hpp"
#include "parallel/splitter.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// DPT_SPLIT_AUTO: every device trains on the same probe slice at once (as in a real step, so contention
// counts); the best of three timings per device sets its weight. The probe's gradients are discarded.
void Trainer::measure_speeds(const void *x, const int32_t *labels, size_t batch) {
  const size_t probe = std::min<size_t>(batch, 64);
  for (auto &r : replicas_) r->begin = 0, r->count = probe, r->probe_seconds = 1e300;
  reserve_slices();
  copy_in(x, labels);
  // The probe is a training pass: the running statistics it moves are put back afterwards.
  std::vector<float> buffers(spec_.buffer_count());
  guard_devices([&] {
    replicas_[0]->kernels->copy_to_host(buffers.data(), replicas_[0]->buffers.data(), buffers.size());
    replicas_[0]->kernels->synchronize();
  });
  for (int round = 0; round < 3; ++round) {
    run_phase([this, probe](size_t rank) {
      Replica &r = *replicas_[rank];
      const double t0 = platform::now_seconds();
      const PassInfo info = pass_info(probe, 0, optimizer_steps_, true, rank);
      r.network.forward(r.params.data(), r.buffers.data(), r.network.labels(), info);
      r.network.backward(r.params.data(), r.grads.data(), info, collective_->probe_hook(rank));
      r.kernels->synchronize();
      r.probe_seconds = std::min(r.probe_seconds, (platform::now_seconds() - t0) / double(probe));
    });
  }
  std::vector<double> best;
  for (auto &r : replicas_) r->grads.zero(), best.push_back(r->probe_seconds);
  guard_devices([&] { set_buffers_locked(buffers.data()); });
  measured_weights_ = weights_from_speed(best);
  if (on_gpus_) measure_room();
  cached_counts_.clear();  // the split changes with the weights
}

// The samples each GPU replica has memory for: what it holds now plus its share (replicas on one GPU
// share it evenly) of 90% of the GPU's free memory.
void Trainer::measure_room() {
  room_.assign(replicas_.size(), 0);
  for (size_t i = 0; i < replicas_.size(); ++i) {
    size_t sharing = 0;
    for (Device *d : devices_) sharing += d == devices_[i];
    const double share = 0.9 * double(devices_[i]->details().free_memory) / double(sharing);
    const Network &n = replicas_[i]->network;
    room_[i] = n.capacity() + size_t(share / double(n.bytes_per_sample()));
  }
}

}  // namespace dpt
