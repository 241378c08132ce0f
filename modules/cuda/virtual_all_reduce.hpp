// The all-reduce of K replicas on one GPU ("virtual devices"; NCCL refuses two ranks on one GPU), a CUDA
// kernel (backend interface: virtual_all_reduce), on a float32 or a 16-bit wire.
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

constexpr int kMaxVirtualReplicas = 32;

int virtual_all_reduce(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                       size_t count, int32_t wire_dtype, char *error, size_t error_size);

}  // namespace dpt::cuda
