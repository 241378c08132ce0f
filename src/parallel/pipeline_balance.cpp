#include "parallel/pipeline_balance.hpp"

#include <algorithm>

#include "core/rng.hpp"
#include "graph/init_parameters.hpp"
#include "graph/network.hpp"

namespace dpt {

std::vector<double> estimated_work(const ModelSpec &spec) {
  std::vector<double> work;
  for (const Node &node : spec.nodes()) {
    const double outputs = double(node.layout.output.size());
    double w = node.layout.view ? 0.0 : outputs;
    for (const ParamInfo &p : node.layout.params)
      if (p.matrix) w += outputs * double(p.fan_in);
    work.push_back(w);
  }
  return work;
}

std::vector<double> parameter_floats(const ModelSpec &spec) {
  const std::vector<Node> &nodes = spec.nodes();
  std::vector<double> floats;
  for (size_t j = 0; j < nodes.size(); ++j) {
    const size_t end = j + 1 < nodes.size() ? nodes[j + 1].param_offset : spec.parameter_count();
    floats.push_back(double(end - nodes[j].param_offset));
  }
  return floats;
}

namespace {

// Adds each timed op's seconds to its node's entry of the round's times.
void add_op_time(void *context, size_t node, bool, double start, double end) {
  (*static_cast<std::vector<double> *>(context))[node] += end - start;
}

}  // namespace

std::vector<double> measured_times(const ModelSpec &spec, Device &device, const KernelOptions &options,
                                   DType matmul_dtype, DType activation_dtype, size_t samples,
                                   uint64_t seed) {
  const size_t n = samples;
  std::unique_ptr<DeviceKernels> kernels = device.create_kernels(options);
  DeviceKernels &k = *kernels;
  Network network(spec, k, matmul_dtype, activation_dtype);
  DeviceBuffer params(k.memory(), spec.parameter_count()), grads(k.memory(), spec.parameter_count()),
      buffers(k.memory(), spec.buffer_count());
  network.reserve(n);
  {
    std::vector<float> host(spec.parameter_count());
    init_parameters(spec, host.data(), seed, InitScheme::kUniformFanIn, 0.0f);
    k.copy_to_device(params.data(), host.data(), host.size());
    std::vector<float> running(spec.buffer_count());
    init_buffers(spec, running.data());
    k.copy_to_device(buffers.data(), running.data(), running.size());
    // Float inputs in [-1, 1); token inputs all 0 (every vocabulary has it; a lookup costs the same).
    std::vector<float> inputs(n * spec.input().size(), 0.0f);
    if (spec.input_dtype() != DType::kI32) {
      Rng rng(hash_combine(seed, 0x62616c616e6365));  // "balance"
      for (float &x : inputs) x = 2.0f * rng.uniform() - 1.0f;
    }
    k.copy_to_device(network.input(), inputs.data(), inputs.size());
    const std::vector<int32_t> labels(n * spec.targets_per_sample(), 0);
    k.copy_labels_to_device(network.labels(), labels.data(), labels.size());
    k.synchronize();
  }
  std::vector<double> best(spec.nodes().size(), 0.0), round(spec.nodes().size());
  PassInfo info;
  info.n = n;
  info.seed = seed;
  info.training = true;
  info.timer = OpTimer{&add_op_time, &round};
  for (int r = 0; r < 4; ++r) {  // round 0 warms up (first touches, caches)
    std::fill(round.begin(), round.end(), 0.0);
    network.forward(params.data(), buffers.data(), network.labels(), info);
    network.backward(params.data(), grads.data(), info);
    k.synchronize();
    for (size_t j = 0; j < best.size() && r > 0; ++j)
      best[j] = r == 1 ? round[j] : std::min(best[j], round[j]);
  }
  return best;
}

}  // namespace dpt
