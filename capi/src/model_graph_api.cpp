// dpt_model_<op>: the graph builders, which name the tensors they read and return the one they make, and
// dpt_model_set_output.
#include <cmath>

#include "model_calls.hpp"

using dpt::ModelSpec;
using dpt::op_def;
using dpt::OpAttrs;
using dpt::capi::build_node;
using dpt::capi::int_attrs;

extern "C" {

dpt_status dpt_model_set_output(dpt_model *model, size_t tensor) {
  return dpt::capi::with_model(__func__, model, [&](ModelSpec &m) { m.set_output(tensor); });
}

dpt_status dpt_model_conv2d(dpt_model *model, size_t input, size_t out_channels, size_t kernel, size_t stride,
                            size_t padding, int bias, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a = int_attrs({out_channels, kernel, stride, padding});
    a.ints[4] = bias;
    return m.add(op_def("conv2d"), {input}, a, n);
  });
}

dpt_status dpt_model_dense(dpt_model *model, size_t input, size_t units, int bias, const char *name,
                           size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a = int_attrs({units});
    a.ints[1] = bias;
    return m.add(op_def("dense"), {input}, a, n);
  });
}

dpt_status dpt_model_linear(dpt_model *model, size_t input, size_t units, int bias, const char *name,
                            size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a = int_attrs({units});
    a.ints[1] = bias;
    return m.add(op_def("linear"), {input}, a, n);
  });
}

dpt_status dpt_model_token_embedding(dpt_model *model, size_t input, size_t vocabulary, size_t features,
                                     const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return m.add(op_def("token_embedding"), {input}, int_attrs({vocabulary, features}), n);
  });
}

dpt_status dpt_model_position_embedding(dpt_model *model, size_t input, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return m.add(op_def("position_embedding"), {input}, OpAttrs{}, n);
  });
}

dpt_status dpt_model_causal_self_attention(dpt_model *model, size_t input, size_t heads, float dropout,
                                           const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a = int_attrs({heads});
    a.reals[0] = std::isnan(dropout) ? -1.0 : dpt::capi::decimal(dropout);  // NaN: refused as out of range
    return m.add(op_def("causal_self_attention"), {input}, a, n);
  });
}

dpt_status dpt_model_batch_norm(dpt_model *model, size_t input, float eps, float momentum, const char *name,
                                size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a;
    a.reals[0] = dpt::capi::decimal(eps);
    a.reals[1] = dpt::capi::decimal(momentum);
    return m.add(op_def("batch_norm"), {input}, a, n);
  });
}

dpt_status dpt_model_layer_norm(dpt_model *model, size_t input, float eps, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    OpAttrs a;
    a.reals[0] = dpt::capi::decimal(eps);
    return m.add(op_def("layer_norm"), {input}, a, n);
  });
}

dpt_status dpt_model_activation(dpt_model *model, size_t input, dpt_activation activation, const char *name,
                                size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return dpt::capi::add_activation_node(m, input, activation, n);
  });
}

dpt_status dpt_model_pool(dpt_model *model, size_t input, dpt_pool_kind kind, size_t window, size_t stride,
                          const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return dpt::capi::add_pool_node(m, input, kind, window, stride, n);
  });
}

dpt_status dpt_model_global_avg_pool(dpt_model *model, size_t input, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return m.add(op_def("global_avg_pool"), {input}, OpAttrs{}, n);
  });
}

dpt_status dpt_model_flatten(dpt_model *model, size_t input, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return m.add(op_def("flatten"), {input}, OpAttrs{}, n);
  });
}

dpt_status dpt_model_dropout(dpt_model *model, size_t input, float rate, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return dpt::capi::add_dropout_node(m, input, rate, n);
  });
}

dpt_status dpt_model_add(dpt_model *model, size_t a, size_t b, const char *name, size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    return m.add(op_def("add"), {a, b}, OpAttrs{}, n);
  });
}

dpt_status dpt_model_concat(dpt_model *model, const size_t *inputs, size_t count, const char *name,
                            size_t *out) {
  return build_node(__func__, model, name, out, [&](ModelSpec &m, const std::string &n) {
    dpt::capi::require_not_null(inputs, "inputs");
    const dpt::OpDef &op = op_def("concat");
    DPT_REQUIRE(count >= op.min_inputs && count <= op.max_inputs, DPT_ERROR_INVALID_ARGUMENT,
                "concat takes " + std::to_string(op.min_inputs) + " to " + std::to_string(op.max_inputs) +
                    " tensors, count is " + std::to_string(count));
    return m.add(op, std::vector<size_t>(inputs, inputs + count), OpAttrs{}, n);
  });
}

}  // extern "C"
