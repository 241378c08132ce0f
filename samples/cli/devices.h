/**
 * @file devices.h
 * @brief Helpers shared by the parts of `dptrain devices`: the device list and the CUDA section.
 */
#ifndef DPTRAIN_CLI_DEVICES_H
#define DPTRAIN_CLI_DEVICES_H

#include <dptrain/dptrain.h>

#include "json_out.h"

/** @brief "cpu", "cuda" or "unknown". */
const char *devices_kind_name(dpt_device_kind kind);

/** @brief "15.6 GiB"-style sizes for the tables. */
void devices_format_bytes(uint64_t bytes, char *text, size_t capacity);

/** @brief dpt_device_get_info() with the struct zeroed and struct_size set. */
dpt_status devices_get_info(const dpt_context *context, size_t index, dpt_device_info *info);

/**
 * @brief The CUDA part of the table: with CUDA devices, their discovery facts and the peer-access matrix;
 * without, one line "cuda: none: <reason>"; then the module and library versions when it loaded.
 * @return a CLI exit status.
 */
int devices_print_cuda(const dpt_context *context, size_t count);

/** @brief The CUDA part of the JSON object: members "cuda" (the backend) and "peer_access". */
int devices_json_cuda(json_writer *w, const dpt_context *context, size_t count);

#endif /* DPTRAIN_CLI_DEVICES_H */
