// "causal_self_attention": multi-head scaled dot-product attention of a sequence over itself, each
// position attending to itself and the positions before it. Input: the projected queries, keys and values
// side by side, qkv [T, 3C] (columns [0, C) queries, [C, 2C) keys, [2C, 3C) values; head h owns columns
// [h d, (h + 1) d) of each, d = C / heads), as a "linear" of 3C units makes them; output [T, C], the heads
// side by side (the output projection is another "linear"). ints = {heads}; reals = {dropout}: in training,
// each attention probability is dropped with that rate (the rest scaled by 1 / (1 - rate)), the mask keyed
// as the dropout op's by (seed, step, node, global sample, element (head, i, j)), so the split does not
// change it; 0 = none. No parameters.
//
// Saved per sample: the maximum and the sum of exp(s - max) of every row of every head's scores (2 floats
// per head and position: 8 * heads * T bytes), so memory grows linearly with T; backward recomputes the
// scores and probabilities from them (bitwise the forward ones) instead of keeping the T x T matrices.
#include <cstdio>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &x = inputs[0];
  DPT_REQUIRE(
      x.rank() == 2 && x[0] > 0 && x[1] > 0 && x[1] % 3 == 0, DPT_ERROR_INVALID_ARGUMENT,
      "causal_self_attention takes [sequence, 3 * features] (queries, keys, values), got " + x.text());
  const size_t t = x[0], c = x[1] / 3;
  DPT_REQUIRE(a.ints[0] > 0 && c % size_t(a.ints[0]) == 0, DPT_ERROR_INVALID_ARGUMENT,
              "causal_self_attention heads must divide the " + std::to_string(c) + " features, got " +
                  std::to_string(a.ints[0]));
  // The CPU kernel's scratch holds two T x T score matrices: 512 MB at this bound.
  DPT_REQUIRE(t <= 8192, DPT_ERROR_INVALID_ARGUMENT,
              "causal_self_attention sequences are at most 8192 long, got " + std::to_string(t));
  const double rate = a.reals[0];
  DPT_REQUIRE(rate >= 0.0 && rate < 1.0, DPT_ERROR_OUT_OF_RANGE,
              "causal_self_attention dropout must be in [0, 1), got " + std::to_string(rate));
  NodeLayout l;
  l.output = Shape{t, c};
  l.saved_bytes_per_sample = 2 * size_t(a.ints[0]) * t * sizeof(float);
  return l;
}

std::string describe(const OpAttrs &a) {
  char rate[32] = "";
  if (a.reals[0] != 0.0) std::snprintf(rate, sizeof rate, ":dropout%g", double(float(a.reals[0])));
  return "attention:" + std::to_string(a.ints[0]) + "heads:causal" + rate;
}

}  // namespace

extern const OpDef kCausalSelfAttentionOp = {
    "causal_self_attention", 1, 1, layout, describe, {"heads"}, {"dropout"}};

}  // namespace dpt
