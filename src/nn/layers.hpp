// The built-in layers. Parameters of dense and conv2d: weights first (PyTorch layout), then biases.
#pragma once

#include "nn/layer.hpp"

namespace dpt {

// y = x W^T + b, W is [out, in].
class DenseLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(const float *p, const float *x, float *y, float *, float *, const PassInfo &i) const override;
  void backward(const float *p, const float *x, const float *y, const float *dy, float *dx, float *dp,
                const float *, float *, const PassInfo &i) const override;
};

// Convolution by im2col + GEMM, one sample at a time. W is [out_c, in_c, k, k].
class Conv2dLayer final : public Layer {
 public:
  using Layer::Layer;
  size_t scratch_floats() const override;
  void forward(const float *p, const float *x, float *y, float *, float *scratch,
               const PassInfo &i) const override;
  void backward(const float *p, const float *x, const float *y, const float *dy, float *dx, float *dp,
                const float *, float *scratch, const PassInfo &i) const override;

 private:
  void im2col(const float *x, float *col) const;
  void col2im(const float *col, float *dx) const;
};

class AvgPoolLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(const float *, const float *x, float *y, float *, float *, const PassInfo &i) const override;
  void backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                const float *, float *, const PassInfo &i) const override;
};

// Saves the index of each window's first maximum.
class MaxPoolLayer final : public Layer {
 public:
  using Layer::Layer;
  size_t saved_floats_per_sample() const override { return spec().out.size(); }
  void forward(const float *, const float *x, float *y, float *saved, float *,
               const PassInfo &i) const override;
  void backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                const float *saved, float *, const PassInfo &i) const override;
};

// ReLU, sigmoid and tanh; backward uses the output only.
class ActivationLayer final : public Layer {
 public:
  using Layer::Layer;
  void forward(const float *, const float *x, float *y, float *, float *, const PassInfo &i) const override;
  void backward(const float *, const float *, const float *y, const float *dy, float *dx, float *,
                const float *, float *, const PassInfo &i) const override;
};

class FlattenLayer final : public Layer {
 public:
  using Layer::Layer;
  bool is_view() const override { return true; }
  void forward(const float *, const float *, float *, float *, float *, const PassInfo &) const override {}
  void backward(const float *, const float *, const float *, const float *, float *, float *, const float *,
                float *, const PassInfo &) const override {}
};

// Inverted dropout with a counter-based mask: the mask of (step, global sample, element) is the same
// whichever device computes it.
class DropoutLayer final : public Layer {
 public:
  using Layer::Layer;
  size_t saved_floats_per_sample() const override { return spec().out.size(); }
  void forward(const float *, const float *x, float *y, float *saved, float *,
               const PassInfo &i) const override;
  void backward(const float *, const float *, const float *, const float *dy, float *dx, float *,
                const float *saved, float *, const PassInfo &i) const override;
};

}  // namespace dpt
