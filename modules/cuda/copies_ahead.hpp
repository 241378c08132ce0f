// Copies beside the compute (backend interface: copy_device_ahead, copy_join_ahead): a sharded parameter
// bucket copied in from its owners on the context's copy stream while the layers before it compute.
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int copy_device_ahead(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                      size_t error_size);
int copy_join_ahead(dpt_backend_context *ctx, char *error, size_t error_size);

}  // namespace dpt::cuda
