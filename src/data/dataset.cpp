#include "data/dataset.hpp"

#include <cstring>

#include "core/error.hpp"

namespace dpt {

Dataset::Dataset(Shape shape, size_t classes, std::vector<float> inputs, std::vector<int32_t> labels)
    : shape_(shape), classes_(classes), inputs_(std::move(inputs)), labels_(std::move(labels)) {
  DPT_REQUIRE(inputs_.size() == labels_.size() * shape_.size(), DPT_ERROR_INTERNAL, "dataset size mismatch");
}

Dataset Dataset::of_tokens(Shape shape, size_t classes, std::vector<int32_t> tokens,
                           std::vector<int32_t> targets, size_t targets_per_sample) {
  DPT_REQUIRE(targets_per_sample > 0 && targets.size() % targets_per_sample == 0 &&
                  tokens.size() == targets.size() / targets_per_sample * shape.size() && !tokens.empty(),
              DPT_ERROR_INTERNAL, "token dataset size mismatch");
  Dataset d;
  d.shape_ = shape;
  d.classes_ = classes;
  d.targets_per_sample_ = targets_per_sample;
  d.tokens_ = std::move(tokens);
  d.labels_ = std::move(targets);
  return d;
}

const void *Dataset::sample(size_t i) const {
  const size_t offset = i * shape_.size();
  return tokens_.empty() ? static_cast<const void *>(inputs_.data() + offset) : tokens_.data() + offset;
}

void Dataset::gather(const size_t *indices, size_t n, void *x, int32_t *y) const {
  static_assert(sizeof(float) == sizeof(int32_t));
  const size_t per = shape_.size(), targets = targets_per_sample_;
  char *out = static_cast<char *>(x);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(out + i * per * 4, sample(indices[i]), per * 4);
    std::memcpy(y + i * targets, labels(indices[i]), targets * sizeof(int32_t));
  }
}

Dataset Dataset::subset(size_t start, size_t count) const {
  DPT_REQUIRE(start <= size() && count <= size() - start, DPT_ERROR_OUT_OF_RANGE,
              "subset [" + std::to_string(start) + ", +" + std::to_string(count) + ") exceeds the " +
                  std::to_string(size()) + " samples");
  DPT_REQUIRE(count > 0, DPT_ERROR_INVALID_ARGUMENT, "subset must hold at least one sample");
  const size_t per = shape_.size(), targets = targets_per_sample_;
  std::vector<int32_t> y(labels(start), labels(start) + count * targets);
  if (dtype() == DType::kI32) {
    const int32_t *t = static_cast<const int32_t *>(sample(start));
    return of_tokens(shape_, classes_, std::vector<int32_t>(t, t + count * per), std::move(y), targets);
  }
  const float *x = static_cast<const float *>(sample(start));
  return Dataset(shape_, classes_, std::vector<float>(x, x + count * per), std::move(y));
}

}  // namespace dpt
