/* The CUDA part of `dptrain devices`: the backend's state or its reason, GPU facts, the peer-access matrix.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "devices.h"

static dpt_status get_cuda_backend(const dpt_context *context, dpt_backend_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  return dpt_backend_get_info(context, DPT_DEVICE_CUDA, info);
}

static int is_cuda(const dpt_context *context, size_t index, dpt_device_info *info) {
  return devices_get_info(context, index, info) == DPT_OK && info->kind == DPT_DEVICE_CUDA;
}

static int print_peer_matrix(const dpt_context *context, size_t count) {
  dpt_device_info row, column;
  size_t i, j;
  puts("peer access (the row's device can access the column's memory directly):");
  printf("%-8s", "");
  for (j = 0; j < count; ++j)
    if (is_cuda(context, j, &column)) printf("  %-7s", column.name);
  putchar('\n');
  for (i = 0; i < count; ++i) {
    if (!is_cuda(context, i, &row)) continue;
    printf("%-8s", row.name);
    for (j = 0; j < count; ++j) {
      int can = 0;
      if (!is_cuda(context, j, &column)) continue;
      CLI_TRY(dpt_device_can_access_peer(context, i, j, &can));
      printf("  %-7s", i == j ? "-" : can ? "yes" : "no");
    }
    putchar('\n');
  }
  return CLI_EXIT_OK;
}

int devices_print_cuda(const dpt_context *context, size_t count) {
  dpt_backend_info backend;
  size_t i;
  CLI_TRY(get_cuda_backend(context, &backend));
  if (backend.device_count == 0) {
    printf("cuda: none: %s\n", backend.reason[0] != '\0' ? backend.reason : "no CUDA device");
  } else {
    printf("\n%-5s  %-10s  %-24s  %-4s  %-4s  %-10s  %s\n", "index", "name", "product", "cc", "SMs", "free",
           "pci");
    for (i = 0; i < count; ++i) {
      dpt_device_info info;
      char free_text[32], capability[16];
      CLI_TRY(devices_get_info(context, i, &info));
      if (info.kind != DPT_DEVICE_CUDA) continue;
      devices_format_bytes(info.free_memory, free_text, sizeof free_text);
      snprintf(capability, sizeof capability, "%d.%d", (int)info.compute_capability_major,
               (int)info.compute_capability_minor);
      printf("%-5zu  %-10s  %-24s  %-4s  %-4d  %-10s  %s\n", i, info.name, info.product_name, capability,
             (int)info.multiprocessor_count, free_text, info.pci_bus_id);
    }
    if (print_peer_matrix(context, count) != CLI_EXIT_OK) return CLI_EXIT_FAILURE;
    if (backend.reason[0] != '\0') printf("cuda: note: %s\n", backend.reason);
  }
  if (backend.loaded) printf("cuda: module %s (%s)\n", backend.module_path, backend.versions);
  return CLI_EXIT_OK;
}

int devices_json_cuda(json_writer *w, const dpt_context *context, size_t count) {
  dpt_backend_info backend;
  size_t i, j;
  CLI_TRY(get_cuda_backend(context, &backend));
  json_object_begin(w, "cuda");
  json_bool(w, "loaded", backend.loaded);
  json_uint(w, "devices", backend.device_count);
  json_string(w, "reason", backend.reason);
  json_string(w, "module", backend.module_path);
  json_string(w, "versions", backend.versions);
  json_uint(w, "driver_version", (uint64_t)backend.driver_version);
  json_uint(w, "runtime_version", (uint64_t)backend.runtime_version);
  json_object_end(w);
  /* Rows and columns: the CUDA devices in index order; 1 = the row can access the column's memory. */
  json_array_begin(w, "peer_access");
  for (i = 0; i < count; ++i) {
    dpt_device_info info;
    if (!is_cuda(context, i, &info)) continue;
    json_array_begin(w, NULL);
    for (j = 0; j < count; ++j) {
      int can = 0;
      if (!is_cuda(context, j, &info)) continue;
      CLI_TRY(dpt_device_can_access_peer(context, i, j, &can));
      json_uint(w, NULL, (uint64_t)can);
    }
    json_array_end(w);
  }
  json_array_end(w);
  return CLI_EXIT_OK;
}
