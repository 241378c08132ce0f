// dpt_trainer_save_safetensors / dpt_trainer_load_safetensors: weights as named tensors
// (docs/safetensors.md).
#include "api_support.hpp"
#include "handles.hpp"
#include "io/trainer_safetensors.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_trainer_save_safetensors(dpt_trainer *trainer, const char *path) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(path, "path");
    DPT_REQUIRE(*path != '\0', DPT_ERROR_INVALID_ARGUMENT, "path is empty");
    dpt::save_safetensors(*trainer->impl, path);
  });
}

dpt_status dpt_trainer_load_safetensors(dpt_trainer *trainer, const char *path) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(path, "path");
    DPT_REQUIRE(*path != '\0', DPT_ERROR_INVALID_ARGUMENT, "path is empty");
    dpt::load_safetensors(*trainer->impl, path);
  });
}

}  // extern "C"
