// A model description: a graph of ops over tensors, every shape inferred when an op is added. Tensor 0 is
// the model's input; each node reads tensors made before it and makes one new tensor, so the order of the
// nodes is a topological order (forward runs it, backward runs it in reverse). It holds no weights: each
// replica instantiates the graph on its device (network.hpp); the parameters of all nodes form one flat
// vector in node order, each node's tensors in its op's order (weights, then biases).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/op_def.hpp"
#include "graph/tensor.hpp"

namespace dpt {

// The longest node name; every parameter or buffer name ("<node>.<tensor>") fits kMaxNameLength + 32 bytes.
constexpr size_t kMaxNameLength = 200;

// text for a one-line message: in quotes, bytes outside printable ASCII as \xHH, cut after 64 bytes.
std::string printable(std::string_view text);

enum class Activation { kRelu, kSigmoid, kTanh };
enum class PoolKind { kAvg, kMax };

struct Node {
  const OpDef *op = nullptr;
  std::string name;            // prefix of its parameters' names ("3" -> "3.weight")
  std::vector<size_t> inputs;  // tensor ids
  size_t output = 0;           // tensor id
  OpAttrs attrs;
  NodeLayout layout;         // parameters, buffers, saved bytes, view
  size_t param_offset = 0;   // of its first own parameter in the flat vector
  size_t buffer_offset = 0;  // of its first buffer in the flat buffer vector
  // Per parameter slot (layout.params): where its values are in the flat vector, and whether the slot is
  // tied to an earlier node's parameter (ModelSpec::tie), whose values it reads and into whose gradient its
  // backward adds. The node's own slots fill [param_offset, param_offset + parameters()).
  std::vector<size_t> param_offsets;
  std::vector<bool> tied;
  size_t parameters() const;  // floats of its own (untied) slots
  size_t buffer_floats() const;
};

// A parameter or buffer with its full name ("3.weight", "layer1.0.bn1.running_mean").
struct NamedTensor {
  std::string name;
  Shape shape;
  size_t offset = 0;  // in the flat parameter (or buffer) vector
};

class ModelSpec {
 public:
  // input_dtype kI32: the model reads int32 tokens (only ops with OpDef::token_input read them).
  explicit ModelSpec(Shape input, DType input_dtype = DType::kF32);
  static ModelSpec builtin(const std::string &name);  // builtin_models.cpp: "lenet", "mlp", "resnet18"

  // Adds a node of op reading the given tensors; returns the id of its output tensor, which becomes the
  // model's output. name: the node's name (empty: its index), unique in the model, at most kMaxNameLength
  // bytes of [A-Za-z0-9_.-]; a name of digits only must be the node's index (so that it cannot take the
  // name of a later unnamed node). Attributes the op does not name (OpDef::int_names) are stored as 0.
  // Throws (DPT_ERROR_INVALID_ARGUMENT, or the op's code) and leaves the model unchanged when it fails.
  size_t add(const OpDef &op, const std::vector<size_t> &inputs, const OpAttrs &attrs,
             const std::string &name = "");

  // Sequential builders: one node on the current output.
  size_t add_dense(size_t units, bool bias = true);
  size_t add_conv2d(size_t out_channels, size_t kernel, size_t stride, size_t padding, bool bias = true);
  size_t add_pool(PoolKind kind, size_t window, size_t stride);
  size_t add_activation(Activation kind);
  size_t add_flatten();
  size_t add_dropout(float rate);
  // Graph builders: one node on the given tensors (name: empty for the node's index).
  size_t add_batch_norm(size_t input, double eps = 1e-5, double momentum = 0.1, const std::string &name = "");
  size_t add_op(const char *op, const std::vector<size_t> &inputs, const std::string &name = "");
  // Makes tensor t (made earlier) the model's output, the logits of the loss.
  void set_output(size_t t);
  // Ties the parameter named parameter ("lm_head.weight") to the parameter named source
  // ("transformer.wte.weight"), as PyTorch's `lm_head.weight = wte.weight`: one tensor, read by both nodes,
  // its gradient the sum of both nodes' contributions. The parameter leaves the flat vector (and the named
  // parameters); the source must have the same shape and belong to an earlier node, so that its gradient
  // is complete when backward reaches the source's node (the bucket that holds it is reduced after both
  // contributions). A source that is itself tied stands for the parameter it is tied to. Throws
  // DPT_ERROR_INVALID_ARGUMENT (a name that does not exist, a parameter already tied or the source of a tie,
  // shapes that differ, a source of a later node) and leaves the model unchanged.
  void tie(const std::string &parameter, const std::string &source);
  struct Tie {
    std::string parameter, source;  // full names, the source resolved to an untied parameter
    size_t node, slot;              // the parameter's node and slot in layout.params
    size_t source_node, source_slot;
  };
  const std::vector<Tie> &ties() const { return ties_; }

  const Shape &input() const { return tensors_[0].shape; }
  DType input_dtype() const { return tensors_[0].dtype; }
  // kI32 inputs: every token must be below this (the smallest vocabulary of the ops reading the input).
  size_t token_bound() const { return token_bound_; }
  // The loss reads the output as rows of classes: an output [classes] is one target per sample, an output
  // [positions, classes] one target per position (a language model's next tokens); other ranks are one
  // target over all their elements.
  size_t classes() const;
  size_t targets_per_sample() const { return output().size() / classes(); }
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const std::vector<Node> &nodes() const { return nodes_; }
  size_t output_tensor() const { return output_; }
  Shape output() const { return tensors_[output_].shape; }
  size_t parameter_count() const { return parameters_; }
  size_t buffer_count() const { return buffers_; }
  // One line: the input shape, then each node; a node that does not read the previous node's output names
  // the tensors it reads ("add@3,5"). Sequential models keep the text of version 0.1.
  std::string describe() const;
  // The named parameters (buffers: the buffers) in flat order: how many, and the one at index (< count).
  size_t named_count(bool buffers) const { return (buffers ? buffer_refs_ : param_refs_).size(); }
  NamedTensor named(bool buffers, size_t index) const;

 private:
  void check_name(const std::string &name) const;
  struct ParamSlot {  // nodes_[node].layout.params[slot]
    size_t node, slot;
  };
  // The parameter named name ("<node>.<parameter>"), or a DPT_ERROR_INVALID_ARGUMENT naming what.
  ParamSlot find_parameter(const std::string &name, const char *what) const;
  // Recomputes every node's offsets and the named parameters from the nodes' tied flags.
  void lay_out_parameters();

  std::vector<TensorInfo> tensors_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> names_;  // node name -> node index
  struct TensorRef {
    size_t node, slot;  // nodes_[node].layout.params[slot] (or .buffers[slot])
  };
  std::vector<TensorRef> param_refs_, buffer_refs_;
  std::vector<Tie> ties_;
  size_t output_ = 0;
  size_t parameters_ = 0, buffers_ = 0;
  size_t token_bound_ = 0;
};

// Parameters and buffers of every node, in flat order.
std::vector<NamedTensor> named_parameters(const ModelSpec &spec);
std::vector<NamedTensor> named_buffers(const ModelSpec &spec);

// The call of node j as every caller of a kernel starts it: op, attributes, the tensors' shapes and dtypes,
// the counts and the node index. Data pointers, n and the pass's fields are the caller's to fill.
dpt_op_call call_template(const ModelSpec &spec, size_t j);

}  // namespace dpt
