// Device discovery of the CUDA module: how many GPUs (or why none), their facts, peer access, versions.
// The functions have the signatures of the backend interface (modules/interface/backend_interface.h).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int device_count(int *count, char *error, size_t error_size);
int device_props(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size);
int can_access_peer(int ordinal, int peer, int *can_access, char *error, size_t error_size);
void versions(dpt_backend_versions *versions);

}  // namespace dpt::cuda
