#include "data/dataset.hpp"

#include <cstring>

#include "core/error.hpp"

namespace dpt {

Dataset::Dataset(Shape shape, size_t classes, std::vector<float> inputs, std::vector<int32_t> labels)
    : shape_(shape), classes_(classes), inputs_(std::move(inputs)), labels_(std::move(labels)) {
  DPT_REQUIRE(inputs_.size() == labels_.size() * shape_.size(), DPT_ERROR_INTERNAL, "dataset size mismatch");
}

void Dataset::gather(const size_t *indices, size_t n, float *x, int32_t *y) const {
  const size_t per = shape_.size();
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(x + i * per, inputs_.data() + indices[i] * per, per * sizeof(float));
    y[i] = labels_[indices[i]];
  }
}

Dataset Dataset::subset(size_t start, size_t count) const {
  DPT_REQUIRE(start <= size() && count <= size() - start, DPT_ERROR_OUT_OF_RANGE,
              "subset [" + std::to_string(start) + ", +" + std::to_string(count) + ") exceeds the " +
                  std::to_string(size()) + " samples");
  DPT_REQUIRE(count > 0, DPT_ERROR_INVALID_ARGUMENT, "subset must hold at least one sample");
  const size_t per = shape_.size();
  std::vector<float> x(inputs_.begin() + std::ptrdiff_t(start * per),
                       inputs_.begin() + std::ptrdiff_t((start + count) * per));
  std::vector<int32_t> y(labels_.begin() + std::ptrdiff_t(start),
                         labels_.begin() + std::ptrdiff_t(start + count));
  return Dataset(shape_, classes_, std::move(x), std::move(y));
}

}  // namespace dpt
