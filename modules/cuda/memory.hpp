// Device memory of a context and copies on its stream (backend interface: mem_alloc ... copy_device).
#pragma once

#include "interface/backend_interface.h"

namespace dpt::cuda {

int mem_alloc(dpt_backend_context *ctx, size_t bytes, void **out, char *error, size_t error_size);
int mem_free(dpt_backend_context *ctx, void *ptr, char *error, size_t error_size);
int mem_in_use(dpt_backend_context *ctx, uint64_t *bytes, char *error, size_t error_size);
int mem_set(dpt_backend_context *ctx, void *ptr, int value, size_t bytes, char *error, size_t error_size);
int copy_to_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                   size_t error_size);
int copy_to_host(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                 size_t error_size);
int copy_device(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                size_t error_size);

}  // namespace dpt::cuda
