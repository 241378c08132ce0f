// The entry point of libdptrain_cuda.so: the only symbol the module exports (see dptrain_cuda.map).
#include "backend/backend_interface.h"
#include "backend/cuda/discovery.hpp"
#include "backend/cuda/self_test.hpp"

namespace {

const dpt_backend_v1 kBackend = {
    DPT_BACKEND_ABI_VERSION,  sizeof(dpt_backend_v1),   "cuda",
    &dpt::cuda::device_count, &dpt::cuda::device_props, &dpt::cuda::can_access_peer,
    &dpt::cuda::versions,     &dpt::cuda::self_test,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dpt_backend_v1 *dptrain_cuda_backend_v1(void) {
  return &kBackend;
}
