/* `dptrain devices [--json]`: the devices of a default context, as a table or one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json_out.h"

static const char *kind_name(dpt_device_kind kind) {
  switch (kind) {
    case DPT_DEVICE_CPU:
      return "cpu";
    case DPT_DEVICE_CUDA:
      return "cuda";
  }
  return "unknown";
}

/** @brief "15.6 GiB"-style sizes for the table. */
static void format_bytes(uint64_t bytes, char *text, size_t capacity) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    ++unit;
  }
  snprintf(text, capacity, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
}

static dpt_status get_info(const dpt_context *context, size_t index, dpt_device_info *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  return dpt_device_get_info(context, index, info);
}

static int print_table(const dpt_context *context, size_t count) {
  size_t i;
  printf("%-5s  %-10s  %-4s  %-10s  %s\n", "index", "name", "kind", "memory", "limit");
  for (i = 0; i < count; ++i) {
    dpt_device_info info;
    char memory[32], limit[32];
    CLI_TRY(get_info(context, i, &info));
    format_bytes(info.total_memory, memory, sizeof memory);
    if (info.memory_limit > 0) {
      format_bytes(info.memory_limit, limit, sizeof limit);
    } else {
      snprintf(limit, sizeof limit, "none");
    }
    printf("%-5zu  %-10s  %-4s  %-10s  %s\n", i, info.name, kind_name(info.kind), memory, limit);
  }
  return CLI_EXIT_OK;
}

static int print_json(const dpt_context *context, size_t count) {
  json_writer w;
  size_t i;
  json_init(&w, stdout);
  json_object_begin(&w, NULL);
  json_array_begin(&w, "devices");
  for (i = 0; i < count; ++i) {
    dpt_device_info info;
    CLI_TRY(get_info(context, i, &info));
    json_object_begin(&w, NULL);
    json_uint(&w, "index", i);
    json_string(&w, "name", info.name);
    json_string(&w, "kind", kind_name(info.kind));
    json_uint(&w, "ordinal", info.ordinal);
    json_uint(&w, "memory", info.total_memory);
    json_uint(&w, "memory_limit", info.memory_limit);
    json_uint(&w, "memory_in_use", info.memory_in_use);
    json_object_end(&w);
  }
  json_array_end(&w);
  json_object_end(&w);
  putchar('\n');
  return CLI_EXIT_OK;
}

static void print_devices_help(void) {
  puts(
      "usage: dptrain devices [--json]\n"
      "\n"
      "Lists the devices dptrain can use (CPU devices: $DPTRAIN_CPU_DEVICES or the core count).\n"
      "  --json   print one JSON object {\"devices\":[...]} instead of a table");
}

int cli_devices_main(int argc, char **argv) {
  int json = 0, i, rc;
  dpt_context *context = NULL;
  size_t count = 0;
  dpt_status status;
  for (i = 0; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_devices_help();
      return CLI_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") != 0) {
      return cli_usage_error("devices: unknown argument '%s' (see 'dptrain devices --help')", argv[i]);
    }
    json = 1;
  }
  CLI_TRY(dpt_context_create(&context, NULL));
  status = dpt_device_count(context, &count);
  if (status != DPT_OK) {
    rc = cli_library_error(status);
  } else {
    rc = json ? print_json(context, count) : print_table(context, count);
  }
  dpt_context_destroy(context);
  return rc;
}
