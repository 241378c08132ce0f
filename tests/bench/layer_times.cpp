#include "layer_times.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/platform.hpp"
#include "core/rng.hpp"
#include "graph/init_parameters.hpp"
#include "graph/model_spec.hpp"
#include "interface/op_call.h"

namespace dpt::bench {

namespace {

size_t floats_for(size_t bytes) {
  return (bytes + sizeof(float) - 1) / sizeof(float);
}

}  // namespace

// Each node's CPU kernel called directly on host memory, as the graph executor (graph/network.cpp) calls
// it: one dpt_op_call per node, one activation per tensor (a view node aliases its input and runs nothing),
// what each op saves, one scratch area as large as the largest node's. An op with statistics (batch_norm)
// runs its two phases per pass as on a single device, its slice's statistics copied to the global set in
// between (the copy is not timed). Gradients of a tensor read by two nodes are not accumulated (the
// executor's accumulate is left out of the times).
void print_layer_times(const std::string &model, size_t batch, size_t reps, DType precision, std::FILE *csv) {
  const ModelSpec spec = ModelSpec::builtin(model);
  const std::vector<Node> &nodes = spec.nodes();
  const std::vector<TensorInfo> &tensors = spec.tensors();
  std::vector<float> params(spec.parameter_count()), grads(params.size());
  init_parameters(spec, params.data(), 1, InitScheme::kUniformFanIn, 0.01f);

  // Activations of every tensor (a view's are its input's), saved state and scratch, as one replica holds
  // them.
  std::vector<size_t> root(tensors.size());
  std::vector<std::vector<float>> acts(tensors.size()), saved(nodes.size()), buffers(nodes.size());
  std::vector<std::vector<double>> statistics(nodes.size());
  acts[0].resize(batch * spec.input().size());
  size_t widest = spec.input().size();
  for (size_t t = 0; t < tensors.size(); ++t) root[t] = t;
  std::vector<const cpu::OpKernel *> kernels(nodes.size(), nullptr);
  std::vector<dpt_op_call> calls(nodes.size());
  size_t scratch = 0;
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node &node = nodes[j];
    widest = std::max(widest, tensors[node.output].shape.size());
    if (node.layout.view) {
      root[node.output] = root[node.inputs[0]];
      continue;
    }
    acts[node.output].resize(batch * tensors[node.output].shape.size());
    saved[j].resize(floats_for(batch * node.layout.saved_bytes_per_sample + node.layout.saved_bytes));
    statistics[j].assign(2 * node.layout.statistics, 0.0);
    for (const ParamInfo &b : node.layout.buffers)  // running mean 0, running variance 1
      buffers[j].insert(buffers[j].end(), b.size(), b.init == ParamInit::kOne ? 1.0f : 0.0f);
    kernels[j] = cpu::find_op(node.op->name);
    if (kernels[j] == nullptr) throw std::runtime_error(std::string("no CPU kernel for op ") + node.op->name);
    dpt_op_call &c = calls[j];
    c = call_template(spec, j);
    c.n = int64_t(batch);
    c.training = 1;
    c.seed = 1;
    c.matmul_dtype = int32_t(precision);
    if (kernels[j]->scratch_bytes != nullptr) scratch = std::max(scratch, kernels[j]->scratch_bytes(c));
  }
  std::vector<float> work(floats_for(scratch)), dy(batch * widest), dx(batch * widest);
  Rng rng(7);
  for (float &v : acts[0]) v = rng.uniform();
  if (spec.input_dtype() == DType::kI32)  // tokens, in the float slots as their bits
    for (float &v : acts[0]) {
      const int32_t token = int32_t(rng.below(spec.token_bound()));
      std::memcpy(&v, &token, sizeof token);
    }
  for (float &v : dy) v = rng.uniform() - 0.5f;
  // Pointers, now that every buffer has its size.
  for (size_t j = 0; j < nodes.size(); ++j) {
    if (kernels[j] == nullptr) continue;
    const Node &node = nodes[j];
    dpt_op_call &c = calls[j];
    for (size_t i = 0; i < node.inputs.size(); ++i) c.inputs[i].data = acts[root[node.inputs[i]]].data();
    c.output.data = acts[node.output].data();
    size_t offset = node.param_offset;
    for (size_t p = 0; p < node.layout.params.size(); ++p) {
      c.params[p].data = params.data() + offset;
      offset += node.layout.params[p].size();
    }
    float *b = buffers[j].data();
    for (size_t p = 0; p < node.layout.buffers.size(); ++p) {
      c.buffers[p].data = b;
      b += node.layout.buffers[p].size();
    }
    c.saved = saved[j].data();
    c.saved_bytes = saved[j].size() * sizeof(float);
    c.statistics = statistics[j].empty() ? nullptr : statistics[j].data();
    c.statistics_count = statistics[j].size();
    c.sync_statistics = 1;
    c.scratch = work.data();
    c.scratch_bytes = scratch;
  }

  // One call of a node's kernel (both phases for an op with statistics); returns its seconds.
  auto run = [&](size_t j, bool is_forward) {
    dpt_op_call &c = calls[j];
    auto call = [&] { is_forward ? kernels[j]->forward(c) : kernels[j]->backward(c); };
    const size_t count = nodes[j].layout.statistics;
    if (count == 0) {
      const double t0 = platform::now_seconds();
      call();
      return platform::now_seconds() - t0;
    }
    c.phase = DPT_OP_PHASE_STATISTICS;
    double t0 = platform::now_seconds();
    call();
    double seconds = platform::now_seconds() - t0;
    // One replica is the whole batch: its forward statistics are the global ones (backward sums in place).
    if (is_forward) std::copy(c.statistics, c.statistics + count, c.statistics + count);
    c.phase = DPT_OP_PHASE_APPLY;
    t0 = platform::now_seconds();
    call();
    return seconds + platform::now_seconds() - t0;
  };
  std::vector<double> forward(nodes.size(), 0), backward(nodes.size(), 0);
  for (size_t r = 0; r < reps + 1; ++r) {  // the first round warms up and is not counted
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (kernels[j] == nullptr) continue;
      dpt_op_call &c = calls[j];
      c.step = r;
      c.output_grad = nullptr;
      for (size_t i = 0; i < size_t(c.input_count); ++i) c.input_grads[i] = nullptr;
      for (size_t p = 0; p < size_t(c.param_count); ++p) c.param_grads[p] = nullptr;
      const double t = run(j, true);
      if (r > 0) forward[j] += t;
    }
    for (size_t j = nodes.size(); j-- > 0;) {
      if (kernels[j] == nullptr) continue;
      const Node &node = nodes[j];
      dpt_op_call &c = calls[j];
      c.output_grad = dy.data();
      // The model's input (or a view of it) needs no gradient, as in the executor.
      for (size_t i = 0; i < node.inputs.size(); ++i)
        c.input_grads[i] = root[node.inputs[i]] == 0 ? nullptr : dx.data();
      size_t offset = node.param_offset;
      for (size_t p = 0; p < node.layout.params.size(); ++p) {
        c.param_grads[p] = grads.data() + offset;
        offset += node.layout.params[p].size();
      }
      const double t = run(j, false);
      if (r > 0) backward[j] += t;
    }
  }
  double total = 0;
  for (size_t j = 0; j < nodes.size(); ++j) total += forward[j] + backward[j];
  const char *products = precision == DType::kBF16 ? "bf16" : precision == DType::kF16 ? "fp16" : "fp32";
  std::printf("\n%s per-layer times on one device, batch %zu, %s products, mean of %zu passes\n\n",
              model.c_str(), batch, products, reps);
  std::printf("%-3s %-24s %12s %12s %8s\n", "#", "layer", "forward_ms", "backward_ms", "share");
  for (size_t j = 0; j < nodes.size(); ++j) {
    const double f = forward[j] / double(reps) * 1e3, b = backward[j] / double(reps) * 1e3;
    const std::string name = nodes[j].op->describe(nodes[j].attrs);
    std::printf("%-3zu %-24s %12.3f %12.3f %7.1f%%\n", j, name.c_str(), f, b,
                100.0 * (forward[j] + backward[j]) / total);
    if (csv != nullptr) {
      std::fprintf(csv, "layer,%zu:%s,%s,forward_ms,%.6f\n", j, name.c_str(), products, f);
      std::fprintf(csv, "layer,%zu:%s,%s,backward_ms,%.6f\n", j, name.c_str(), products, b);
    }
  }
}

}  // namespace dpt::bench
