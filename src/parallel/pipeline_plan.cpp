#include "parallel/pipeline_plan.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace dpt {

namespace {

// The tensors live at the start of node c: made before it (the input by "node -1") and read by node c or
// later, or the model's output.
std::vector<size_t> live_tensors(const ModelSpec &spec, size_t c) {
  const std::vector<Node> &nodes = spec.nodes();
  std::vector<size_t> made(spec.tensors().size(), 0), last(spec.tensors().size(), 0);
  for (size_t j = 0; j < nodes.size(); ++j) {
    made[nodes[j].output] = j + 1;  // 0: the input
    for (size_t t : nodes[j].inputs) last[t] = std::max(last[t], j + 1);
  }
  last[spec.output_tensor()] = nodes.size() + 1;
  std::vector<size_t> live;
  for (size_t t = 0; t < made.size(); ++t)
    if (made[t] <= c && last[t] > c) live.push_back(t);
  return live;
}

size_t node_named(const ModelSpec &spec, const std::string &name) {
  for (size_t j = 0; j < spec.nodes().size(); ++j)
    if (spec.nodes()[j].name == name) return j;
  throw_error(DPT_ERROR_INVALID_ARGUMENT, "pipeline cut " + printable(name) + ": the model has no such node");
}

}  // namespace

std::vector<size_t> cut_candidates(const ModelSpec &spec) {
  std::vector<size_t> cuts;
  size_t out_node = 0;  // the node that makes the output: every stage boundary comes before it
  for (size_t j = 0; j < spec.nodes().size(); ++j)
    if (spec.nodes()[j].output == spec.output_tensor()) out_node = j;
  for (size_t c = 1; c <= out_node; ++c)
    if (live_tensors(spec, c).size() == 1) cuts.push_back(c);
  return cuts;
}

std::vector<size_t> balanced_cuts(const ModelSpec &spec, size_t stages, const std::vector<double> &costs) {
  const std::vector<size_t> cand = cut_candidates(spec);
  DPT_REQUIRE(stages >= 1 && stages - 1 <= cand.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the model can be cut into at most " + std::to_string(cand.size() + 1) + " pipeline stages (" +
                  std::to_string(stages) + " asked): a stage begins only where one tensor is live");
  // Boundaries b_0 = 0 < b_1 < ... < b_S = nodes, the inner ones candidates; best[k][i]: the smallest
  // largest cost of k stages covering nodes [0, point i). Points: 0, the candidates, the end.
  std::vector<size_t> points{0};
  points.insert(points.end(), cand.begin(), cand.end());
  points.push_back(spec.nodes().size());
  std::vector<double> prefix(spec.nodes().size() + 1, 0.0);
  for (size_t j = 0; j < spec.nodes().size(); ++j) prefix[j + 1] = prefix[j] + costs[j];
  const size_t p = points.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(p, inf));
  std::vector<std::vector<size_t>> from(stages + 1, std::vector<size_t>(p, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= stages; ++k)
    for (size_t i = 1; i < p; ++i)
      for (size_t h = 0; h < i; ++h) {
        const double v = std::max(best[k - 1][h], prefix[points[i]] - prefix[points[h]]);
        if (v < best[k][i]) best[k][i] = v, from[k][i] = h;  // ties: the earliest cut
      }
  std::vector<size_t> cuts(stages - 1);
  for (size_t k = stages, i = p - 1; k > 1; --k) {
    i = from[k][i];
    cuts[k - 2] = points[i];
  }
  return cuts;
}

std::vector<size_t> named_cuts(const ModelSpec &spec, const std::vector<std::string> &names) {
  const std::vector<size_t> cand = cut_candidates(spec);
  std::vector<size_t> cuts;
  for (const std::string &name : names) {
    const size_t j = node_named(spec, name);
    DPT_REQUIRE(std::find(cand.begin(), cand.end(), j) != cand.end(), DPT_ERROR_INVALID_ARGUMENT,
                "pipeline cut " + printable(name) + ": a stage cannot begin at node " + std::to_string(j) +
                    " (more than one tensor is live there, or it is the first node or after the output)");
    DPT_REQUIRE(cuts.empty() || j > cuts.back(), DPT_ERROR_INVALID_ARGUMENT,
                "pipeline cut " + printable(name) + ": the cuts must follow the node order");
    cuts.push_back(j);
  }
  return cuts;
}

std::vector<PipelineStage> cut_model(const ModelSpec &spec, const std::vector<size_t> &cuts) {
  const std::vector<Node> &nodes = spec.nodes();
  const std::vector<TensorInfo> &tensors = spec.tensors();
  std::vector<size_t> bounds{0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(nodes.size());
  std::vector<PipelineStage> stages;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    const size_t a = bounds[s], b = bounds[s + 1];
    const size_t in = s == 0 ? 0 : live_tensors(spec, a).at(0);
    PipelineStage stage{ModelSpec(tensors[in].shape, tensors[in].dtype)};
    stage.first_node = a;
    stage.end_node = b;
    stage.input_tensor = in;
    std::vector<size_t> local(tensors.size(), SIZE_MAX);
    local[in] = 0;
    for (size_t j = a; j < b; ++j) {
      std::vector<size_t> inputs;
      for (size_t t : nodes[j].inputs) inputs.push_back(local.at(t));
      local[nodes[j].output] = stage.spec.add(*nodes[j].op, inputs, nodes[j].attrs);
    }
    stage.spec.set_output(local.at(b == nodes.size() ? spec.output_tensor() : live_tensors(spec, b).at(0)));
    for (const ModelSpec::Tie &t : spec.ties()) {
      if (t.node < a || t.node >= b) continue;
      const std::string name = std::to_string(t.node - a) + "." + nodes[t.node].layout.params[t.slot].name;
      if (t.source_node >= a) {  // both in this stage (the stage's unnamed nodes are named by their index)
        stage.spec.tie(name, std::to_string(t.source_node - a) + "." +
                                 nodes[t.source_node].layout.params[t.source_slot].name);
        continue;
      }
      DPT_REQUIRE(
          stage.mirror_floats == 0 && stage.spec.named_count(false) > 0 &&
              stage.spec.named(false, stage.spec.named_count(false) - 1).name == name,
          DPT_ERROR_UNSUPPORTED,
          "pipeline: the tied parameter " + printable(t.parameter) + " and its source " +
              printable(t.source) +
              " are in different stages; that is supported only when the tied parameter is its stage's "
              "last parameter (as a language model's head)");
      stage.mirror_source = nodes[t.source_node].param_offsets[t.source_slot];
      stage.mirror_floats = nodes[t.node].layout.params[t.slot].size();
    }
    stage.param_begin = nodes[a].param_offset;
    stage.param_end = b == nodes.size() ? spec.parameter_count() : nodes[b].param_offset;
    stage.buffer_begin = nodes[a].buffer_offset;
    stage.buffer_end = b == nodes.size() ? spec.buffer_count() : nodes[b].buffer_offset;
    DPT_REQUIRE(stage.spec.parameter_count() == stage.param_end - stage.param_begin + stage.mirror_floats &&
                    stage.spec.buffer_count() == stage.buffer_end - stage.buffer_begin,
                DPT_ERROR_INTERNAL, "a pipeline stage's parameters are not its nodes' range");
    stages.push_back(std::move(stage));
  }
  return stages;
}

}  // namespace dpt
