// dpt_model_*: creating models, the sequential builders of 0.1 and the queries of every model.
#include <cstring>

#include "model_calls.hpp"

using dpt::capi::guarded;
using dpt::capi::require_not_null;
using dpt::capi::with_model;

extern "C" {

dpt_status dpt_model_create(dpt_model **out, size_t channels, size_t height, size_t width) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    *out = new dpt_model{dpt::ModelSpec(dpt::Shape{channels, height, width}), {}};
  });
}

dpt_status dpt_model_create_tokens(dpt_model **out, size_t sequence_length) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    *out = new dpt_model{dpt::ModelSpec(dpt::Shape{sequence_length}, dpt::DType::kI32), {}};
  });
}

dpt_status dpt_model_input_type(const dpt_model *model, dpt_input_type *type) {
  return guarded(__func__, [&] {
    require_not_null(model, "model");
    const auto use = dpt::capi::shared(model);
    require_not_null(type, "type");
    *type = model->impl.input_dtype() == dpt::DType::kI32 ? DPT_INPUT_TOKENS : DPT_INPUT_FLOAT32;
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
    dpt::capi::add_pool_node(m, m.output_tensor(), kind, window, stride, "");
  });
}

dpt_status dpt_model_add_activation(dpt_model *model, dpt_activation activation) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) {
    dpt::capi::add_activation_node(m, m.output_tensor(), activation, "");
  });
}

dpt_status dpt_model_add_flatten(dpt_model *model) {
  return with_model(__func__, model, [&](dpt::ModelSpec &m) { m.add_flatten(); });
}

dpt_status dpt_model_add_dropout(dpt_model *model, float rate) {
  return with_model(__func__, model,
                    [&](dpt::ModelSpec &m) { dpt::capi::add_dropout_node(m, m.output_tensor(), rate, ""); });
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
DPT_MODEL_GETTER(dpt_model_output, model->impl.output_tensor())
DPT_MODEL_GETTER(dpt_model_tensor_count, model->impl.tensors().size())
DPT_MODEL_GETTER(dpt_model_buffer_count, model->impl.buffer_count())

dpt_status dpt_model_describe(const dpt_model *model, char *buffer, size_t capacity, size_t *needed) {
  return guarded(__func__, [&] {
    require_not_null(model, "model");
    const auto use = dpt::capi::shared(model);
    dpt::capi::copy_text(model->impl.describe(), buffer, capacity, needed, "the description");
  });
}

}  // extern "C"
