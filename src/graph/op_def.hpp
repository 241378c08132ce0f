// An op kind, described once: which inputs it takes, the shape of its output, its parameters and buffers
// and what forward keeps for backward. The descriptors live in src/ops/ (one file per op, one registry
// line); the kernels of each backend are found by the op's name (modules/interface/op_call.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.hpp"
#include "interface/op_call.h"

namespace dpt {

// Bounds that keep every size product far from overflow and every index within int (BLAS takes int).
constexpr size_t kMaxFloatsPerSample = size_t(1) << 28;
constexpr size_t kMaxParameters = size_t(1) << 30;

// An op's attributes; their meaning is the op's (the table in op_call.h).
struct OpAttrs {
  int64_t ints[DPT_OP_MAX_ATTRS] = {};
  double reals[DPT_OP_MAX_ATTRS] = {};
  bool operator==(const OpAttrs &) const = default;
};

// How a parameter starts: drawn with the trainer's init scheme from its fan-in (weights), or a constant.
enum class ParamInit { kFanIn, kZero, kOne };

struct ParamInfo {
  std::string name;  // within its node: "weight", "bias", "running_mean"
  Shape shape;       // the whole tensor (no sample dimension)
  ParamInit init = ParamInit::kZero;
  size_t fan_in = 0;  // kFanIn: inputs per output
  // A layer's weight matrix (dense, linear, conv2d): the parameters DPT_WEIGHT_DECAY_MATRICES decays (not
  // biases, norms, embedding tables).
  bool matrix = false;
  size_t size() const { return shape.size(); }
};

// What an op makes of its inputs and attributes.
struct NodeLayout {
  Shape output;
  std::vector<ParamInfo> params;   // trainable, in the order of dpt_op_call::params
  std::vector<ParamInfo> buffers;  // not trainable (running statistics), in the order of ::buffers
  size_t saved_bytes_per_sample = 0;
  size_t saved_bytes = 0;  // besides the per-sample part: once per pass (batch statistics)
  // Doubles of per-pass statistics combined across the devices between two phases (op_call.h, batch_norm):
  // statistics is the size of one set; the executor keeps two (this slice's, the global batch's).
  size_t statistics = 0;
  bool view = false;  // the output is the input itself (flatten): no kernel runs, the buffers are aliased
};

struct OpDef {
  const char *name;  // the kernels' key
  size_t min_inputs, max_inputs;
  // Checks the inputs' shapes and the attributes (DPT_ERROR_INVALID_ARGUMENT with a one-line reason naming
  // the op) and lays out the node.
  NodeLayout (*layout)(const std::vector<Shape> &inputs, const OpAttrs &attrs);
  // The node in a model's one-line description, e.g. "conv3x3s1p0:20".
  std::string (*describe)(const OpAttrs &attrs);
  // The names of the attributes the op reads, in the order of OpAttrs::ints and ::reals ("out_channels",
  // "kernel", ...); nullptr after the last. Every attribute the op or a kernel reads is named: the model's
  // JSON (model_json.hpp) holds exactly these, and ModelSpec::add zeroes the others.
  const char *int_names[DPT_OP_MAX_ATTRS];
  const char *real_names[DPT_OP_MAX_ATTRS];
  // Input 0 is int32 tokens (DType::kI32), every token below int attribute 0 (the vocabulary); no gradient
  // flows into it. Every other input of every op is float32.
  bool token_input = false;

  size_t int_count() const { return named(int_names); }
  size_t real_count() const { return named(real_names); }
  static size_t named(const char *const (&names)[DPT_OP_MAX_ATTRS]) {
    size_t n = 0;
    while (n < DPT_OP_MAX_ATTRS && names[n] != nullptr) ++n;
    return n;
  }
};

// The descriptor of the op named name, or nullptr.
const OpDef *find_op_def(const std::string &name);
// The descriptor of a built-in op (an internal error when it does not exist).
const OpDef &op_def(const char *name);

}  // namespace dpt
