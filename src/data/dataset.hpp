// An in-memory classification dataset: float32 NCHW samples and int32 labels, in host memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.hpp"

namespace dpt {

class Dataset {
 public:
  Dataset(Shape shape, size_t classes, std::vector<float> inputs, std::vector<int32_t> labels);

  size_t size() const { return labels_.size(); }
  const Shape &shape() const { return shape_; }
  size_t classes() const { return classes_; }
  const float *inputs() const { return inputs_.data(); }
  const int32_t *labels() const { return labels_.data(); }

  // Copies the samples at indices[0, n) into x (n * shape.size() floats) and y (n labels).
  void gather(const size_t *indices, size_t n, float *x, int32_t *y) const;
  Dataset subset(size_t start, size_t count) const;
  // Raises the class count (never below one more than the largest label).
  void widen_classes(size_t classes) { classes_ = classes > classes_ ? classes : classes_; }

 private:
  Shape shape_;
  size_t classes_;
  std::vector<float> inputs_;
  std::vector<int32_t> labels_;
};

// IDX image file (u8, magic 0x803) + IDX label file (u8, magic 0x801), gzip or plain. Pixels / 255.
Dataset load_idx(const std::string &images_path, const std::string &labels_path);

// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz under directory ("" = DPTRAIN_DATA_DIR or the default).
Dataset load_fashion_mnist(const std::string &directory, bool train);

}  // namespace dpt
