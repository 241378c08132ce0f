// dpt_model_to_json and dpt_model_from_json: model descriptions as JSON text (docs/model-json.md).
#include "graph/json.hpp"
#include "graph/model_json.hpp"
#include "model_calls.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_model_to_json(const dpt_model *model, char *buffer, size_t capacity, size_t *needed) {
  return dpt::capi::with_model_query(__func__, model, [&](const dpt::ModelSpec &m) {
    DPT_REQUIRE(buffer != nullptr || capacity == 0, DPT_ERROR_NULL_POINTER,
                "buffer is NULL but capacity is not 0");
    dpt::capi::copy_text(dpt::model_to_json(m), buffer, capacity, needed, "the JSON text");
  });
}

dpt_status dpt_model_from_json(dpt_model **out, const char *json) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(json, "json");
    // Reads one byte past the limit at most, so that a huge text is refused without measuring all of it.
    constexpr size_t kLimit = dpt::json::Limits().max_bytes;
    const size_t length = strnlen(json, kLimit + 1);
    *out = new dpt_model{dpt::model_from_json(std::string_view(json, length)), {}};
  });
}

}  // extern "C"
