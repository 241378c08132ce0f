#include "graph/model_spec.hpp"

#include <cstdint>
#include <initializer_list>

#include "core/error.hpp"

namespace dpt {

size_t Node::parameters() const {
  size_t n = 0;
  for (const ParamInfo &p : layout.params) n += p.size();
  return n;
}

size_t Node::buffer_floats() const {
  size_t n = 0;
  for (const ParamInfo &p : layout.buffers) n += p.size();
  return n;
}

ModelSpec::ModelSpec(Shape input) {
  bool positive = input.rank() > 0;
  for (size_t i = 0; i < input.rank(); ++i) positive = positive && input[i] > 0;
  DPT_REQUIRE(positive, DPT_ERROR_INVALID_ARGUMENT,
              "model input dimensions must be positive, got " + input.text());
  size_t floats = 1;
  for (size_t i = 0; i < input.rank(); ++i) {
    DPT_REQUIRE(input[i] <= kMaxFloatsPerSample && floats <= kMaxFloatsPerSample / input[i],
                DPT_ERROR_INVALID_ARGUMENT, "model input has more than 2^28 floats per sample");
    floats *= input[i];
  }
  tensors_.push_back(TensorInfo{input, DType::kF32});
}

size_t ModelSpec::add(const OpDef &op, const std::vector<size_t> &inputs, const OpAttrs &attrs,
                      const std::string &name) {
  DPT_REQUIRE(inputs.size() >= op.min_inputs && inputs.size() <= op.max_inputs, DPT_ERROR_INVALID_ARGUMENT,
              std::string(op.name) + " takes " + std::to_string(op.min_inputs) +
                  (op.max_inputs != op.min_inputs ? " to " + std::to_string(op.max_inputs) : "") +
                  " inputs, got " + std::to_string(inputs.size()));
  std::vector<Shape> shapes;
  for (size_t t : inputs) {
    DPT_REQUIRE(t < tensors_.size(), DPT_ERROR_INVALID_ARGUMENT,
                std::string(op.name) + ": tensor " + std::to_string(t) + " does not exist (the model has " +
                    std::to_string(tensors_.size()) + ")");
    shapes.push_back(tensors_[t].shape);
  }
  Node node;
  node.op = &op;
  node.name = name.empty() ? std::to_string(nodes_.size()) : name;
  node.inputs = inputs;
  node.attrs = attrs;
  node.layout = op.layout(shapes, attrs);
  const size_t out_size = node.layout.output.size();
  DPT_REQUIRE(out_size > 0 && out_size <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "layer output must have between 1 and 2^28 floats per sample");
  DPT_REQUIRE(parameters_ + node.parameters() <= kMaxParameters, DPT_ERROR_INVALID_ARGUMENT,
              "model would have more than 2^30 parameters");
  DPT_REQUIRE(
      node.layout.params.size() <= DPT_OP_MAX_PARAMS && node.layout.buffers.size() <= DPT_OP_MAX_PARAMS,
      DPT_ERROR_INTERNAL, "an op has at most 4 parameter tensors");
  node.param_offset = parameters_;
  node.buffer_offset = buffers_;
  parameters_ += node.parameters();
  buffers_ += node.buffer_floats();
  node.output = tensors_.size();
  tensors_.push_back(TensorInfo{node.layout.output, DType::kF32});
  nodes_.push_back(std::move(node));
  output_ = nodes_.back().output;
  return output_;
}

namespace {
OpAttrs ints(std::initializer_list<int64_t> values) {
  OpAttrs a;
  size_t i = 0;
  for (int64_t v : values) a.ints[i++] = v;
  return a;
}
// size_t to int64 without wrapping: the op's checks refuse what is too large.
int64_t attr(size_t v) {
  return v > size_t(INT64_MAX) ? INT64_MAX : int64_t(v);
}
}  // namespace

size_t ModelSpec::add_dense(size_t units, bool bias) {
  return add(op_def("dense"), {output_}, ints({attr(units), bias ? 1 : 0}));
}

size_t ModelSpec::add_conv2d(size_t out_channels, size_t kernel, size_t stride, size_t padding, bool bias) {
  return add(op_def("conv2d"), {output_},
             ints({attr(out_channels), attr(kernel), attr(stride), attr(padding), bias ? 1 : 0}));
}

size_t ModelSpec::add_pool(PoolKind kind, size_t window, size_t stride) {
  return add(op_def(kind == PoolKind::kAvg ? "avg_pool2d" : "max_pool2d"), {output_},
             ints({attr(window), attr(stride)}));
}

size_t ModelSpec::add_activation(Activation kind) {
  const char *name = kind == Activation::kRelu ? "relu" : kind == Activation::kSigmoid ? "sigmoid" : "tanh";
  return add(op_def(name), {output_}, OpAttrs{});
}

size_t ModelSpec::add_flatten() {
  return add(op_def("flatten"), {output_}, OpAttrs{});
}

size_t ModelSpec::add_dropout(float rate) {
  OpAttrs a;
  a.reals[0] = rate;
  return add(op_def("dropout"), {output_}, a);
}

size_t ModelSpec::add_batch_norm(size_t input, double eps, double momentum, const std::string &name) {
  OpAttrs a;
  a.reals[0] = eps;
  a.reals[1] = momentum;
  return add(op_def("batch_norm"), {input}, a, name);
}

size_t ModelSpec::add_op(const char *op, const std::vector<size_t> &inputs, const std::string &name) {
  return add(op_def(op), inputs, OpAttrs{}, name);
}

void ModelSpec::set_output(size_t t) {
  DPT_REQUIRE(t < tensors_.size(), DPT_ERROR_INVALID_ARGUMENT,
              "tensor " + std::to_string(t) + " does not exist (the model has " + std::to_string(tensors_.size()) +
                  ")");
  output_ = t;
}

std::string ModelSpec::describe() const {
  std::string text = input().text();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node &n = nodes_[i];
    text += ' ' + n.op->describe(n.attrs);
    const size_t previous = i == 0 ? 0 : nodes_[i - 1].output;
    if (n.inputs.size() != 1 || n.inputs[0] != previous) {
      text += '@';
      for (size_t j = 0; j < n.inputs.size(); ++j) {
        if (j != 0) text += ',';
        text += std::to_string(n.inputs[j]);
      }
    }
  }
  if (!nodes_.empty() && output_ != nodes_.back().output) text += " ->" + std::to_string(output_);
  return text;
}

namespace {
std::vector<NamedTensor> named(const ModelSpec &spec, bool buffers) {
  std::vector<NamedTensor> out;
  for (const Node &n : spec.nodes()) {
    size_t offset = buffers ? n.buffer_offset : n.param_offset;
    for (const ParamInfo &p : buffers ? n.layout.buffers : n.layout.params) {
      out.push_back(NamedTensor{n.name + "." + p.name, p.shape, offset});
      offset += p.size();
    }
  }
  return out;
}
}  // namespace

std::vector<NamedTensor> named_parameters(const ModelSpec &spec) {
  return named(spec, false);
}

std::vector<NamedTensor> named_buffers(const ModelSpec &spec) {
  return named(spec, true);
}

}  // namespace dpt
