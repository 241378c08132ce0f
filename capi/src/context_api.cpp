// dpt_context_* and dpt_device_*.
#include <cstdio>
#include <cstring>

#include "api_support.hpp"
#include "handles.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

void dpt_context_options_init(dpt_context_options *options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

dpt_status dpt_context_create(dpt_context **out, const dpt_context_options *options) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    dpt_context_options defaults;
    dpt_context_options_init(&defaults);
    const dpt_context_options o = dpt::capi::read_options(options, defaults, "options");
    const dpt_device_selection selection = dpt::capi::checked_enum(
        o.device_selection, {DPT_DEVICES_CPU, DPT_DEVICES_CUDA, DPT_DEVICES_ALL}, "device_selection");
    dpt::ContextConfig config;
    config.cpu_devices = o.cpu_devices;
    config.cpu_memory_limit = o.cpu_memory_limit;
    config.want_cpu = selection != DPT_DEVICES_CUDA;
    config.want_cuda = selection != DPT_DEVICES_CPU;
    *out = new dpt_context{std::make_shared<dpt::Context>(config)};
  });
}

void dpt_context_destroy(dpt_context *context) {
  delete context;
}

dpt_status dpt_device_count(const dpt_context *context, size_t *count) {
  return guarded(__func__, [&] {
    require_not_null(context, "context");
    require_not_null(count, "count");
    *count = context->impl->device_count();
  });
}

dpt_status dpt_device_get_info(const dpt_context *context, size_t index, dpt_device_info *info) {
  return guarded(__func__, [&] {
    require_not_null(context, "context");
    require_not_null(info, "info");
    dpt::capi::check_result(info, "info");
    const size_t n = context->impl->device_count();
    DPT_REQUIRE(index < n, DPT_ERROR_DEVICE_NOT_FOUND,
                "device index " + std::to_string(index) + " does not exist (the context has " +
                    std::to_string(n) + " devices)");
    dpt::Device &d = context->impl->device(index);
    dpt_device_info v;
    std::memset(&v, 0, sizeof v);
    v.kind = d.kind();
    v.ordinal = d.ordinal();
    std::snprintf(v.name, sizeof v.name, "%s", d.name().c_str());
    v.total_memory = d.total_memory();
    v.memory_limit = d.arena().limit();
    v.memory_in_use = d.arena().in_use();
    const dpt::DeviceDetails details = d.details();
    v.free_memory = details.free_memory;
    v.compute_capability_major = details.compute_capability_major;
    v.compute_capability_minor = details.compute_capability_minor;
    v.multiprocessor_count = details.multiprocessor_count;
    std::snprintf(v.pci_bus_id, sizeof v.pci_bus_id, "%s", details.pci_bus_id.c_str());
    std::snprintf(v.product_name, sizeof v.product_name, "%s", details.product_name.c_str());
    dpt::capi::write_result(info, v);
  });
}

dpt_status dpt_device_can_access_peer(const dpt_context *context, size_t index, size_t peer_index,
                                      int *can_access) {
  return guarded(__func__, [&] {
    require_not_null(context, "context");
    require_not_null(can_access, "can_access");
    const size_t n = context->impl->device_count();
    for (size_t i : {index, peer_index})
      DPT_REQUIRE(i < n, DPT_ERROR_DEVICE_NOT_FOUND,
                  "device index " + std::to_string(i) + " does not exist (the context has " +
                      std::to_string(n) + " devices)");
    *can_access = context->impl->can_access_peer(index, peer_index) ? 1 : 0;
  });
}

dpt_status dpt_backend_get_info(const dpt_context *context, dpt_device_kind kind, dpt_backend_info *info) {
  return guarded(__func__, [&] {
    require_not_null(context, "context");
    require_not_null(info, "info");
    const dpt_device_kind k = dpt::capi::checked_enum(kind, {DPT_DEVICE_CPU, DPT_DEVICE_CUDA}, "device kind");
    dpt::capi::check_result(info, "info");
    const dpt::BackendReport &r = context->impl->backend_report(k);
    dpt_backend_info v;
    std::memset(&v, 0, sizeof v);
    v.device_count = r.device_count;
    v.kind = k;
    v.requested = r.requested ? 1 : 0;
    v.loaded = r.loaded ? 1 : 0;
    v.driver_version = r.driver_version;
    v.runtime_version = r.runtime_version;
    std::snprintf(v.module_path, sizeof v.module_path, "%s", r.module_path.c_str());
    std::snprintf(v.reason, sizeof v.reason, "%s", r.reason.c_str());
    std::snprintf(v.versions, sizeof v.versions, "%s", r.versions.c_str());
    dpt::capi::write_result(info, v);
  });
}

}  // extern "C"
