// "token_embedding": y[t] = weight[x[t]] for the int32 tokens x [T] of a sample, the token table of GPT-2 /
// nanoGPT ("wte": name the node "wte" and its parameter is "wte.weight" [vocabulary, C]). ints =
// {vocabulary, C}. Its input must be the model's int32 input (OpDef::token_input).
#include <cstdint>

#include "core/error.hpp"
#include "graph/op_def.hpp"

namespace dpt {

namespace {

// The largest vocabulary: token ids are int32, and a table row index times C stays far from overflow.
constexpr int64_t kMaxVocabulary = int64_t(1) << 24;

NodeLayout layout(const std::vector<Shape> &inputs, const OpAttrs &a) {
  const Shape &x = inputs[0];
  DPT_REQUIRE(x.rank() == 1, DPT_ERROR_INVALID_ARGUMENT,
              "token_embedding takes [sequence] int32 tokens, got " + x.text());
  const int64_t vocabulary = a.ints[0], dim = a.ints[1];
  DPT_REQUIRE(vocabulary >= 1 && vocabulary <= kMaxVocabulary, DPT_ERROR_INVALID_ARGUMENT,
              "token_embedding vocabulary must be in [1, 2^24], got " + std::to_string(vocabulary));
  DPT_REQUIRE(dim >= 1 && dim <= int64_t(kMaxFloatsPerSample), DPT_ERROR_INVALID_ARGUMENT,
              "token_embedding features must be in [1, 2^28], got " + std::to_string(dim));
  DPT_REQUIRE(size_t(vocabulary) * size_t(dim) <= kMaxParameters, DPT_ERROR_INVALID_ARGUMENT,
              "token_embedding table would have more than 2^30 parameters");
  NodeLayout l;
  l.output = Shape{x[0], size_t(dim)};
  l.params.push_back({"weight", Shape{size_t(vocabulary), size_t(dim)}, ParamInit::kFanIn, size_t(dim)});
  return l;
}

std::string describe(const OpAttrs &a) {
  return "token_embedding:" + std::to_string(a.ints[0]) + "x" + std::to_string(a.ints[1]);
}

}  // namespace

extern const OpDef kTokenEmbeddingOp = {"token_embedding",          1,  1,   layout, describe,
                                        {"vocabulary", "features"}, {}, true};

}  // namespace dpt
