#include "parallel/remote_ties.hpp"

namespace dpt {

RemoteTies::RemoteTies(const World *world, std::vector<End> ends, size_t devices, double timeout_seconds)
    : world_(world), ends_(std::move(ends)), received_(devices), timeout_seconds_(timeout_seconds) {}

void RemoteTies::send(const float *from, size_t floats, size_t process, int tag) const {
  void *pending = world_->start_send(from, floats * sizeof(float), process, tag);
  world_->finish_send(pending, timeout_seconds_);
}

void RemoteTies::exchange_gradients(size_t device, size_t stage, size_t r, DeviceKernels &kernels,
                                    float *grads) {
  for (const End &e : ends_) {
    if (e.stage != stage) continue;
    if (e.mirror) {
      send(grads + e.offset, e.floats, e.process, tag(e.tie, false, r));
      continue;
    }
    std::vector<float> &mirror = received_[device];
    mirror.resize(e.floats);
    world_->receive(mirror.data(), e.floats * sizeof(float), e.process, tag(e.tie, false, r),
                    timeout_seconds_);
    kernels.accumulate(grads + e.offset, mirror.data(), e.floats);  // as a mirror within the process
  }
}

void RemoteTies::exchange_values(size_t stage, size_t r, float *params) {
  for (const End &e : ends_) {
    if (e.stage != stage) continue;
    if (e.mirror)
      world_->receive(params + e.offset, e.floats * sizeof(float), e.process, tag(e.tie, true, r),
                      timeout_seconds_);
    else
      send(params + e.offset, e.floats, e.process, tag(e.tie, true, r));
  }
}

}  // namespace dpt
