// "avg_pool2d" and "max_pool2d" over square windows of x [c, h, w], no padding, sizes rounding down.
// ints = {window, stride}. Max pooling saves the int32 index of each window's first maximum.
#include <cstdint>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout pool_layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &in = inputs[0];
  DPT_REQUIRE(in.rank() == 3, DPT_ERROR_INVALID_ARGUMENT,
              "pooling needs a channels x height x width input, got " + in.text());
  DPT_REQUIRE(a.ints[0] > 0 && a.ints[1] > 0, DPT_ERROR_INVALID_ARGUMENT,
              "pool window and stride must be positive");
  const size_t window = size_t(a.ints[0]), stride = size_t(a.ints[1]);
  DPT_REQUIRE(window <= in[1] && window <= in[2], DPT_ERROR_INVALID_ARGUMENT,
              "pool window " + std::to_string(window) + " does not fit the input " + in.text());
  NodeLayout l;
  l.output = Shape{in[0], (in[1] - window) / stride + 1, (in[2] - window) / stride + 1};
  return l;
}

NodeLayout max_layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  NodeLayout l = pool_layout(inputs, a);
  l.saved_bytes_per_sample = l.output.size() * sizeof(int32_t);
  return l;
}

std::string describe_avg(const OpAttrs &a) {
  return "avgpool" + std::to_string(a.ints[0]) + "s" + std::to_string(a.ints[1]);
}

std::string describe_max(const OpAttrs &a) {
  return "maxpool" + std::to_string(a.ints[0]) + "s" + std::to_string(a.ints[1]);
}

}  // namespace

extern const OpDef kAvgPool2dOp = {"avg_pool2d", 1, 1, pool_layout, describe_avg, {"window", "stride"}, {}};
extern const OpDef kMaxPool2dOp = {"max_pool2d", 1, 1, max_layout, describe_max, {"window", "stride"}, {}};

}  // namespace dpt
