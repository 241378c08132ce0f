/* `dptrain devices [--kind cpu|cuda|all] [--json]`: the devices of a context, as a table or one JSON object.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "devices.h"
#include "json_out.h"

const char *devices_kind_name(dpt_device_kind kind) {
  switch (kind) {
    case DPT_DEVICE_CPU:
      return "cpu";
    case DPT_DEVICE_CUDA:
      return "cuda";
  }
  return "unknown";
}

void devices_format_bytes(uint64_t bytes, char *text, size_t capacity) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(text, capacity, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
}

dpt_status devices_get_info(const dpt_context *context, size_t index, dpt_device_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  return dpt_device_get_info(context, index, info);
}

static int print_table(const dpt_context *context, size_t count, dpt_device_selection selection) {
  size_t i;
  printf("%-5s  %-10s  %-4s  %-10s  %s\n", "index", "name", "kind", "memory", "limit");
  for (i = 0; i < count; ++i) {
    dpt_device_info info;
    char memory[32], limit[32];
    CLI_TRY(devices_get_info(context, i, &info));
    devices_format_bytes(info.total_memory, memory, sizeof memory);
    if (info.memory_limit > 0) {
      devices_format_bytes(info.memory_limit, limit, sizeof limit);
    } else {
      snprintf(limit, sizeof limit, "none");
    }
    printf("%-5zu  %-10s  %-4s  %-10s  %s\n", i, info.name, devices_kind_name(info.kind), memory, limit);
  }
  return selection == DPT_DEVICES_CPU ? CLI_EXIT_OK : devices_print_cuda(context, count);
}

static int print_json(const dpt_context *context, size_t count, dpt_device_selection selection) {
  json_writer w;
  size_t i;
  int rc = CLI_EXIT_OK;
  json_init(&w, stdout);
  json_object_begin(&w, NULL);
  json_array_begin(&w, "devices");
  for (i = 0; i < count; ++i) {
    dpt_device_info info;
    CLI_TRY(devices_get_info(context, i, &info));
    json_object_begin(&w, NULL);
    json_uint(&w, "index", i);
    json_string(&w, "name", info.name);
    json_string(&w, "kind", devices_kind_name(info.kind));
    json_uint(&w, "ordinal", info.ordinal);
    json_uint(&w, "memory", info.total_memory);
    json_uint(&w, "memory_limit", info.memory_limit);
    json_uint(&w, "memory_in_use", info.memory_in_use);
    json_uint(&w, "free_memory", info.free_memory);
    if (info.kind == DPT_DEVICE_CUDA) {
      char capability[16];
      snprintf(capability, sizeof capability, "%d.%d", (int)info.compute_capability_major,
               (int)info.compute_capability_minor);
      json_string(&w, "product", info.product_name);
      json_string(&w, "compute_capability", capability);
      json_uint(&w, "multiprocessors", (uint64_t)info.multiprocessor_count);
      json_string(&w, "pci_bus_id", info.pci_bus_id);
    }
    json_object_end(&w);
  }
  json_array_end(&w);
  if (selection != DPT_DEVICES_CPU) rc = devices_json_cuda(&w, context, count);
  json_object_end(&w);
  putchar('\n');
  return rc;
}

static void print_devices_help(void) {
  puts(
      "usage: dptrain devices [--kind cpu|cuda|all] [--json]\n"
      "\n"
      "Lists the devices dptrain can use: CPU devices ($DPTRAIN_CPU_DEVICES or the core count) and NVIDIA\n"
      "GPUs, through the module libdptrain_cuda.so (next to libdptrain.so, or in $DPTRAIN_BACKEND_PATH).\n"
      "Without GPUs it says why (module not found, no driver, no GPU, ...).\n"
      "  --kind K  cpu: CPU devices only (the CUDA module is not loaded); cuda: GPUs only; all (default)\n"
      "  --json    print one JSON object {\"devices\":[...],\"cuda\":{...},\"peer_access\":[...]}");
}

static int parse_kind(const char *value, dpt_device_selection *selection) {
  if (value != NULL && strcmp(value, "cpu") == 0) {
    *selection = DPT_DEVICES_CPU;
  } else if (value != NULL && strcmp(value, "cuda") == 0) {
    *selection = DPT_DEVICES_CUDA;
  } else if (value != NULL && strcmp(value, "all") == 0) {
    *selection = DPT_DEVICES_ALL;
  } else {
    return cli_usage_error("devices: --kind expects cpu, cuda or all, got '%s'", value != NULL ? value : "");
  }
  return CLI_EXIT_OK;
}

int cli_devices_main(int argc, char **argv) {
  int json = 0, i, rc;
  dpt_context *context = NULL;
  dpt_context_options options;
  size_t count = 0;
  dpt_status status;
  dpt_context_options_init(&options);
  options.device_selection = DPT_DEVICES_ALL;
  for (i = 0; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_devices_help();
      return CLI_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--kind") == 0) {
      rc = parse_kind(i + 1 < argc ? argv[++i] : NULL, &options.device_selection);
      if (rc != CLI_EXIT_OK) return rc;
    } else if (strncmp(argv[i], "--kind=", 7) == 0) {
      rc = parse_kind(argv[i] + 7, &options.device_selection);
      if (rc != CLI_EXIT_OK) return rc;
    } else {
      return cli_usage_error("devices: unknown argument '%s' (see 'dptrain devices --help')", argv[i]);
    }
  }
  CLI_TRY(dpt_context_create(&context, &options));
  status = dpt_device_count(context, &count);
  if (status != DPT_OK) {
    rc = cli_library_error(status);
  } else {
    rc = json ? print_json(context, count, options.device_selection)
              : print_table(context, count, options.device_selection);
  }
  dpt_context_destroy(context);
  return rc;
}
