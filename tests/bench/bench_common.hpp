// What the benchmark programs share: comma-separated option values and the models they measure by name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/model_spec.hpp"

namespace dpt_bench {

// "a,b,,c" -> {"a", "b", "c"}.
inline std::vector<std::string> parse_names(const char *text) {
  std::vector<std::string> out;
  std::string item;
  for (const char *p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

// "1,2,,4" -> {1, 2, 4}.
inline std::vector<size_t> parse_sizes(const char *text) {
  std::vector<size_t> out;
  for (const std::string &s : parse_names(text)) out.push_back(std::stoul(s));
  return out;
}

// A built-in model, or "wide-mlp" (784-2048-2048-2048-10, 10.0 M parameters, a 40 MB gradient): its
// all-reduce is long enough for the overlap with backward to show, and its parameters, gradients and
// optimizer state outweigh its activations.
// "deep-mlp" (784, then eight layers of 1024, then 10: 8.2 M parameters in equal layers): a pipeline's
// stages split it into equal parts.
inline dpt::ModelSpec bench_model(const std::string &name) {
  if (name == "deep-mlp") {
    dpt::ModelSpec m(dpt::Shape{1, 28, 28});
    m.add_flatten();
    for (int i = 0; i < 8; ++i) {
      m.add_dense(1024);
      m.add_activation(dpt::Activation::kRelu);
    }
    m.add_dense(10);
    return m;
  }
  if (name != "wide-mlp") return dpt::ModelSpec::builtin(name);
  dpt::ModelSpec m(dpt::Shape{1, 28, 28});
  m.add_flatten();
  for (int i = 0; i < 3; ++i) {
    m.add_dense(2048);
    m.add_activation(dpt::Activation::kRelu);
  }
  m.add_dense(10);
  return m;
}

}  // namespace dpt_bench
