// dpt_dataset_*: loading and reading datasets.
#include <cmath>
#include <cstring>

#include "api_support.hpp"
#include "data/text_corpus.hpp"
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

dpt_status dpt_dataset_load_text(dpt_dataset **train, dpt_dataset **validation, const char *path,
                                 size_t context_length, double validation_fraction) {
  return guarded(__func__, [&] {
    require_not_null(train, "train");
    require_not_null(path, "path");
    DPT_REQUIRE(context_length >= 1 && context_length <= (size_t(1) << 20), DPT_ERROR_INVALID_ARGUMENT,
                "context_length must be in 1..2^20, got " + std::to_string(context_length));
    const dpt::TextCorpus corpus = dpt::load_text_corpus(path);
    const dpt::TextSplits splits = dpt::split_text(corpus, context_length, validation_fraction);
    auto t = std::make_unique<dpt_dataset>(dpt_dataset{dpt::token_dataset(splits.train)});
    std::unique_ptr<dpt_dataset> v;
    if (validation != nullptr)
      v = std::make_unique<dpt_dataset>(dpt_dataset{dpt::token_dataset(splits.validation)});
    *train = t.release();
    if (validation != nullptr) *validation = v.release();
  });
}

dpt_status dpt_dataset_create_tokens(dpt_dataset **out, const int32_t *tokens, size_t token_count,
                                     const int32_t *targets, size_t target_count, size_t sample_count,
                                     size_t sequence_length, size_t vocabulary) {
  return guarded(__func__, [&] {
    require_not_null(out, "out");
    require_not_null(tokens, "tokens");
    require_not_null(targets, "targets");
    DPT_REQUIRE(sample_count > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
    DPT_REQUIRE(sequence_length > 0 && sequence_length <= (size_t(1) << 20), DPT_ERROR_INVALID_ARGUMENT,
                "sequence_length must be in 1..2^20");
    DPT_REQUIRE(vocabulary > 0 && vocabulary <= (size_t(1) << 24), DPT_ERROR_INVALID_ARGUMENT,
                "vocabulary must be in 1..2^24");
    const size_t expected = checked_mul(sample_count, sequence_length, "sample_count * sequence_length");
    DPT_REQUIRE(token_count == expected, DPT_ERROR_SIZE_MISMATCH,
                "token_count is " + std::to_string(token_count) + ", expected " + std::to_string(expected));
    DPT_REQUIRE(target_count == expected || target_count == sample_count, DPT_ERROR_SIZE_MISMATCH,
                "target_count is " + std::to_string(target_count) + ", expected " + std::to_string(expected) +
                    " (one per position) or " + std::to_string(sample_count) + " (one per sample)");
    const size_t per = target_count / sample_count;
    for (size_t i = 0; i < token_count; ++i)
      DPT_REQUIRE(tokens[i] >= 0 && size_t(tokens[i]) < vocabulary, DPT_ERROR_OUT_OF_RANGE,
                  "token " + std::to_string(tokens[i]) + " of sample " + std::to_string(i / sequence_length) +
                      " (position " + std::to_string(i % sequence_length) + ") is outside [0, " +
                      std::to_string(vocabulary) + ")");
    for (size_t i = 0; i < target_count; ++i)
      DPT_REQUIRE(targets[i] == DPT_IGNORE_LABEL || (targets[i] >= 0 && size_t(targets[i]) < vocabulary),
                  DPT_ERROR_OUT_OF_RANGE,
                  "target " + std::to_string(targets[i]) + " of sample " + std::to_string(i / per) +
                      " is outside [0, " + std::to_string(vocabulary) + ") and not DPT_IGNORE_LABEL");
    *out = new dpt_dataset{dpt::Dataset::of_tokens(
        dpt::Shape{sequence_length}, vocabulary, std::vector<int32_t>(tokens, tokens + token_count),
        std::vector<int32_t>(targets, targets + target_count), per)};
  });
}

dpt_status dpt_dataset_input_type(const dpt_dataset *dataset, dpt_input_type *type) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(type, "type");
    *type = dataset->impl.dtype() == dpt::DType::kI32 ? DPT_INPUT_TOKENS : DPT_INPUT_FLOAT32;
  });
}

dpt_status dpt_dataset_targets_per_sample(const dpt_dataset *dataset, size_t *count) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(count, "count");
    *count = dataset->impl.targets_per_sample();
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
    if (height) *height = s.rank() > 1 ? s[1] : 1;
    if (width) *width = s.rank() > 2 ? s[2] : 1;
  });
}

dpt_status dpt_dataset_class_count(const dpt_dataset *dataset, size_t *classes) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(classes, "classes");
    *classes = dataset->impl.classes();
  });
}

namespace {
// The checks dpt_dataset_copy_batch and dpt_dataset_copy_tokens share; then copies the samples' values
// and labels.
void copy_samples(const dpt::Dataset &d, size_t start, size_t count, void *inputs, size_t input_count,
                  const char *input_name, int32_t *labels, size_t label_count, const char *label_name) {
  DPT_REQUIRE(count > 0, DPT_ERROR_INVALID_ARGUMENT, "count must be positive");
  DPT_REQUIRE(start <= d.size() && count <= d.size() - start, DPT_ERROR_OUT_OF_RANGE,
              "samples [" + std::to_string(start) + ", +" + std::to_string(count) + ") exceed the " +
                  std::to_string(d.size()) + " samples");
  const size_t per = d.shape().size(), targets = d.targets_per_sample();
  DPT_REQUIRE(input_count == count * per, DPT_ERROR_SIZE_MISMATCH,
              std::string(input_name) + " is " + std::to_string(input_count) + ", expected " +
                  std::to_string(count * per));
  DPT_REQUIRE(label_count == count * targets, DPT_ERROR_SIZE_MISMATCH,
              std::string(label_name) + " is " + std::to_string(label_count) + ", expected " +
                  std::to_string(count * targets));
  std::memcpy(inputs, d.sample(start), count * per * 4);
  std::memcpy(labels, d.labels(start), count * targets * sizeof(int32_t));
}
}  // namespace

dpt_status dpt_dataset_copy_batch(const dpt_dataset *dataset, size_t start, size_t count, float *inputs,
                                  size_t input_count, int32_t *labels, size_t label_count) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(inputs, "inputs");
    require_not_null(labels, "labels");
    DPT_REQUIRE(dataset->impl.dtype() == dpt::DType::kF32, DPT_ERROR_INVALID_ARGUMENT,
                "the dataset holds int32 tokens: copy them with dpt_dataset_copy_tokens");
    copy_samples(dataset->impl, start, count, inputs, input_count, "input_count", labels, label_count,
                 "label_count");
  });
}

dpt_status dpt_dataset_copy_tokens(const dpt_dataset *dataset, size_t start, size_t count, int32_t *tokens,
                                   size_t token_count, int32_t *targets, size_t target_count) {
  return guarded(__func__, [&] {
    require_not_null(dataset, "dataset");
    require_not_null(tokens, "tokens");
    require_not_null(targets, "targets");
    DPT_REQUIRE(dataset->impl.dtype() == dpt::DType::kI32, DPT_ERROR_INVALID_ARGUMENT,
                "the dataset holds float32 samples: copy them with dpt_dataset_copy_batch");
    copy_samples(dataset->impl, start, count, tokens, token_count, "token_count", targets, target_count,
                 "target_count");
  });
}

}  // extern "C"
