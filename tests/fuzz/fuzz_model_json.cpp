// Fuzz target: dpt_model_from_json on any bytes. Every text gives a status, never a crash or a hang; a
// failure comes with a one-line message; a model that reads back writes JSON that reads back to the same
// model (the same JSON and description).
#include <dptrain/dptrain.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

void check_message(dpt_status s) {
  if (s == DPT_OK) return;
  const char *m = dpt_last_error_message();
  if (m == nullptr || m[0] == '\0' || std::strchr(m, '\n') != nullptr) __builtin_trap();
}

std::string json_of(const dpt_model *m) {
  size_t needed = 0;
  if (dpt_model_to_json(m, nullptr, 0, &needed) != DPT_ERROR_BUFFER_TOO_SMALL || needed == 0)
    __builtin_trap();
  std::string text(needed, '\0');
  if (dpt_model_to_json(m, text.data(), needed, nullptr) != DPT_OK) __builtin_trap();
  text.resize(needed - 1);
  return text;
}

std::string description_of(const dpt_model *m) {
  size_t needed = 0;
  if (dpt_model_describe(m, nullptr, 0, &needed) != DPT_ERROR_BUFFER_TOO_SMALL || needed == 0)
    __builtin_trap();
  std::string text(needed, '\0');
  if (dpt_model_describe(m, text.data(), needed, nullptr) != DPT_OK) __builtin_trap();
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);  // NUL-terminated by c_str()
  dpt_model *model = nullptr;
  const dpt_status s = dpt_model_from_json(&model, text.c_str());
  check_message(s);
  if (s != DPT_OK) {
    if (model != nullptr) __builtin_trap();  // failures leave *out untouched
    return 0;
  }
  const std::string json = json_of(model);
  dpt_model *again = nullptr;
  if (dpt_model_from_json(&again, json.c_str()) != DPT_OK) __builtin_trap();
  if (json_of(again) != json || description_of(again) != description_of(model)) __builtin_trap();
  size_t a = 0, b = 0;
  if (dpt_model_parameter_count(model, &a) != DPT_OK || dpt_model_parameter_count(again, &b) != DPT_OK ||
      a != b)
    __builtin_trap();
  dpt_model_destroy(again);
  dpt_model_destroy(model);
  return 0;
}
