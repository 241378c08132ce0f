// dpt_trainer_save / dpt_trainer_load and the counters a resumed run needs.
#include "api_support.hpp"
#include "handles.hpp"
#include "io/checkpoint.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_trainer_save(dpt_trainer *trainer, const char *path) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(path, "path");
    DPT_REQUIRE(*path != '\0', DPT_ERROR_INVALID_ARGUMENT, "path is empty");
    dpt::save_checkpoint(*trainer->impl, path);
  });
}

dpt_status dpt_trainer_load(dpt_trainer *trainer, const char *path) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(path, "path");
    DPT_REQUIRE(*path != '\0', DPT_ERROR_INVALID_ARGUMENT, "path is empty");
    dpt::load_checkpoint(*trainer->impl, path);
  });
}

dpt_status dpt_trainer_epoch_count(const dpt_trainer *trainer, uint64_t *epochs) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(epochs, "epochs");
    *epochs = trainer->impl->epochs_done;
  });
}

dpt_status dpt_trainer_step_count(const dpt_trainer *trainer, uint64_t *steps) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(steps, "steps");
    *steps = trainer->impl->optimizer_steps();
  });
}

}  // extern "C"
