// dpt_model_*: building model descriptions.
#include <cstring>

#include "api_support.hpp"
#include "handles.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;

namespace {

template <typename Body>
dpt_status with_model(const char *function, dpt_model *model, Body &&body) {
  return guarded(function, [&] {
    require_not_null(model, "model");
    const auto use = dpt::capi::exclusive(model);
    body(model->impl);
  });
}

}  // namespace

extern "C" {

dpt_status dpt_model_create(dpt_model **out, size_t channels, size_t height, size_t width) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    *out = new dpt_model{dpt::ModelSpec(dpt::Shape{channels, height, width}), {}};
  });
}

dpt_status dpt_model_create_builtin(dpt_model **out, const char *name) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(name, "name");
    *out = new dpt_model{dpt::ModelSpec::builtin(name), {}};
  });
}

void dpt_model_destroy(dpt_model *model) {
  delete model;
}

dpt_status dpt_model_add_dense(dpt_model *model, size_t units) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) { m.add_dense(units); });
}

dpt_status dpt_model_add_conv2d(dpt_model *model, size_t out_channels, size_t kernel, size_t stride,
                                size_t padding) {
  return with_model(__func__, model,
                    [&](dpt::ModelSpec &m) { m.add_conv2d(out_channels, kernel, stride, padding); });
}

dpt_status dpt_model_add_pool(dpt_model *model, dpt_pool_kind kind, size_t window, size_t stride) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) {
    const dpt_pool_kind k = dpt::capi::checked_enum(kind, {DPT_POOL_AVG, DPT_POOL_MAX}, "pool kind");
    m.add_pool(k == DPT_POOL_AVG ? dpt::PoolKind::kAvg : dpt::PoolKind::kMax, window, stride);
  });
}

dpt_status dpt_model_add_activation(dpt_model *model, dpt_activation activation) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) {
    switch (dpt::capi::checked_enum(
        activation, {DPT_ACTIVATION_RELU, DPT_ACTIVATION_SIGMOID, DPT_ACTIVATION_TANH}, "activation")) {
      case DPT_ACTIVATION_RELU:
        m.add_activation(dpt::Activation::kRelu);
        return;
      case DPT_ACTIVATION_SIGMOID:
        m.add_activation(dpt::Activation::kSigmoid);
        return;
      case DPT_ACTIVATION_TANH:
        m.add_activation(dpt::Activation::kTanh);
        return;
    }
    dpt::throw_error(DPT_ERROR_INTERNAL, "unhandled activation");
  });
}

dpt_status dpt_model_add_flatten(dpt_model *model) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) { m.add_flatten(); });
}

dpt_status dpt_model_add_dropout(dpt_model *model, float rate) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) { m.add_dropout(rate); });
}

#define DPT_MODEL_GETTER(fn, expr)                     \
  dpt_status fn(const dpt_model *model, size_t *out) { \
    return guarded(__func__, [&] {                     \
      require_not_null(model, "model");                \
      const auto use = dpt::capi::shared(model);       \
      require_not_null(out, "output pointer");         \
      *out = (expr);                                   \
    });                                                \
  }

DPT_MODEL_GETTER(dpt_model_input_size, model->impl.input().size())
DPT_MODEL_GETTER(dpt_model_output_size, model->impl.output().size())
DPT_MODEL_GETTER(dpt_model_parameter_count, model->impl.parameter_count())
DPT_MODEL_GETTER(dpt_model_layer_count, model->impl.nodes().size())

dpt_status dpt_model_describe(const dpt_model *model, char *buffer, size_t capacity, size_t *needed) {
  return guarded(__func__, [&] {
    require_not_null(model, "model");
    const auto use = dpt::capi::shared(model);
    DPT_REQUIRE(buffer != nullptr || capacity == 0, DPT_ERROR_NULL_POINTER,
                "buffer is NULL but capacity is not 0");
    const std::string text = model->impl.describe();
    if (needed != nullptr) *needed = text.size() + 1;
    DPT_REQUIRE(capacity >= text.size() + 1, DPT_ERROR_BUFFER_TOO_SMALL,
                "the description needs " + std::to_string(text.size() + 1) + " bytes, capacity is " +
                    std::to_string(capacity));
    std::memcpy(buffer, text.c_str(), text.size() + 1);
  });
}

}  // extern "C"
