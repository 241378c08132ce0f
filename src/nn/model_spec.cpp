#include "nn/model_spec.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace dpt {

namespace {

// Bounds that keep every size product far from overflow and every index within int (BLAS takes int).
constexpr size_t kMaxFloatsPerSample = size_t(1) << 28;
constexpr size_t kMaxParameters = size_t(1) << 30;

std::string shape_text(const Shape &s) {
  return std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w);
}

}  // namespace

size_t LayerSpec::weights() const {
  switch (kind) {
    case LayerKind::kDense:
      return units * in.size();
    case LayerKind::kConv2d:
      return units * in.c * kernel * kernel;
    default:
      return 0;
  }
}

size_t LayerSpec::parameters() const {
  return kind == LayerKind::kDense || kind == LayerKind::kConv2d ? weights() + units : 0;
}

size_t LayerSpec::fan_in() const {
  return kind == LayerKind::kDense ? in.size() : kind == LayerKind::kConv2d ? in.c * kernel * kernel : 0;
}

ModelSpec::ModelSpec(Shape input) : input_(input) {
  DPT_REQUIRE(input.c > 0 && input.h > 0 && input.w > 0, DPT_ERROR_INVALID_ARGUMENT,
              "model input dimensions must be positive, got " + shape_text(input));
  DPT_REQUIRE(input.c <= kMaxFloatsPerSample && input.h <= kMaxFloatsPerSample &&
                  input.w <= kMaxFloatsPerSample && input.c * input.h <= kMaxFloatsPerSample &&
                  input.size() <= kMaxFloatsPerSample,
              DPT_ERROR_INVALID_ARGUMENT, "model input has more than 2^28 floats per sample");
}

ModelSpec ModelSpec::builtin(const std::string &name) {
  ModelSpec m(Shape{1, 28, 28});
  if (name == "lenet") {
    m.add_conv2d(20, 3, 1, 0);
    m.add_activation(LayerKind::kRelu);
    m.add_pool(LayerKind::kAvgPool, 2, 2);
    m.add_conv2d(50, 5, 1, 0);
    m.add_activation(LayerKind::kRelu);
    m.add_pool(LayerKind::kAvgPool, 2, 2);
    m.add_flatten();
    m.add_dense(128);
    m.add_activation(LayerKind::kRelu);
    m.add_dense(10);
  } else if (name == "mlp") {
    m.add_flatten();
    m.add_dense(256);
    m.add_activation(LayerKind::kRelu);
    m.add_dense(10);
  } else {
    throw_error(DPT_ERROR_INVALID_ARGUMENT, "unknown built-in model '" + name + "' (expected lenet or mlp)");
  }
  return m;
}

void ModelSpec::push(LayerSpec spec) {
  DPT_REQUIRE(spec.out.size() > 0 && spec.out.size() <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "layer output must have between 1 and 2^28 floats per sample");
  DPT_REQUIRE(parameter_count() + spec.parameters() <= kMaxParameters, DPT_ERROR_INVALID_ARGUMENT,
              "model would have more than 2^30 parameters");
  layers_.push_back(spec);
}

void ModelSpec::add_dense(size_t units) {
  DPT_REQUIRE(units > 0 && units <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "dense units must be in 1..2^28, got " + std::to_string(units));
  DPT_REQUIRE(current().size() <= kMaxParameters / units, DPT_ERROR_INVALID_ARGUMENT,
              "dense layer would have more than 2^30 parameters");
  LayerSpec s;
  s.kind = LayerKind::kDense;
  s.units = units;
  s.in = current();
  s.out = Shape{units, 1, 1};
  push(s);
}

void ModelSpec::add_conv2d(size_t out_channels, size_t kernel, size_t stride, size_t padding) {
  Shape in = current();
  DPT_REQUIRE(out_channels > 0 && out_channels <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d out_channels must be in 1..2^28");
  DPT_REQUIRE(kernel > 0 && stride > 0, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d kernel and stride must be positive");
  DPT_REQUIRE(padding <= 1024 && kernel <= 4096 && stride <= 4096, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d kernel, stride or padding too large");
  DPT_REQUIRE(kernel <= in.h + 2 * padding && kernel <= in.w + 2 * padding, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d kernel " + std::to_string(kernel) + " does not fit the padded input " + shape_text(in));
  DPT_REQUIRE(in.c * kernel * kernel <= kMaxParameters / out_channels, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d layer would have more than 2^30 parameters");
  LayerSpec s;
  s.kind = LayerKind::kConv2d;
  s.units = out_channels;
  s.kernel = kernel;
  s.stride = stride;
  s.padding = padding;
  s.in = in;
  s.out = Shape{out_channels, (in.h + 2 * padding - kernel) / stride + 1,
                (in.w + 2 * padding - kernel) / stride + 1};
  DPT_REQUIRE(s.out.h * s.out.w <= kMaxFloatsPerSample / out_channels, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d output has more than 2^28 floats per sample");
  push(s);
}

void ModelSpec::add_pool(LayerKind kind, size_t window, size_t stride) {
  Shape in = current();
  DPT_REQUIRE(window > 0 && stride > 0, DPT_ERROR_INVALID_ARGUMENT,
              "pool window and stride must be positive");
  DPT_REQUIRE(window <= in.h && window <= in.w, DPT_ERROR_INVALID_ARGUMENT,
              "pool window " + std::to_string(window) + " does not fit the input " + shape_text(in));
  LayerSpec s;
  s.kind = kind;
  s.kernel = window;
  s.stride = stride;
  s.in = in;
  s.out = Shape{in.c, (in.h - window) / stride + 1, (in.w - window) / stride + 1};
  push(s);
}

void ModelSpec::add_activation(LayerKind kind) {
  LayerSpec s;
  s.kind = kind;
  s.in = s.out = current();
  push(s);
}

void ModelSpec::add_flatten() {
  LayerSpec s;
  s.kind = LayerKind::kFlatten;
  s.in = current();
  s.out = Shape{s.in.size(), 1, 1};
  push(s);
}

void ModelSpec::add_dropout(float rate) {
  DPT_REQUIRE(std::isfinite(rate) && rate >= 0.0f && rate < 1.0f, DPT_ERROR_OUT_OF_RANGE,
              "dropout rate must be in [0, 1), got " + std::to_string(rate));
  LayerSpec s;
  s.kind = LayerKind::kDropout;
  s.rate = rate;
  s.in = s.out = current();
  push(s);
}

size_t ModelSpec::parameter_count() const {
  size_t n = 0;
  for (const auto &l : layers_) n += l.parameters();
  return n;
}

std::string ModelSpec::describe() const {
  std::string text = shape_text(input_);
  for (const auto &l : layers_) {
    text += ' ';
    switch (l.kind) {
      case LayerKind::kDense:
        text += "dense:" + std::to_string(l.units);
        break;
      case LayerKind::kConv2d:
        text += "conv" + std::to_string(l.kernel) + "x" + std::to_string(l.kernel) + "s" +
                std::to_string(l.stride) + "p" + std::to_string(l.padding) + ":" + std::to_string(l.units);
        break;
      case LayerKind::kAvgPool:
      case LayerKind::kMaxPool:
        text += std::string(l.kind == LayerKind::kAvgPool ? "avgpool" : "maxpool") +
                std::to_string(l.kernel) + "s" + std::to_string(l.stride);
        break;
      case LayerKind::kRelu:
        text += "relu";
        break;
      case LayerKind::kSigmoid:
        text += "sigmoid";
        break;
      case LayerKind::kTanh:
        text += "tanh";
        break;
      case LayerKind::kFlatten:
        text += "flatten";
        break;
      case LayerKind::kDropout: {
        char buf[32];
        std::snprintf(buf, sizeof buf, "dropout:%g", double(l.rate));
        text += buf;
        break;
      }
    }
  }
  return text;
}

}  // namespace dpt
