// The built-in models: LeNet and an MLP (sequential), ResNet-18 as the textbook (d2l, "Multiple GPUs")
// trains it on Fashion-MNIST: a 3x3 stem of 64 channels at stride 1 without max-pooling, four stages of two
// basic blocks; and gpt-mini, a GPT-2-style decoder on byte tokens. Parameters are named as torchvision's
// ResNet and nanoGPT's GPT name theirs, so that weights move to and from PyTorch by name.
#include <string>

#include "core/error.hpp"
#include "graph/model_spec.hpp"

namespace dpt {

namespace {

// conv3x3 (or 1x1) without bias, as ResNet's convolutions (a BatchNorm follows each).
size_t conv(ModelSpec &m, size_t input, size_t channels, size_t kernel, size_t stride,
            const std::string &name) {
  OpAttrs a;
  a.ints[0] = int64_t(channels);
  a.ints[1] = int64_t(kernel);
  a.ints[2] = int64_t(stride);
  a.ints[3] = int64_t(kernel / 2);
  a.ints[4] = 0;
  return m.add(op_def("conv2d"), {input}, a, name);
}

// torchvision's BasicBlock: conv-bn-relu-conv-bn, plus the input (or its 1x1 projection when the shape
// changes), then relu.
size_t basic_block(ModelSpec &m, size_t x, size_t channels, size_t stride, const std::string &name) {
  size_t y = conv(m, x, channels, 3, stride, name + ".conv1");
  y = m.add_batch_norm(y, 1e-5, 0.1, name + ".bn1");
  y = m.add_op("relu", {y}, name + ".relu1");
  y = conv(m, y, channels, 3, 1, name + ".conv2");
  y = m.add_batch_norm(y, 1e-5, 0.1, name + ".bn2");
  size_t shortcut = x;
  if (stride != 1 || m.tensors()[x].shape[0] != channels) {
    shortcut = conv(m, x, channels, 1, stride, name + ".downsample.0");
    shortcut = m.add_batch_norm(shortcut, 1e-5, 0.1, name + ".downsample.1");
  }
  y = m.add_op("add", {y, shortcut}, name + ".add");
  return m.add_op("relu", {y}, name + ".relu2");
}

ModelSpec resnet18() {
  ModelSpec m(Shape{1, 28, 28});
  size_t x = conv(m, 0, 64, 3, 1, "conv1");
  x = m.add_batch_norm(x, 1e-5, 0.1, "bn1");
  x = m.add_op("relu", {x}, "relu");
  const size_t channels[4] = {64, 128, 256, 512};
  for (size_t stage = 0; stage < 4; ++stage)
    for (size_t block = 0; block < 2; ++block)
      x = basic_block(m, x, channels[stage], stage > 0 && block == 0 ? 2 : 1,
                      "layer" + std::to_string(stage + 1) + "." + std::to_string(block));
  x = m.add_op("global_avg_pool", {x}, "avgpool");
  OpAttrs fc;
  fc.ints[0] = 10;
  fc.ints[1] = 1;
  m.add(op_def("dense"), {x}, fc, "fc");
  return m;
}

// gpt-mini's shape: 4 blocks, d_model 256, 4 heads, MLP 4x, context 128, byte vocabulary.
constexpr size_t kGptLayers = 4, kGptWidth = 256, kGptHeads = 4, kGptContext = 128, kGptVocabulary = 256;

size_t linear(ModelSpec &m, size_t x, size_t units, bool bias, const std::string &name) {
  OpAttrs a;
  a.ints[0] = int64_t(units);
  a.ints[1] = bias ? 1 : 0;
  return m.add(op_def("linear"), {x}, a, name);
}

size_t layer_norm(ModelSpec &m, size_t x, const std::string &name) {
  OpAttrs a;
  a.reals[0] = 1e-5;
  return m.add(op_def("layer_norm"), {x}, a, name);
}

// nanoGPT's Block: x + attn(ln_1(x)), then x + mlp(ln_2(x)); GELU's tanh approximation, as GPT-2.
size_t gpt_block(ModelSpec &m, size_t x, const std::string &name) {
  OpAttrs heads;
  heads.ints[0] = int64_t(kGptHeads);
  size_t h = linear(m, layer_norm(m, x, name + ".ln_1"), 3 * kGptWidth, true, name + ".attn.c_attn");
  h = m.add(op_def("causal_self_attention"), {h}, heads, name + ".attn.attention");
  x = m.add_op("add", {x, linear(m, h, kGptWidth, true, name + ".attn.c_proj")}, name + ".residual_1");
  h = linear(m, layer_norm(m, x, name + ".ln_2"), 4 * kGptWidth, true, name + ".mlp.c_fc");
  OpAttrs tanh_approximation;
  tanh_approximation.ints[0] = 1;
  h = m.add(op_def("gelu"), {h}, tanh_approximation, name + ".mlp.gelu");
  return m.add_op("add", {x, linear(m, h, kGptWidth, true, name + ".mlp.c_proj")}, name + ".residual_2");
}

ModelSpec gpt_mini() {
  ModelSpec m(Shape{kGptContext}, DType::kI32);
  OpAttrs table;
  table.ints[0] = int64_t(kGptVocabulary);
  table.ints[1] = int64_t(kGptWidth);
  size_t x = m.add(op_def("token_embedding"), {0}, table, "transformer.wte");
  x = m.add(op_def("position_embedding"), {x}, OpAttrs{}, "transformer.wpe");
  for (size_t i = 0; i < kGptLayers; ++i) x = gpt_block(m, x, "transformer.h." + std::to_string(i));
  x = layer_norm(m, x, "transformer.ln_f");
  linear(m, x, kGptVocabulary, false, "lm_head");  // logits [128, 256]: a target at every position
  return m;
}

}  // namespace

ModelSpec ModelSpec::builtin(const std::string &name) {
  if (name == "resnet18") return resnet18();
  if (name == "gpt-mini") return gpt_mini();
  ModelSpec m(Shape{1, 28, 28});
  if (name == "lenet") {
    m.add_conv2d(20, 3, 1, 0);
    m.add_activation(Activation::kRelu);
    m.add_pool(PoolKind::kAvg, 2, 2);
    m.add_conv2d(50, 5, 1, 0);
    m.add_activation(Activation::kRelu);
    m.add_pool(PoolKind::kAvg, 2, 2);
    m.add_flatten();
    m.add_dense(128);
    m.add_activation(Activation::kRelu);
    m.add_dense(10);
  } else if (name == "mlp") {
    m.add_flatten();
    m.add_dense(256);
    m.add_activation(Activation::kRelu);
    m.add_dense(10);
  } else {
    throw_error(DPT_ERROR_INVALID_ARGUMENT,
                "unknown built-in model '" + name + "' (expected lenet, mlp, resnet18 or gpt-mini)");
  }
  return m;
}

}  // namespace dpt
