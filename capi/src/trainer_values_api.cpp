// dpt_trainer_*: the parameters and buffers (running statistics) read and written, and the checksum.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api_support.hpp"
#include "handles.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_trainer_parameter_count(const dpt_trainer *trainer, size_t *count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::shared(trainer);
    require_not_null(count, "count");
    *count = trainer->impl->parameter_count();
  });
}

static void check_parameter_count(const dpt_trainer *trainer, size_t count) {
  const size_t expected = trainer->impl->parameter_count();
  DPT_REQUIRE(
      count == expected, DPT_ERROR_SIZE_MISMATCH,
      "count is " + std::to_string(count) + ", the model has " + std::to_string(expected) + " parameters");
}

dpt_status dpt_trainer_get_parameters(dpt_trainer *trainer, float *parameters, size_t count) {
  return dpt_trainer_get_replica_parameters(trainer, 0, parameters, count);
}

dpt_status dpt_trainer_get_replica_parameters(dpt_trainer *trainer, size_t replica, float *parameters,
                                              size_t count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(parameters, "parameters");
    check_parameter_count(trainer, count);
    trainer->impl->get_parameters(replica, parameters);
  });
}

dpt_status dpt_trainer_set_parameters(dpt_trainer *trainer, const float *parameters, size_t count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(parameters, "parameters");
    check_parameter_count(trainer, count);
    trainer->impl->set_parameters(parameters);
  });
}

static void check_buffer_count(const dpt_trainer *trainer, size_t count) {
  const size_t expected = trainer->impl->spec().buffer_count();
  DPT_REQUIRE(count == expected, DPT_ERROR_SIZE_MISMATCH,
              "count is " + std::to_string(count) + ", the model has " + std::to_string(expected) +
                  " floats of buffers");
}

dpt_status dpt_trainer_get_buffers(dpt_trainer *trainer, float *buffers, size_t count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(buffers, "buffers");
    check_buffer_count(trainer, count);
    trainer->impl->get_buffers(0, buffers);
  });
}

dpt_status dpt_trainer_set_buffers(dpt_trainer *trainer, const float *buffers, size_t count) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(buffers, "buffers");
    check_buffer_count(trainer, count);
    trainer->impl->set_buffers(buffers);
  });
}

dpt_status dpt_trainer_parameter_checksum(dpt_trainer *trainer, uint64_t *checksum) {
  return guarded(__func__, [&] {
    require_not_null(trainer, "trainer");
    const auto use = dpt::capi::exclusive(trainer);
    require_not_null(checksum, "checksum");
    *checksum = trainer->impl->parameter_checksum();
  });
}

}  // extern "C"
