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
    dpt::ContextConfig config;
    config.cpu_devices = o.cpu_devices;
    config.cpu_memory_limit = o.cpu_memory_limit;
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
    dpt::capi::write_result(info, v);
  });
}

}  // extern "C"
