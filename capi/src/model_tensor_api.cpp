// dpt_model_tensor_shape, the named parameters and buffers of a model, and tying parameters.
#include "model_calls.hpp"

using dpt::ModelSpec;
using dpt::capi::require_not_null;
using dpt::capi::with_model_query;

namespace {

bool is_buffer(const dpt_tensor_kind &kind) {  // by reference: see model_calls.hpp
  return dpt::capi::checked_enum(kind, {DPT_TENSOR_PARAMETER, DPT_TENSOR_BUFFER}, "tensor kind") ==
         DPT_TENSOR_BUFFER;
}

}  // namespace

extern "C" {

dpt_status dpt_model_tensor_shape(const dpt_model *model, size_t tensor, size_t *dims, size_t capacity,
                                  size_t *rank) {
  return with_model_query(__func__, model, [&](const ModelSpec &m) {
    require_not_null(rank, "rank");
    DPT_REQUIRE(dims != nullptr || capacity == 0, DPT_ERROR_NULL_POINTER,
                "dims is NULL but capacity is not 0");
    DPT_REQUIRE(tensor < m.tensors().size(), DPT_ERROR_INVALID_ARGUMENT,
                "tensor " + std::to_string(tensor) + " does not exist (the model has " +
                    std::to_string(m.tensors().size()) + ")");
    const dpt::Shape &shape = m.tensors()[tensor].shape;
    *rank = shape.rank();
    DPT_REQUIRE(capacity >= shape.rank(), DPT_ERROR_BUFFER_TOO_SMALL,
                "tensor " + std::to_string(tensor) + " has " + std::to_string(shape.rank()) +
                    " dimensions, capacity is " + std::to_string(capacity));
    for (size_t i = 0; i < shape.rank(); ++i) dims[i] = shape[i];
  });
}

dpt_status dpt_model_named_tensor_count(const dpt_model *model, dpt_tensor_kind kind, size_t *count) {
  return with_model_query(__func__, model, [&](const ModelSpec &m) {
    const bool buffers = is_buffer(kind);
    require_not_null(count, "count");
    *count = m.named_count(buffers);
  });
}

dpt_status dpt_model_named_tensor(const dpt_model *model, dpt_tensor_kind kind, size_t index, char *name,
                                  size_t capacity, size_t *needed, size_t *offset, size_t *dims,
                                  size_t dims_capacity, size_t *rank) {
  return with_model_query(__func__, model, [&](const ModelSpec &m) {
    const bool buffers = is_buffer(kind);
    DPT_REQUIRE(name != nullptr || capacity == 0, DPT_ERROR_NULL_POINTER,
                "name is NULL but capacity is not 0");
    DPT_REQUIRE(dims != nullptr || dims_capacity == 0, DPT_ERROR_NULL_POINTER,
                "dims is NULL but dims_capacity is not 0");
    const size_t count = m.named_count(buffers);
    DPT_REQUIRE(index < count, DPT_ERROR_OUT_OF_RANGE,
                "index " + std::to_string(index) + " is out of range (the model has " +
                    std::to_string(count) + (buffers ? " buffers)" : " parameter tensors)"));
    const dpt::NamedTensor t = m.named(buffers, index);
    if (needed != nullptr) *needed = t.name.size() + 1;
    if (rank != nullptr) *rank = t.shape.rank();
    DPT_REQUIRE(capacity > t.name.size(), DPT_ERROR_BUFFER_TOO_SMALL,
                "the name needs " + std::to_string(t.name.size() + 1) + " bytes, capacity is " +
                    std::to_string(capacity));
    DPT_REQUIRE(dims_capacity >= t.shape.rank(), DPT_ERROR_BUFFER_TOO_SMALL,
                "the shape has " + std::to_string(t.shape.rank()) + " dimensions, dims_capacity is " +
                    std::to_string(dims_capacity));
    std::memcpy(name, t.name.c_str(), t.name.size() + 1);
    for (size_t i = 0; i < t.shape.rank(); ++i) dims[i] = t.shape[i];
    if (offset != nullptr) *offset = t.offset;
  });
}

dpt_status dpt_model_tie(dpt_model *model, const char *parameter, const char *source) {
  return dpt::capi::with_model(__func__, model, [&](ModelSpec &m) {
    require_not_null(parameter, "parameter");
    require_not_null(source, "source");
    // (longer names than any node's parameter name fail the lookup)
    const size_t longest = dpt::kMaxNameLength + 33;
    m.tie(std::string(parameter, strnlen(parameter, longest)), std::string(source, strnlen(source, longest)));
  });
}

}  // extern "C"
