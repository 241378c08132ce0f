// The shapes of an op call, by the core's descriptor of the op (src/ops, compiled into the simulator: see
// CMakeLists.txt): the rule the core lays a node out by. A call the core would never make (an output that
// does not fit its input and attributes, a missing weight or one of the wrong size, a kernel larger than the
// image) is refused before the CPU kernel reads or writes outside the buffers checked for it. The simulator
// keeps no rule of its own: an op's descriptor and its CPU kernel are all it needs.
#include <string>
#include <vector>

#include "core/error.hpp"
#include "graph/op_def.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

// (rank 1 .. DPT_OP_MAX_RANK, positive dims: checked before)
dpt::Shape shape_of(const dpt_tensor &t) {
  const auto d = [&](int i) { return size_t(t.dims[i]); };
  switch (t.rank) {
    case 1:
      return dpt::Shape{d(0)};
    case 2:
      return dpt::Shape{d(0), d(1)};
    case 3:
      return dpt::Shape{d(0), d(1), d(2)};
    default:
      return dpt::Shape{d(0), d(1), d(2), d(3)};
  }
}

std::string text(const dpt::Shape &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.rank(); ++i) t += (i > 0 ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

std::string text(const dpt_tensor &t) {
  return text(shape_of(t));
}

// "" when the call carries the tensors the descriptor lays out (names: params or buffers), else why not.
std::string compare(const char *op, const char *names, const char *count_name, int32_t count,
                    const dpt_tensor *tensors, const std::vector<dpt::ParamInfo> &laid_out) {
  for (size_t i = 0; i < laid_out.size(); ++i) {
    const std::string want = laid_out[i].name + " " + text(laid_out[i].shape);
    if (int32_t(i) >= count)
      return std::string(count_name) + " " + std::to_string(count) + ": the descriptor of " + op +
             " lays out " + std::to_string(laid_out.size()) + " (" + names + "[" + std::to_string(i) +
             "]: " + want + ")";
    if (!(shape_of(tensors[i]) == laid_out[i].shape))
      return std::string(names) + "[" + std::to_string(i) + "] is " + text(tensors[i]) +
             ", the descriptor of " + op + " lays out " + want;
  }
  return "";
}

}  // namespace

std::string descriptor_problem(const dpt_op_call &k, DescriptorNeeds &needs) {
  needs = DescriptorNeeds{};
  const dpt::OpDef *def = dpt::find_op_def(k.op);
  if (def == nullptr) return "";  // a CPU kernel without a descriptor (yet): the generic checks only
  needs.found = true;
  const size_t inputs = size_t(k.input_count);
  if (inputs < def->min_inputs || inputs > def->max_inputs)
    return "input_count " + std::to_string(inputs) + ": " + k.op + " takes " +
           std::to_string(def->min_inputs) + " .. " + std::to_string(def->max_inputs) + " inputs";
  std::vector<dpt::Shape> shapes;
  for (size_t i = 0; i < inputs; ++i) shapes.push_back(shape_of(k.inputs[i]));
  dpt::OpAttrs attrs;
  for (int i = 0; i < DPT_OP_MAX_ATTRS; ++i) {
    attrs.ints[i] = k.ints[i];
    attrs.reals[i] = k.reals[i];
  }
  dpt::NodeLayout layout;
  try {
    layout = def->layout(shapes, attrs);
  } catch (const dpt::Error &error) {
    return std::string(error.what()) + " (the descriptor of " + k.op + ")";
  }
  if (!(shape_of(k.output) == layout.output))
    return "output is " + text(k.output) + ", the descriptor of " + k.op + " lays out " + text(layout.output);
  // More parameters or buffers than the descriptor lays out from the attributes are the kernel's to read
  // (the CPU kernels take a bias from param_count, and callers may give one without setting its ints flag).
  std::string problem = compare(k.op, "params", "param_count", k.param_count, k.params, layout.params);
  if (problem.empty())
    problem = compare(k.op, "buffers", "buffer_count", k.buffer_count, k.buffers, layout.buffers);
  if (!problem.empty()) return problem;
  if (__builtin_mul_overflow(size_t(k.n), layout.saved_bytes_per_sample, &needs.saved_bytes) ||
      __builtin_add_overflow(needs.saved_bytes, layout.saved_bytes, &needs.saved_bytes))
    return "saved: sizes overflow";
  needs.statistics_count = 2 * layout.statistics;
  return "";
}

}  // namespace dpt_sim
