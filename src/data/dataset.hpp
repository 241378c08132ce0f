// An in-memory dataset in host memory: samples of float32 values (NCHW images) or of int32 tokens, and
// int32 labels, one per sample (a class) or one per position (a sequence's next tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.hpp"

namespace dpt {

class Dataset {
 public:
  // Float32 samples: inputs holds labels.size() * shape.size() values; one label per sample.
  Dataset(Shape shape, size_t classes, std::vector<float> inputs, std::vector<int32_t> labels);
  // Int32 token samples: tokens holds n * shape.size() tokens in [0, classes) (the vocabulary), targets
  // n * targets_per_sample labels in [0, classes) or -1 (ignored).
  static Dataset of_tokens(Shape shape, size_t classes, std::vector<int32_t> tokens,
                           std::vector<int32_t> targets, size_t targets_per_sample);

  size_t size() const { return labels_.size() / targets_per_sample_; }
  const Shape &shape() const { return shape_; }
  DType dtype() const { return tokens_.empty() ? DType::kF32 : DType::kI32; }
  size_t classes() const { return classes_; }
  size_t targets_per_sample() const { return targets_per_sample_; }
  // Sample i's shape.size() values (float32 or int32: 4 bytes each) and its targets_per_sample() labels.
  const void *sample(size_t i) const;
  const int32_t *labels(size_t i = 0) const { return labels_.data() + i * targets_per_sample_; }

  // Copies the samples at indices[0, n) into x (n * shape.size() 4-byte values) and y (n *
  // targets_per_sample() labels).
  void gather(const size_t *indices, size_t n, void *x, int32_t *y) const;
  Dataset subset(size_t start, size_t count) const;
  // Raises the class count (never below one more than the largest label).
  void widen_classes(size_t classes) { classes_ = classes > classes_ ? classes : classes_; }

 private:
  Dataset() = default;

  Shape shape_;
  size_t classes_ = 0;
  size_t targets_per_sample_ = 1;
  std::vector<float> inputs_;    // float32 samples, or
  std::vector<int32_t> tokens_;  // token samples (exactly one of the two is non-empty)
  std::vector<int32_t> labels_;
};

// IDX image file (u8, magic 0x803) + IDX label file (u8, magic 0x801), gzip or plain. Pixels / 255.
Dataset load_idx(const std::string &images_path, const std::string &labels_path);

// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz under directory ("" = DPTRAIN_DATA_DIR or the default).
Dataset load_fashion_mnist(const std::string &directory, bool train);

}  // namespace dpt
