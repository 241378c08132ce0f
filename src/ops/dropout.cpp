// "dropout": inverted dropout, reals[0] = rate in [0, 1); saves the float mask of each element.
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const double rate = a.reals[0];
  DPT_REQUIRE(std::isfinite(rate) && rate >= 0.0 && rate < 1.0, DPT_ERROR_OUT_OF_RANGE,
              "dropout rate must be in [0, 1), got " + std::to_string(rate));
  NodeLayout l;
  l.output = inputs[0];
  l.saved_bytes_per_sample = l.output.size() * sizeof(float);
  return l;
}

std::string describe(const OpAttrs &a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "dropout:%g", double(float(a.reals[0])));
  return buf;
}

}  // namespace

extern const OpDef kDropoutOp = {"dropout", 1, 1, layout, describe, {}, {"rate"}};

}  // namespace dpt
