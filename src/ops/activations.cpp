// "relu", "sigmoid", "tanh": elementwise, the output has the input's shape.
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout same_shape(const std::vector<Shape> &inputs, const OpAttrs &) {
  NodeLayout l;
  l.output = inputs[0];
  return l;
}

std::string relu(const OpAttrs &) {
  return "relu";
}
std::string sigmoid(const OpAttrs &) {
  return "sigmoid";
}
std::string tanh_text(const OpAttrs &) {
  return "tanh";
}

}  // namespace

extern const OpDef kReluOp = {"relu", 1, 1, same_shape, relu, {}, {}};
extern const OpDef kSigmoidOp = {"sigmoid", 1, 1, same_shape, sigmoid, {}, {}};
extern const OpDef kTanhOp = {"tanh", 1, 1, same_shape, tanh_text, {}, {}};

}  // namespace dpt
