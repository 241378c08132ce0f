// What the dpt_model_* entry points share: the exclusive and shared call wrappers, and the conversions of
// their arguments (names, floats, activations) into the graph's terms.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <system_error>

#include "api_support.hpp"
#include "handles.hpp"

namespace dpt::capi {

// A builder: exclusive on the model.
template <typename Body>
dpt_status with_model(const char *function, dpt_model *model, Body &&body) {
  return guarded(function, [&] {
    require_not_null(model, "model");
    const auto use = exclusive(model);
    body(model->impl);
  });
}

// A query: shared with other queries.
template <typename Body>
dpt_status with_model_query(const char *function, const dpt_model *model, Body &&body) {
  return guarded(function, [&] {
    require_not_null(model, "model");
    const auto use = shared(model);
    body(model->impl);
  });
}

// A node's name argument: NULL is the node's index (ModelSpec's empty name); "" is refused.
inline std::string node_name(const char *name) {
  if (name == nullptr) return std::string();
  DPT_REQUIRE(name[0] != '\0', DPT_ERROR_INVALID_ARGUMENT, "name is empty (pass NULL for the node's index)");
  return std::string(name, strnlen(name, kMaxNameLength + 1));  // longer ones fail the model's check
}

// A graph builder: adds one node named name and writes its tensor's id to out (may be NULL).
template <typename Body>
dpt_status build_node(const char *function, dpt_model *model, const char *name, size_t *out, Body &&body) {
  return with_model(function, model, [&](ModelSpec &m) {
    const size_t tensor = body(m, node_name(name));
    if (out != nullptr) *out = tensor;
  });
}

// A float argument at its shortest decimal value (1e-5f -> 1e-5), so that the graph holds the number the
// caller wrote, as the built-in models and JSON files do; it converts back to the same float.
inline double decimal(float value) {
  if (!std::isfinite(value)) return double(value);
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);
  double out = 0;
  if (written.ec != std::errc() || std::from_chars(text, written.ptr, out).ec != std::errc() ||
      float(out) != value)
    return double(value);
  return out;
}

// Integer attributes; a size_t too large for int64 becomes INT64_MAX, which the op refuses.
inline OpAttrs int_attrs(std::initializer_list<size_t> values) {
  OpAttrs a;
  size_t i = 0;
  for (size_t v : values) a.ints[i++] = v > size_t(INT64_MAX) ? INT64_MAX : int64_t(v);
  return a;
}

// Enums by reference: an out-of-range value from C is read only by checked_enum's memcpy (loading it as the
// enum type would be undefined; UBSan reports it).
inline size_t add_activation_node(ModelSpec &m, size_t input, const dpt_activation &activation,
                                  const std::string &name) {
  const dpt_activation a = checked_enum(activation,
                                        {DPT_ACTIVATION_RELU, DPT_ACTIVATION_SIGMOID, DPT_ACTIVATION_TANH,
                                         DPT_ACTIVATION_GELU, DPT_ACTIVATION_GELU_TANH},
                                        "activation");
  switch (a) {
    case DPT_ACTIVATION_RELU:
      return m.add(op_def("relu"), {input}, OpAttrs{}, name);
    case DPT_ACTIVATION_SIGMOID:
      return m.add(op_def("sigmoid"), {input}, OpAttrs{}, name);
    case DPT_ACTIVATION_TANH:
      return m.add(op_def("tanh"), {input}, OpAttrs{}, name);
    case DPT_ACTIVATION_GELU:
    case DPT_ACTIVATION_GELU_TANH:
      return m.add(op_def("gelu"), {input}, int_attrs({a == DPT_ACTIVATION_GELU_TANH ? 1u : 0u}), name);
  }
  throw_error(DPT_ERROR_INTERNAL, "unhandled activation");
}

inline size_t add_pool_node(ModelSpec &m, size_t input, const dpt_pool_kind &kind, size_t window,
                            size_t stride, const std::string &name) {
  const dpt_pool_kind k = checked_enum(kind, {DPT_POOL_AVG, DPT_POOL_MAX}, "pool kind");
  return m.add(op_def(k == DPT_POOL_AVG ? "avg_pool2d" : "max_pool2d"), {input}, int_attrs({window, stride}),
               name);
}

inline size_t add_dropout_node(ModelSpec &m, size_t input, float rate, const std::string &name) {
  OpAttrs a;
  a.reals[0] = decimal(rate);
  return m.add(op_def("dropout"), {input}, a, name);
}

}  // namespace dpt::capi
