#include "layer_times.hpp"

#include <algorithm>
#include <vector>

#include "core/platform.hpp"
#include "core/rng.hpp"
#include "graph/pass_info.hpp"
#include "graph/model_spec.hpp"
#include "graph/network.hpp"

namespace dpt::bench {

namespace {

std::string layer_name(const ModelSpec &spec, size_t index) {
  // The model description names the layers in order after the input shape.
  std::string text = spec.describe();
  size_t pos = text.find(' ');
  for (size_t i = 0; i < index && pos != std::string::npos; ++i) pos = text.find(' ', pos + 1);
  if (pos == std::string::npos) return "?";
  const size_t end = text.find(' ', pos + 1);
  return text.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
}

}  // namespace

void print_layer_times(const std::string &model, size_t batch, size_t reps, std::FILE *csv) {
  const ModelSpec spec = ModelSpec::builtin(model);
  const auto &specs = spec.layers();
  std::vector<std::unique_ptr<Layer>> layers;
  for (const auto &s : specs) layers.push_back(make_layer(s));
  std::vector<float> params(spec.parameter_count()), grads(params.size());
  init_parameters(spec, params.data(), 1, InitScheme::kUniformFanIn, 0.01f);
  // Activations of every boundary, saved state and scratch, as one replica holds them.
  std::vector<std::vector<float>> acts(specs.size() + 1), saved(specs.size());
  acts[0].resize(batch * spec.input().size());
  size_t scratch = 0, widest = spec.input().size();
  for (size_t l = 0; l < specs.size(); ++l) {
    acts[l + 1].resize(batch * specs[l].out.size());
    saved[l].resize(batch * layers[l]->saved_floats_per_sample());
    scratch = std::max(scratch, layers[l]->scratch_floats());
    widest = std::max(widest, specs[l].out.size());
  }
  std::vector<float> work(scratch), dy(batch * widest), dx(batch * widest);
  Rng rng(7);
  for (float &v : acts[0]) v = rng.uniform();
  for (float &v : dy) v = rng.uniform() - 0.5f;
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (const auto &s : specs) offsets.push_back(offset), offset += s.parameters();

  std::vector<double> forward(specs.size(), 0), backward(specs.size(), 0);
  for (size_t r = 0; r < reps + 1; ++r) {  // the first round warms up and is not counted
    for (size_t l = 0; l < specs.size(); ++l) {
      PassInfo info{batch, 0, 1, r, l, true};
      const double t0 = platform::now_seconds();
      layers[l]->forward(params.data() + offsets[l], acts[l].data(), acts[l + 1].data(), saved[l].data(),
                         work.data(), info);
      if (r > 0) forward[l] += platform::now_seconds() - t0;
    }
    for (size_t l = specs.size(); l-- > 0;) {
      PassInfo info{batch, 0, 1, r, l, true};
      const double t0 = platform::now_seconds();
      layers[l]->backward(params.data() + offsets[l], acts[l].data(), acts[l + 1].data(), dy.data(),
                          l == 0 ? nullptr : dx.data(), grads.data() + offsets[l], saved[l].data(),
                          work.data(), info);
      if (r > 0) backward[l] += platform::now_seconds() - t0;
    }
  }
  double total = 0;
  for (size_t l = 0; l < specs.size(); ++l) total += forward[l] + backward[l];
  std::printf("\n%s per-layer times on one device, batch %zu, mean of %zu passes\n\n", model.c_str(), batch,
              reps);
  std::printf("%-3s %-16s %12s %12s %8s\n", "#", "layer", "forward_ms", "backward_ms", "share");
  for (size_t l = 0; l < specs.size(); ++l) {
    const double f = forward[l] / double(reps) * 1e3, b = backward[l] / double(reps) * 1e3;
    const std::string name = layer_name(spec, l);
    std::printf("%-3zu %-16s %12.3f %12.3f %7.1f%%\n", l, name.c_str(), f, b,
                100.0 * (forward[l] + backward[l]) / total);
    if (csv != nullptr) {
      std::fprintf(csv, "layer,%zu:%s,1,forward_ms,%.6f\n", l, name.c_str(), f);
      std::fprintf(csv, "layer,%zu:%s,1,backward_ms,%.6f\n", l, name.c_str(), b);
    }
  }
}

}  // namespace dpt::bench
