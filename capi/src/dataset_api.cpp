// dpt_dataset_*: loading and reading datasets.
#include <cmath>
#include <cstring>

#include "api_support.hpp"
#include "handles.hpp"

using dpt::capi::checked_mul;
using dpt::capi::guarded;
using dpt::capi::require_not_null;

extern "C" {

dpt_status dpt_dataset_load_idx(dpt_dataset **out, const char *images_path, const char *labels_path) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(images_path, "images_path");
    require_not_null(labels_path, "labels_path");
    *out = new dpt_dataset{dpt::load_idx(images_path, labels_path)};
  });
}

dpt_status dpt_dataset_load_fashion_mnist(dpt_dataset **out, const char *directory, dpt_dataset_part part) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    const dpt_dataset_part which =
        dpt::capi::checked_enum(part, {DPT_DATASET_TRAIN, DPT_DATASET_TEST}, "dataset part");
    *out = new dpt_dataset{dpt::load_fashion_mnist(directory ? directory : "", which == DPT_DATASET_TRAIN)};
  });
}

dpt_status dpt_dataset_create(dpt_dataset **out, const float *inputs, size_t input_count,
                              const int32_t *labels, size_t sample_count, size_t channels, size_t height,
                              size_t width, size_t classes) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(inputs, "inputs");
    require_not_null(labels, "labels");
    DPT_REQUIRE(sample_count > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
    DPT_REQUIRE(classes > 0 && classes <= (1u << 24), DPT_ERROR_INVALID_ARGUMENT,
                "classes must be in 1..2^24");
    dpt::ModelSpec shape_check(dpt::Shape{channels, height, width});  // validates the sample shape
    const size_t per = shape_check.input().size();
    const size_t expected = checked_mul(sample_count, per, "sample_count * sample size");
    DPT_REQUIRE(input_count == expected, DPT_ERROR_SIZE_MISMATCH,
                "input_count is " + std::to_string(input_count) + ", expected " + std::to_string(expected));
    for (size_t i = 0; i < sample_count; ++i)
      DPT_REQUIRE(labels[i] >= 0 && size_t(labels[i]) < classes, DPT_ERROR_OUT_OF_RANGE,
                  "label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                      " is outside [0, " + std::to_string(classes) + ")");
    std::vector<float> x(inputs, inputs + input_count);
    std::vector<int32_t> y(labels, labels + sample_count);
    *out = new dpt_dataset{
        dpt::Dataset(dpt::Shape{channels, height, width}, classes, std::move(x), std::move(y))};
  });
}

dpt_status dpt_dataset_subset(dpt_dataset **out, const dpt_dataset *source, size_t start, size_t count) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(source, "source");
    *out = new dpt_dataset{source->impl.subset(start, count)};
  });
}

void dpt_dataset_destroy(dpt_dataset *dataset) {
  delete dataset;
}

dpt_status dpt_dataset_sample_count(const dpt_dataset *dataset, size_t *count) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(count, "count");
    *count = dataset->impl.size();
  });
}

dpt_status dpt_dataset_shape(const dpt_dataset *dataset, size_t *channels, size_t *height, size_t *width) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    const dpt::Shape &s = dataset->impl.shape();
    if (channels) *channels = s[0];
    if (height) *height = s[1];
    if (width) *width = s[2];
  });
}

dpt_status dpt_dataset_class_count(const dpt_dataset *dataset, size_t *classes) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(classes, "classes");
    *classes = dataset->impl.classes();
  });
}

dpt_status dpt_dataset_copy_batch(const dpt_dataset *dataset, size_t start, size_t count, float *inputs,
                                  size_t input_count, int32_t *labels, size_t label_count) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(inputs, "inputs");
    require_not_null(labels, "labels");
    const dpt::Dataset &d = dataset->impl;
    DPT_REQUIRE(count > 0, DPT_ERROR_INVALID_ARGUMENT, "count must be positive");
    DPT_REQUIRE(start <= d.size() && count <= d.size() - start, DPT_ERROR_OUT_OF_RANGE,
                "samples [" + std::to_string(start) + ", +" + std::to_string(count) + ") exceed the " +
                    std::to_string(d.size()) + " samples");
    const size_t per = d.shape().size();
    DPT_REQUIRE(
        input_count == count * per, DPT_ERROR_SIZE_MISMATCH,
        "input_count is " + std::to_string(input_count) + ", expected " + std::to_string(count * per));
    DPT_REQUIRE(label_count == count, DPT_ERROR_SIZE_MISMATCH,
                "label_count is " + std::to_string(label_count) + ", expected " + std::to_string(count));
    std::memcpy(inputs, d.inputs() + start * per, count * per * sizeof(float));
    std::memcpy(labels, d.labels() + start, count * sizeof(int32_t));
  });
}

}  // extern "C"
