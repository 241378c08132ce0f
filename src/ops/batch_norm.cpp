// "batch_norm" per channel (dimension 0) over the batch: reals = {eps, momentum}; weight and bias learned,
// running mean and variance kept as buffers. Two phases per training pass (op_call.h), with statistics of
// 2c + 1 doubles (sums of x and x^2 per channel, the count) combined across devices in between.
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &in = inputs[0];
  DPT_REQUIRE(in.rank() == 1 || in.rank() == 3, DPT_ERROR_INVALID_ARGUMENT,
              "batch_norm needs a [channels] or [channels, height, width] input, got " + in.text());
  DPT_REQUIRE(std::isfinite(a.reals[0]) && a.reals[0] > 0, DPT_ERROR_INVALID_ARGUMENT,
              "batch_norm eps must be positive");
  DPT_REQUIRE(std::isfinite(a.reals[1]) && a.reals[1] >= 0 && a.reals[1] <= 1, DPT_ERROR_INVALID_ARGUMENT,
              "batch_norm momentum must be in [0, 1]");
  const size_t c = in[0];
  NodeLayout l;
  l.output = in;
  l.params.push_back({"weight", Shape{c}, ParamInit::kOne, 0});
  l.params.push_back({"bias", Shape{c}, ParamInit::kZero, 0});
  l.buffers.push_back({"running_mean", Shape{c}, ParamInit::kZero, 0});
  l.buffers.push_back({"running_var", Shape{c}, ParamInit::kOne, 0});
  l.saved_bytes = (2 * c + 1) * sizeof(double);
  l.statistics = 2 * c + 1;
  return l;
}

std::string describe(const OpAttrs &a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "batchnorm:%g:%g", a.reals[0], a.reals[1]);
  return buf;
}

}  // namespace

extern const OpDef kBatchNormOp = {"batch_norm", 1, 1, layout, describe, {}, {"eps", "momentum"}};

}  // namespace dpt
