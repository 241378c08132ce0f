// "conv2d": cross-correlation of x [c, h, w] with square kernels. ints = {out_c, kernel, stride, padding,
// bias (0 or 1)}.
#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &in = inputs[0];
  DPT_REQUIRE(in.rank() == 3, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d needs a channels x height x width input, got " + in.text());
  DPT_REQUIRE(a.ints[0] > 0 && size_t(a.ints[0]) <= kMaxFloatsPerSample, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d out_channels must be in 1..2^28");
  DPT_REQUIRE(a.ints[1] > 0 && a.ints[2] > 0, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d kernel and stride must be positive");
  DPT_REQUIRE(a.ints[3] >= 0 && a.ints[3] <= 1024 && a.ints[1] <= 4096 && a.ints[2] <= 4096,
              DPT_ERROR_INVALID_ARGUMENT, "conv2d kernel, stride or padding too large");
  DPT_REQUIRE(a.ints[4] == 0 || a.ints[4] == 1, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d bias must be 0 or 1, got " + std::to_string(a.ints[4]));
  const size_t out_c = size_t(a.ints[0]), k = size_t(a.ints[1]), stride = size_t(a.ints[2]),
               padding = size_t(a.ints[3]);
  DPT_REQUIRE(k <= in[1] + 2 * padding && k <= in[2] + 2 * padding, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d kernel " + std::to_string(k) + " does not fit the padded input " + in.text());
  DPT_REQUIRE(in[0] * k * k <= kMaxParameters / out_c, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d layer would have more than 2^30 parameters");
  NodeLayout l;
  const size_t oh = (in[1] + 2 * padding - k) / stride + 1, ow = (in[2] + 2 * padding - k) / stride + 1;
  DPT_REQUIRE(oh * ow <= kMaxFloatsPerSample / out_c, DPT_ERROR_INVALID_ARGUMENT,
              "conv2d output has more than 2^28 floats per sample");
  l.output = Shape{out_c, oh, ow};
  l.params.push_back({"weight", Shape{out_c, in[0], k, k}, ParamInit::kFanIn, in[0] * k * k, true});
  if (a.ints[4] != 0) l.params.push_back({"bias", Shape{out_c}, ParamInit::kZero, 0});
  return l;
}

std::string describe(const OpAttrs &a) {
  const std::string k = std::to_string(a.ints[1]);
  return "conv" + k + "x" + k + "s" + std::to_string(a.ints[2]) + "p" + std::to_string(a.ints[3]) + ":" +
         std::to_string(a.ints[0]) + (a.ints[4] != 0 ? "" : ":nobias");
}

}  // namespace

extern const OpDef kConv2dOp = {
    "conv2d", 1, 1, layout, describe, {"out_channels", "kernel", "stride", "padding", "bias"}, {}};

}  // namespace dpt
