#include "graph/model_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "core/error.hpp"

namespace dpt {

size_t Node::parameters() const {
  size_t n = 0;
  for (size_t k = 0; k < layout.params.size(); ++k)
    if (!tied[k]) n += layout.params[k].size();
  return n;
}

size_t Node::buffer_floats() const {
  size_t n = 0;
  for (const ParamInfo &p : layout.buffers) n += p.size();
  return n;
}

std::string printable(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  out += text.size() > 64 ? "\"..." : "\"";
  return out;
}

namespace {
// Room for one more element (growing geometrically, as push_back would).
template <typename T>
void grow(std::vector<T> &v, size_t more = 1) {
  if (v.capacity() - v.size() < more) v.reserve(std::max(v.size() + more, v.size() < 8 ? 8 : 2 * v.size()));
}
}  // namespace

ModelSpec::ModelSpec(Shape input, DType input_dtype) {
  DPT_REQUIRE(input_dtype == DType::kF32 || input_dtype == DType::kI32, DPT_ERROR_INVALID_ARGUMENT,
              "a model's input is float32 or int32 tokens");
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
  tensors_.push_back(TensorInfo{input, input_dtype});
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
    const bool tokens = tensors_[t].dtype == DType::kI32, wants_tokens = op.token_input && shapes.size() == 1;
    DPT_REQUIRE(tokens == wants_tokens, DPT_ERROR_INVALID_ARGUMENT,
                std::string(op.name) +
                    (wants_tokens ? " reads int32 tokens (the model's int32 input), not tensor "
                                  : " reads float32 tensors, not the int32 tokens of tensor ") +
                    std::to_string(t));
  }
  Node node;
  node.op = &op;
  node.name = name.empty() ? std::to_string(nodes_.size()) : name;
  check_name(node.name);
  node.inputs = inputs;
  for (size_t i = 0; i < op.int_count(); ++i) node.attrs.ints[i] = attrs.ints[i];
  for (size_t i = 0; i < op.real_count(); ++i) node.attrs.reals[i] = attrs.reals[i];
  node.layout = op.layout(shapes, node.attrs);
  node.tied.assign(node.layout.params.size(), false);
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
  node.param_offsets.resize(node.layout.params.size());
  size_t at = parameters_;  // a new node's parameters come last, after every earlier node's
  for (size_t k = 0; k < node.layout.params.size(); ++k) {
    node.param_offsets[k] = at;
    at += node.layout.params[k].size();
  }
  for (const ParamInfo &p : node.layout.params)
    DPT_REQUIRE(p.name.size() <= 31, DPT_ERROR_INTERNAL, "a parameter name is longer than 31 bytes");
  for (const ParamInfo &p : node.layout.buffers)
    DPT_REQUIRE(p.name.size() <= 31, DPT_ERROR_INTERNAL, "a buffer name is longer than 31 bytes");
  node.output = tensors_.size();
  // Only these allocations may still fail, before anything changes; the push_backs then cannot throw.
  grow(tensors_);
  grow(nodes_);
  grow(param_refs_, node.layout.params.size());
  grow(buffer_refs_, node.layout.buffers.size());
  names_.emplace(node.name, nodes_.size());
  for (size_t i = 0; i < node.layout.params.size(); ++i) param_refs_.push_back({nodes_.size(), i});
  for (size_t i = 0; i < node.layout.buffers.size(); ++i) buffer_refs_.push_back({nodes_.size(), i});
  tensors_.push_back(TensorInfo{node.layout.output, DType::kF32});
  nodes_.push_back(std::move(node));
  parameters_ += nodes_.back().parameters();
  buffers_ += nodes_.back().buffer_floats();
  output_ = nodes_.back().output;
  if (op.token_input) {
    const size_t vocabulary = size_t(nodes_.back().attrs.ints[0]);
    token_bound_ = token_bound_ == 0 || vocabulary < token_bound_ ? vocabulary : token_bound_;
  }
  return output_;
}

size_t ModelSpec::classes() const {
  const Shape out = output();
  return out.rank() == 2 ? out[1] : out.size();
}

ModelSpec::ParamSlot ModelSpec::find_parameter(const std::string &name, const char *what) const {
  const size_t dot = name.rfind('.');
  const auto node = dot == std::string::npos ? names_.end() : names_.find(name.substr(0, dot));
  DPT_REQUIRE(
      node != names_.end(), DPT_ERROR_INVALID_ARGUMENT,
      std::string(what) + " " + printable(name) +
          " names no node's parameter (expected \"<node name>.<parameter>\", e.g. \"lm_head.weight\")");
  const std::vector<ParamInfo> &params = nodes_[node->second].layout.params;
  std::string known;
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k].name == name.substr(dot + 1)) return ParamSlot{node->second, k};
    known += (k != 0 ? ", " : "") + params[k].name;
  }
  throw_error(DPT_ERROR_INVALID_ARGUMENT,
              std::string(what) + " " + printable(name) + ": node " + printable(node->first) +
                  (params.empty() ? " has no parameters" : " has the parameters " + known));
}

void ModelSpec::tie(const std::string &parameter, const std::string &source) {
  const std::string what = "tying " + printable(parameter) + " to " + printable(source) + ": ";
  const ParamSlot p = find_parameter(parameter, "parameter");
  ParamSlot s = find_parameter(source, "source");
  std::string owner = source;
  for (const Tie &t : ties_) {
    DPT_REQUIRE(t.parameter != parameter, DPT_ERROR_INVALID_ARGUMENT,
                what + "the parameter is already tied to " + printable(t.source));
    DPT_REQUIRE(t.source != parameter, DPT_ERROR_INVALID_ARGUMENT,
                what + "the parameter is the source of " + printable(t.parameter) +
                    " (tie both to one untied parameter)");
    if (t.parameter == source) owner = t.source;  // a tied source stands for its own source
  }
  if (owner != source) s = find_parameter(owner, "source");
  DPT_REQUIRE(s.node < p.node, DPT_ERROR_INVALID_ARGUMENT,
              what + "the source must belong to an earlier node than the parameter (node " +
                  std::to_string(s.node) + " is not before node " + std::to_string(p.node) + ")");
  const Shape &ps = nodes_[p.node].layout.params[p.slot].shape,
              &ss = nodes_[s.node].layout.params[s.slot].shape;
  DPT_REQUIRE(ps == ss, DPT_ERROR_INVALID_ARGUMENT,
              what + "the shapes differ (" + ps.text() + " and " + ss.text() + ")");
  grow(ties_);  // the only allocation; what follows cannot throw
  ties_.push_back(Tie{parameter, owner, p.node, p.slot, s.node, s.slot});
  nodes_[p.node].tied[p.slot] = true;
  lay_out_parameters();
}

void ModelSpec::lay_out_parameters() {
  size_t offset = 0;
  param_refs_.clear();  // it only shrinks here: no allocation
  for (size_t j = 0; j < nodes_.size(); ++j) {
    Node &node = nodes_[j];
    node.param_offset = offset;
    for (size_t k = 0; k < node.layout.params.size(); ++k) {
      if (node.tied[k]) continue;
      node.param_offsets[k] = offset;
      offset += node.layout.params[k].size();
      param_refs_.push_back({j, k});
    }
  }
  parameters_ = offset;
  for (const Tie &t : ties_)
    nodes_[t.node].param_offsets[t.slot] = nodes_[t.source_node].param_offsets[t.source_slot];
}

void ModelSpec::check_name(const std::string &name) const {
  DPT_REQUIRE(
      name.size() <= kMaxNameLength, DPT_ERROR_INVALID_ARGUMENT,
      "node name " + printable(name) + " is longer than " + std::to_string(kMaxNameLength) + " bytes");
  bool digits = true;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    DPT_REQUIRE(ok, DPT_ERROR_INVALID_ARGUMENT,
                "node name " + printable(name) + " may hold only letters, digits, '_', '.' and '-'");
    digits = digits && c >= '0' && c <= '9';
  }
  DPT_REQUIRE(!digits || name == std::to_string(nodes_.size()), DPT_ERROR_INVALID_ARGUMENT,
              "node name " + printable(name) + " is a number other than the node's index " +
                  std::to_string(nodes_.size()) + " (digits-only names are the indices of unnamed nodes)");
  const auto found = names_.find(name);
  DPT_REQUIRE(found == names_.end(), DPT_ERROR_INVALID_ARGUMENT,
              "node name " + printable(name) + " is taken (node " +
                  (found == names_.end() ? std::string() : std::to_string(found->second)) + ")");
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
              "tensor " + std::to_string(t) + " does not exist (the model has " +
                  std::to_string(tensors_.size()) + ")");
  output_ = t;
}

std::string ModelSpec::describe() const {
  std::string text = (input_dtype() == DType::kI32 ? "tokens:" : "") + input().text();
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
  for (const Tie &t : ties_) text += " tie:" + t.parameter + "=" + t.source;
  return text;
}

NamedTensor ModelSpec::named(bool buffers, size_t index) const {
  const TensorRef &ref = (buffers ? buffer_refs_ : param_refs_).at(index);
  const Node &n = nodes_[ref.node];
  const std::vector<ParamInfo> &list = buffers ? n.layout.buffers : n.layout.params;
  size_t offset = n.buffer_offset;
  if (buffers)
    for (size_t i = 0; i < ref.slot; ++i) offset += list[i].size();
  else
    offset = n.param_offsets[ref.slot];
  return NamedTensor{n.name + "." + list[ref.slot].name, list[ref.slot].shape, offset};
}

namespace {
std::vector<NamedTensor> named(const ModelSpec &spec, bool buffers) {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < spec.named_count(buffers); ++i) out.push_back(spec.named(buffers, i));
  return out;
}
}  // namespace

std::vector<NamedTensor> named_parameters(const ModelSpec &spec) {
  return named(spec, false);
}

std::vector<NamedTensor> named_buffers(const ModelSpec &spec) {
  return named(spec, true);
}

dpt_op_call call_template(const ModelSpec &spec, size_t j) {
  const std::vector<TensorInfo> &tensors = spec.tensors();
  const Node &node = spec.nodes().at(j);
  dpt_op_call c{};
  c.op = node.op->name;
  std::copy(std::begin(node.attrs.ints), std::end(node.attrs.ints), c.ints);
  std::copy(std::begin(node.attrs.reals), std::end(node.attrs.reals), c.reals);
  c.input_count = int32_t(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i)
    c.inputs[i] = op_tensor(tensors[node.inputs[i]].shape, tensors[node.inputs[i]].dtype);
  c.output = op_tensor(tensors[node.output].shape, tensors[node.output].dtype);
  c.param_count = int32_t(node.layout.params.size());
  for (size_t p = 0; p < node.layout.params.size(); ++p) c.params[p] = op_tensor(node.layout.params[p].shape);
  c.buffer_count = int32_t(node.layout.buffers.size());
  for (size_t b = 0; b < node.layout.buffers.size(); ++b)
    c.buffers[b] = op_tensor(node.layout.buffers[b].shape);
  c.node = j;
  return c;
}

}  // namespace dpt
