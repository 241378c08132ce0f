// Sharded data parallel: bytes per device by category for each shard mode and device count, against the
// ZeRO paper's accounting (mixed-precision Adam aside: float32 AdamW holds 16 bytes per parameter, of which
// a sharded optimizer keeps 8 + 8/K per device, sharded gradients 4 + 12/K, sharded parameters 16/K), and
// the step time of each mode. Gradient buckets of 1 MiB (the C API's default). A table, never a test.
//
//   build/bin/dptrain_sharding_bench [--models resnet18,wide-mlp] [--devices 1,2,4,8] [--batch 16]
//                                    [--steps 5] [--time-devices 2]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "bench_common.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "graph/model_spec.hpp"
#include "parallel/trainer.hpp"

namespace {

using dpt_bench::bench_model;
using dpt_bench::parse_names;

struct Options {
  std::vector<std::string> models{"resnet18", "wide-mlp"};
  std::vector<size_t> devices{1, 2, 4, 8};
  size_t batch = 16;
  size_t steps = 5;
  size_t time_devices = 2;  // the device count of the timing table (this machine's cores)
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--models") {
      o.models = parse_names(value), ++i;
    } else if (arg == "--devices") {
      o.devices = dpt_bench::parse_sizes(value), ++i;
    } else if (arg == "--batch") {
      o.batch = std::stoul(value), ++i;
    } else if (arg == "--steps") {
      o.steps = std::stoul(value), ++i;
    } else if (arg == "--time-devices") {
      o.time_devices = std::stoul(value), ++i;
    } else {
      std::printf(
          "usage: dptrain_sharding_bench [--models resnet18,wide-mlp] [--devices 1,2,4,8] [--batch 16]\n"
          "                              [--steps 5] [--time-devices 2]\n");
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  return o;
}

const dpt::ShardMode kModes[] = {dpt::ShardMode::kNone, dpt::ShardMode::kOptimizer,
                                 dpt::ShardMode::kGradients, dpt::ShardMode::kParameters};

const char *mode_name(dpt::ShardMode mode) {
  switch (mode) {
    case dpt::ShardMode::kOptimizer:
      return "optimizer";
    case dpt::ShardMode::kGradients:
      return "gradients";
    case dpt::ShardMode::kParameters:
      return "parameters";
    default:
      return "none";
  }
}

// ZeRO's accounting of float32 AdamW per device: parameters 4, gradients 4, state 8 bytes per parameter,
// the state split K ways with a sharded optimizer, the gradient too with sharded gradients.
double zero_bytes(dpt::ShardMode mode, size_t parameters, size_t k) {
  const double p = double(parameters), K = double(k);
  if (mode == dpt::ShardMode::kParameters) return p * 16.0 / K;
  if (mode == dpt::ShardMode::kGradients) return p * (4.0 + 12.0 / K);
  return mode == dpt::ShardMode::kOptimizer ? p * (8.0 + 8.0 / K) : p * 16.0;
}

dpt::TrainerConfig config(dpt::ShardMode mode) {
  dpt::TrainerConfig c;
  c.seed = 1;
  c.shard = mode;
  c.bucket_bytes = size_t(1) << 20;
  c.optimizer.kind = dpt::OptimizerKind::kAdamW;
  c.optimizer.learning_rate = 1e-4f;
  return c;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch make_batch(const dpt::ModelSpec &spec, size_t n) {
  Batch b;
  b.x.resize(n * spec.input().size());
  for (size_t i = 0; i < b.x.size(); ++i) b.x[i] = float((i * 2654435761u) % 1000) / 1000.0f;
  b.y.resize(n * spec.targets_per_sample());
  for (size_t i = 0; i < b.y.size(); ++i) b.y[i] = int32_t(i % spec.classes());
  return b;
}

double mib(uint64_t bytes) {
  return double(bytes) / 1048576.0;
}

void memory_table(const Options &o) {
  std::printf(
      "bytes per device after one AdamW step of batch %zu (the device that holds the most; MiB). zero = the\n"
      "ZeRO paper's parameters + gradients + optimizer state for float32 AdamW (16 bytes per parameter;\n"
      "8 + 8/K with a sharded optimizer, 4 + 12/K with sharded gradients, 16/K with sharded parameters);\n"
      "of_zero = (parameters + gradients + state) / zero (sharded gradients: grads include the two staging\n"
      "buckets; sharded parameters: params include the gather slot)\n\n",
      o.batch);
  std::printf("%-9s %-10s %2s %10s %10s %10s %10s %12s %10s %10s %8s\n", "model", "shard", "K", "params",
              "grads", "opt_state", "buffers", "activations", "total", "zero", "of_zero");
  for (const std::string &name : o.models) {
    const dpt::ModelSpec spec = bench_model(name);
    for (size_t k : o.devices)
      for (dpt::ShardMode mode : kModes) {
        if (k == 1 && mode != dpt::ShardMode::kNone) continue;  // one device has nothing to shard with
        auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0});
        dpt::Trainer t(context, spec, config(mode));
        const Batch b = make_batch(spec, std::max(o.batch, k));
        t.step(b.x.data(), b.y.data(), std::max(o.batch, k));
        dpt::ReplicaMemory most;
        for (size_t r = 0; r < k; ++r) {
          const dpt::ReplicaMemory m = t.replica_memory(r);
          if (m.total() > most.total()) most = m;
        }
        const double zero = zero_bytes(mode, spec.parameter_count(), k);
        std::printf("%-9s %-10s %2zu %10.1f %10.1f %10.1f %10.2f %12.1f %10.1f %10.1f %8.3f\n", name.c_str(),
                    mode_name(mode), k, mib(most.parameters), mib(most.gradients), mib(most.optimizer_state),
                    mib(most.buffers), mib(most.activations), mib(most.total()), mib(uint64_t(zero)),
                    double(most.parameters + most.gradients + most.optimizer_state) / zero);
        std::fflush(stdout);
      }
  }
}

void time_table(const Options &o) {
  const size_t k = o.time_devices;
  std::printf(
      "\nstep time on %zu CPU devices, AdamW, batch %zu, median of %zu steps after 2 warm-up (ms);\n"
      "allreduce: the gradient reduction's own time (buckets: during backward), exposed: the part the step\n"
      "waited for after backward; update: the optimizer step and (sharded) the gradient norm's block sums\n"
      "and the parameter all-gather\n\n",
      k, o.batch, o.steps);
  std::printf("%-9s %-10s %10s %12s %11s %10s %10s\n", "model", "shard", "step_ms", "allreduce_ms",
              "exposed_ms", "update_ms", "vs_none");
  for (const std::string &name : o.models) {
    const dpt::ModelSpec spec = bench_model(name);
    const Batch b = make_batch(spec, o.batch);
    double none_ms = 0;
    for (dpt::ShardMode mode : kModes) {
      auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0});
      dpt::Trainer t(context, spec, config(mode));
      for (int i = 0; i < 2; ++i) t.step(b.x.data(), b.y.data(), o.batch);
      std::vector<double> total, allreduce, exposed, update;
      for (size_t i = 0; i < o.steps; ++i) {
        const dpt::StepStats s = t.step(b.x.data(), b.y.data(), o.batch);
        total.push_back(s.total_seconds * 1e3);
        allreduce.push_back(s.allreduce_seconds * 1e3);
        exposed.push_back(s.allreduce_exposed_seconds * 1e3);
        update.push_back(s.update_seconds * 1e3);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double step_ms = median(total);
      if (mode == dpt::ShardMode::kNone) none_ms = step_ms;
      std::printf("%-9s %-10s %10.1f %12.2f %11.2f %10.2f %10.3f\n", name.c_str(), mode_name(mode), step_ms,
                  median(allreduce), median(exposed), median(update), step_ms / none_ms);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  try {
    memory_table(o);
    time_table(o);
  } catch (const dpt::Error &e) {
    std::fprintf(stderr, "dptrain_sharding_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
