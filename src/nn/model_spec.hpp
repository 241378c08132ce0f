// A model description: the input shape and the layer list, with every shape inferred when a layer is added.
// It holds no weights; each replica instantiates its own layers from it (see network.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dpt {

struct Shape {
  size_t c = 0, h = 0, w = 0;
  size_t size() const { return c * h * w; }
  bool operator==(const Shape &) const = default;
};

enum class LayerKind { kDense, kConv2d, kAvgPool, kMaxPool, kRelu, kSigmoid, kTanh, kFlatten, kDropout };

struct LayerSpec {
  LayerKind kind = LayerKind::kDense;
  size_t units = 0;                            // dense outputs, conv output channels
  size_t kernel = 0, stride = 1, padding = 0;  // conv and pool
  float rate = 0;                              // dropout
  Shape in, out;
  size_t weights() const;     // weight count (no biases)
  size_t parameters() const;  // weights + biases
  size_t fan_in() const;
};

class ModelSpec {
 public:
  explicit ModelSpec(Shape input);
  static ModelSpec builtin(const std::string &name);  // "lenet", "mlp"

  void add_dense(size_t units);
  void add_conv2d(size_t out_channels, size_t kernel, size_t stride, size_t padding);
  void add_pool(LayerKind kind, size_t window, size_t stride);
  void add_activation(LayerKind kind);
  void add_flatten();
  void add_dropout(float rate);

  const Shape &input() const { return input_; }
  Shape output() const { return layers_.empty() ? input_ : layers_.back().out; }
  const std::vector<LayerSpec> &layers() const { return layers_; }
  size_t parameter_count() const;
  std::string describe() const;

 private:
  Shape current() const { return output(); }
  void push(LayerSpec spec);

  Shape input_;
  std::vector<LayerSpec> layers_;
};

}  // namespace dpt
