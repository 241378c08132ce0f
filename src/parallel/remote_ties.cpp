#include "parallel/remote_ties.hpp"

#include <algorithm>

namespace dpt {

RemoteTies::RemoteTies(const World *world, std::vector<End> ends, size_t devices, double timeout_seconds,
                       bool host_staging)
    : world_(world),
      ends_(std::move(ends)),
      host_(devices),
      timeout_seconds_(timeout_seconds),
      host_staging_(host_staging) {}

size_t RemoteTies::largest() const {
  size_t most = 0;
  for (const End &e : ends_) most = std::max(most, e.floats);
  return most;
}

float *RemoteTies::host_buffer(size_t device, size_t floats) {
  std::vector<float> &host = host_[device];
  if (host.size() < floats) host.resize(floats);
  return host.data();
}

void RemoteTies::send(size_t device, DeviceKernels &kernels, const float *from, size_t floats, size_t process,
                      int tag) {
  if (host_staging_) {
    float *host = host_buffer(device, floats);
    kernels.copy_to_host(host, from, floats);
    kernels.synchronize();
    from = host;
  }
  void *pending = world_->start_send(from, floats * sizeof(float), process, tag);
  world_->finish_send(pending, timeout_seconds_);
}

void RemoteTies::exchange_gradients(size_t device, size_t stage, size_t r, DeviceKernels &kernels,
                                    float *grads, float *scratch) {
  for (const End &e : ends_) {
    if (e.stage != stage) continue;
    if (e.mirror) {
      send(device, kernels, grads + e.offset, e.floats, e.process, tag(e.tie, false, r));
      continue;
    }
    float *host = host_buffer(device, e.floats);
    world_->receive(host, e.floats * sizeof(float), e.process, tag(e.tie, false, r), timeout_seconds_);
    const float *mirror = host;
    if (host_staging_) {  // a GPU adds what is in its own memory
      kernels.copy_to_device(scratch, mirror, e.floats);
      mirror = scratch;
    }
    kernels.accumulate(grads + e.offset, mirror, e.floats);  // as a mirror within the process
    kernels.synchronize();                                   // before the host buffer takes the next message
  }
}

void RemoteTies::exchange_values(size_t device, size_t stage, size_t r, DeviceKernels &kernels,
                                 float *params) {
  for (const End &e : ends_) {
    if (e.stage != stage) continue;
    if (!e.mirror) {
      send(device, kernels, params + e.offset, e.floats, e.process, tag(e.tie, true, r));
    } else if (!host_staging_) {
      world_->receive(params + e.offset, e.floats * sizeof(float), e.process, tag(e.tie, true, r),
                      timeout_seconds_);
    } else {
      float *host = host_buffer(device, e.floats);
      world_->receive(host, e.floats * sizeof(float), e.process, tag(e.tie, true, r), timeout_seconds_);
      kernels.copy_to_device(params + e.offset, host, e.floats);
      kernels.synchronize();
    }
  }
}

}  // namespace dpt
