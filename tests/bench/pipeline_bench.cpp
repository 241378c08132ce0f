// Pipeline model parallel: the bubble and the throughput. For each model, stage count, schedule and
// micro-batch count M, the images per second of a pipelined step against one device on the whole batch,
// and each stage's idle fraction of its pipeline phase (the time it waited for its neighbours; its compute
// and hand-overs are the rest) against GPipe's (S - 1) / (M + S - 1) for equal stages, and the activation
// bytes of the stage that holds the most. One CPU device per stage: on a machine with fewer cores than stages
// the stages share cores and the idle fractions mix the bubble with waiting for a core. A table, never a
// test.
//
//   build/bin/dptrain_pipeline_bench [--models deep-mlp,resnet18] [--stages 2] [--micro 1,2,4,8,16]
//                                    [--steps 3] [--batch B (default 256, ResNet-18 64)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "bench_common.hpp"
#include "core/platform.hpp"
#include "parallel/trainer.hpp"

namespace {

using dpt_bench::bench_model;
using dpt_bench::parse_names;
using dpt_bench::parse_sizes;

struct Options {
  std::vector<std::string> models{"deep-mlp", "resnet18"};
  std::vector<size_t> stages{2};
  std::vector<size_t> micro{1, 2, 4, 8, 16};
  size_t steps = 3;
  size_t batch = 0;  // 0: 256 (64 for ResNet-18)
};

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--models") {
      o.models = parse_names(value), ++i;
    } else if (arg == "--stages") {
      o.stages = parse_sizes(value), ++i;
    } else if (arg == "--micro") {
      o.micro = parse_sizes(value), ++i;
    } else if (arg == "--steps") {
      o.steps = std::stoul(value), ++i;
    } else if (arg == "--batch") {
      o.batch = std::stoul(value), ++i;
    } else {
      std::printf(
          "usage: dptrain_pipeline_bench [--models deep-mlp,resnet18] [--stages 2] [--micro 1,2,4,8,16]\n"
          "                              [--steps 3] [--batch B]\n");
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  return o;
}

// ResNet-18's stages begin at whole layers (its compute is about even across the four); other models are
// cut where their estimated work divides most evenly (the trainer's default).
std::vector<std::string> cuts(const std::string &model, size_t stages) {
  if (model != "resnet18") return {};
  if (stages == 2) return {"layer3.0.conv1"};
  if (stages == 4) return {"layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"};
  return {};
}

size_t batch_of(const std::string &model, size_t batch) {
  return batch > 0 ? batch : model == "resnet18" ? 64 : 256;
}

struct Measured {
  double images_per_second = 0;
  std::vector<double> idle;  // per stage: idle / (compute + idle)
  uint64_t activations = 0;  // the largest stage's
};

Measured measure(const std::string &name, const dpt::TrainerConfig &config, size_t devices, size_t steps,
                 size_t batch) {
  const dpt::ModelSpec spec = bench_model(name);
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{devices, 0});
  dpt::Trainer t(context, spec, config);
  std::vector<float> x(batch * spec.input().size());
  std::vector<int32_t> y(batch);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) / 1000.0f;
  for (size_t i = 0; i < batch; ++i) y[i] = int32_t(i % spec.classes());
  t.step(x.data(), y.data(), batch);  // warm-up: allocation, first touch
  Measured m;
  m.idle.assign(devices, 0.0);
  double seconds = 0;
  for (size_t s = 0; s < steps; ++s) {
    const double start = dpt::platform::now_seconds();
    t.step(x.data(), y.data(), batch);
    seconds += dpt::platform::now_seconds() - start;
    for (size_t r = 0; r < devices; ++r) {
      const dpt::ReplicaTimes times = t.replica_times(r);
      const double phase = times.compute + times.communication + times.idle;  // the update aside
      m.idle[r] += times.idle / std::max(1e-12, phase) / double(steps);
    }
  }
  for (size_t r = 0; r < devices; ++r)
    m.activations = std::max(m.activations, t.replica_memory(r).activations);
  m.images_per_second = double(batch * steps) / seconds;
  return m;
}

}  // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  std::printf("%-9s %5s %2s %-6s %3s %10s %8s %-23s %7s %10s\n", "model", "batch", "S", "sched", "M",
              "images/s", "vs 1 dev", "idle per stage", "GPipe", "act. MiB");
  for (const std::string &model : o.models) {
    dpt::TrainerConfig one;
    one.optimizer.momentum = 0.9f;
    const size_t batch = batch_of(model, o.batch);
    const Measured base = measure(model, one, 1, o.steps, batch);
    std::printf("%-9s %5zu %2d %-6s %3d %10.1f %8s %-23s %7s %10.1f\n", model.c_str(), batch, 1, "-", 1,
                base.images_per_second, "1.00x", "-", "-", double(base.activations) / (1 << 20));
    for (size_t stages : o.stages)
      for (dpt::PipelineSchedule schedule : {dpt::PipelineSchedule::kOneFOneB, dpt::PipelineSchedule::kGPipe})
        for (size_t micro : o.micro) {
          dpt::TrainerConfig c = one;
          c.pipeline_stages = stages;
          c.micro_batches = micro;
          c.pipeline_schedule = schedule;
          c.pipeline_cuts = cuts(model, stages);
          const Measured m = measure(model, c, stages, o.steps, batch);
          std::string idle;
          for (double f : m.idle) {
            char one[16];
            std::snprintf(one, sizeof one, "%s%.0f%%", idle.empty() ? "" : " ", 100 * f);
            idle += one;
          }
          char ratio[16], ideal[16];
          std::snprintf(ratio, sizeof ratio, "%.2fx", m.images_per_second / base.images_per_second);
          std::snprintf(ideal, sizeof ideal, "%.0f%%", 100 * dpt::ideal_bubble(stages, micro));
          std::printf("%-9s %5zu %2zu %-6s %3zu %10.1f %8s %-23s %7s %10.1f\n", model.c_str(), batch, stages,
                      schedule == dpt::PipelineSchedule::kGPipe ? "gpipe" : "1f1b", micro,
                      m.images_per_second, ratio, idle.c_str(), ideal, double(m.activations) / (1 << 20));
          std::fflush(stdout);
        }
  }
  return 0;
}
