// GPU benchmark (prints tables; tests/gpu/device-check.sh runs it on a lent GPU): training images/s on one
// GPU, on replicas sharing a GPU ("cuda:0x2") and on distinct GPUs, with synthetic inputs; and the bus
// bandwidth of the all-reduce across replicas (the module's device-memory virtual all-reduce on one GPU,
// NCCL across GPUs), on the float32 wire and, with --wire, the 16-bit ones (backend_interface.h's
// wire_dtype). busbw = bytes * 2 (K - 1) / K / seconds, as nccl-tests reports it, the bytes those of the
// float32 buffer on every wire: a 16-bit wire that sends half of them shows as the faster reduction of the
// same gradient.
//
//   dptrain_gpu_bench [--models lenet,mlp,resnet18,gpt-mini] [--batch 256] [--steps 50] [--max-mib 256]
//   [--tf32] [--deterministic] [--precision fp32,bf16,fp16] [--wire fp32,bf16,fp16] [--shard
//   none,optimizer,gradients,parameters,parameters-ahead] [--pipeline S] [--trace DIR]
//
// --deterministic: the trainers' DPT_GPU_DETERMINISTIC (cuDNN's heuristics, GEMM-family convolution
// algorithms; default: the timed choice), the row's model printed as "resnet18/det".
// --precision: the trainer's precision per row (docs/precision.md; fp16 with its loss scaling); a 16-bit
// row's model is printed as "lenet/bf16", its vs_1 against the same precision's first layout.
// --shard: the trainer's shard mode per row (docs/sharding.md; GPUs shard the optimizer state and, within one
// process, the gradients and the parameters; parameters-ahead: sharded parameters read ahead on a copy
// stream, prefetch_parameters); a sharded row's model is printed as "resnet18/optimizer".
// --pipeline S: only the layouts of S devices, each a stage (docs/pipeline.md, "GPUs"; the default
// micro-batches), the row's model printed as "resnet18/pipe2". MiB/dev: the bytes of the replica that holds
// the most (parameters, gradients, optimizer state, buffers, activations; dpt_trainer_replica_memory). A
// layout the trainer refuses for a model prints a "refused" row with the trainer's message and the run goes
// on. --max-mib 0 skips the all-reduce table. --trace DIR: after the timed steps of each model and precision
// on one replica (unsharded), three more steps recorded as a timeline, DIR/<model>[-<precision>].json (each
// op synchronised: its device time; scripts/trace-summary.py sums it up per op kind).
//
// The module is found as the library finds it (DPTRAIN_BACKEND_PATH, else next to the binary's libdptrain;
// the binary links the core, so its own directory: the device check points DPTRAIN_BACKEND_PATH at lib/).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "backend/module_loader.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "core/rng.hpp"
#include "parallel/trainer.hpp"

namespace {

struct Options {
  std::vector<std::string> models{"lenet", "mlp"};
  size_t batch = 256, steps = 50, max_mib = 256;
  std::vector<std::string> wires{"fp32"};  // of the all-reduce table: fp32, bf16, fp16
  bool tf32 = false, deterministic = false;
  std::vector<std::string> precisions{"fp32"};
  std::vector<std::string> shards{"none"};  // none, optimizer, gradients, parameters
  size_t pipeline = 0;                      // --pipeline: stages (0: none)
  std::string trace_dir;                    // --trace: where the one-replica rows' timelines go
};

// Three more steps of a trainer recorded as a timeline into path (Chrome trace-event JSON).
void record_trace(dpt::Trainer &trainer, const std::vector<float> &x, const std::vector<int32_t> &y,
                  size_t batch, const std::string &path) {
  trainer.start_trace(size_t(1) << 16);
  for (int i = 0; i < 3; ++i) trainer.step(x.data(), y.data(), batch);
  trainer.write_trace(path);
}

// The trainer's matmul dtype of a --precision name; false when the name is unknown.
bool precision_dtype(const std::string &name, dpt::DType &out) {
  if (name == "fp32")
    out = dpt::DType::kF32;
  else if (name == "bf16")
    out = dpt::DType::kBF16;
  else if (name == "fp16")
    out = dpt::DType::kF16;
  else
    return false;
  return true;
}

int32_t wire_dtype(const std::string &name) {
  return name == "bf16" ? DPT_DTYPE_BF16 : name == "fp16" ? DPT_DTYPE_F16 : DPT_DTYPE_F32;
}

std::vector<std::string> split(const std::string &text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string layout_name(const std::vector<size_t> &devices) {
  char text[64];
  if (devices.size() > 1 && devices[0] == devices[1])
    std::snprintf(text, sizeof text, "cuda:%zux%zu", devices[0], devices.size());
  else if (devices.size() > 1)
    std::snprintf(text, sizeof text, "cuda:%zu,%zu%s", devices[0], devices[1],
                  devices.size() > 2 ? ",..." : "");
  else
    std::snprintf(text, sizeof text, "cuda:%zu", devices[0]);
  return text;
}

void bench_training(const Options &o, std::shared_ptr<dpt::Context> context) {
  std::printf(
      "training step, batch %zu (split across the replicas), SGD momentum 0.9, synthetic inputs, %zu timed"
      " steps after 5 warm-up; TF32 %s; %s convolution algorithms\n\n",
      o.batch, o.steps, o.tf32 ? "on" : "off", o.deterministic ? "deterministic (GEMM-family)" : "timed");
  std::printf("%-11s %-12s %10s %8s %11s %13s %10s %8s\n", "model", "devices", "images/s", "vs_1",
              "compute_ms", "allreduce_ms", "update_ms", "MiB/dev");
  std::vector<std::vector<size_t>> layouts{{0}, {0, 0}};
  if (context->device_count() >= 2) layouts.push_back({0, 1});
  for (const std::string &model : o.models) {
    const dpt::ModelSpec spec = dpt::ModelSpec::builtin(model);
    std::vector<float> x(o.batch * spec.input().size());
    std::vector<int32_t> y(o.batch * spec.targets_per_sample());
    dpt::Rng rng(1);
    for (auto &v : x) v = float(rng.uniform());
    const bool tokens = spec.input_dtype() == dpt::DType::kI32;
    if (tokens)  // int32 tokens travel in the float slots as their bits
      for (auto &v : x) {
        const int32_t token = int32_t(rng.below(spec.token_bound()));
        std::memcpy(&v, &token, sizeof token);
      }
    for (auto &v : y) v = int32_t(rng.below(spec.classes()));
    // A token model's training FLOPs per token as llm.c counts them: 6 per parameter (forward and two
    // backward products) and 6 T C per attention layer (q k and p v, forward and backward).
    double flops_per_token = 6.0 * double(spec.parameter_count());
    for (const dpt::Node &node : spec.nodes())
      if (std::string(node.op->name) == "causal_self_attention")
        flops_per_token += 6.0 * double(node.layout.output[0]) * double(node.layout.output[1]);
    for (const std::string &precision : o.precisions)
      for (const std::string &shard : o.shards) {
        const std::string label =
            (precision == "fp32" ? model : model + "/" + precision) + (shard == "none" ? "" : "/" + shard) +
            (o.pipeline > 1 ? "/pipe" + std::to_string(o.pipeline) : "") + (o.deterministic ? "/det" : "");
        double base = 0;
        for (const auto &devices : layouts) {
          if (o.pipeline > 1 && devices.size() != o.pipeline) continue;  // a stage per device
          dpt::TrainerConfig config;
          config.devices = devices;
          config.pipeline_stages = o.pipeline;
          config.shard = shard == "optimizer"                ? dpt::ShardMode::kOptimizer
                         : shard == "gradients"              ? dpt::ShardMode::kGradients
                         : shard.rfind("parameters", 0) == 0 ? dpt::ShardMode::kParameters
                                                             : dpt::ShardMode::kNone;
          config.prefetch_parameters = shard == "parameters-ahead";
          // Sharded gradients and parameters stage and gather by buckets: the C API's and the CLI's 1 MiB (0,
          // a single bucket, would stage the whole gradient). The other rows keep one all-reduce per step.
          if (config.shard == dpt::ShardMode::kGradients || config.shard == dpt::ShardMode::kParameters)
            config.bucket_bytes = size_t(1) << 20;
          precision_dtype(precision, config.matmul_dtype);
          config.loss_scaling.enabled = config.matmul_dtype == dpt::DType::kF16;
          config.optimizer.learning_rate = 0.01f;
          config.optimizer.momentum = 0.9f;
          config.kernels.allow_tf32 = o.tf32;
          config.kernels.deterministic = o.deterministic;
          std::unique_ptr<dpt::Trainer> made;
          try {
            made = std::make_unique<dpt::Trainer>(context, spec, config);
          } catch (const dpt::Error &e) {
            std::printf("%-11s %-12s refused: %s\n", label.c_str(), layout_name(devices).c_str(), e.what());
            continue;
          }
          dpt::Trainer &trainer = *made;
          for (int i = 0; i < 5; ++i) trainer.step(x.data(), y.data(), o.batch);
          double compute = 0, reduce = 0, update = 0;
          const double t0 = dpt::platform::now_seconds();
          for (size_t i = 0; i < o.steps; ++i) {
            const dpt::StepStats s = trainer.step(x.data(), y.data(), o.batch);
            compute += s.compute_seconds, reduce += s.allreduce_seconds, update += s.update_seconds;
          }
          const double rate = double(o.steps * o.batch) / (dpt::platform::now_seconds() - t0);
          if (base == 0) base = rate;
          const double n = double(o.steps);
          uint64_t most = 0;
          for (size_t r = 0; r < devices.size(); ++r)
            most = std::max(most, trainer.replica_memory(r).total());
          std::printf("%-11s %-12s %10.0f %7.2fx %11.3f %13.3f %10.3f %8.1f", label.c_str(),
                      layout_name(devices).c_str(), rate, rate / base, compute / n * 1e3, reduce / n * 1e3,
                      update / n * 1e3, double(most) / 1048576.0);
          if (tokens) {
            const double per_second = rate * double(spec.input().size());
            std::printf("  tokens/s %.0f, %.2f TFLOP/s (6N + 6TC per token)", per_second,
                        per_second * flops_per_token / 1e12);
          }
          std::printf("\n");
          if (!o.trace_dir.empty() && devices.size() == 1 && shard == "none") {
            const std::string path =
                o.trace_dir + "/" + model + (precision == "fp32" ? "" : "-" + precision) + ".json";
            record_trace(trainer, x, y, o.batch, path);
            std::printf("%-11s %-12s trace of 3 steps: %s\n", label.c_str(), layout_name(devices).c_str(),
                        path.c_str());
          }
          std::fflush(stdout);
        }
      }
  }
}

// Times the module's all-reduce directly: K contexts, one buffer each, on each wire of --wire.
void bench_allreduce(const Options &o, const dpt_backend_v2 &api, int gpus) {
  std::printf(
      "\nall-reduce of K float32 buffers, best of 5 after 2 warm-up; busbw = bytes * 2(K-1)/K / s\n"
      "(bytes: the float32 buffer's, whatever the wire sends)\n\n");
  std::printf("%-28s %-5s %10s %10s %12s\n", "collective", "wire", "size", "time_us", "busbw_GBps");
  struct Layout {
    const char *name;
    std::vector<int> ordinals;
  };
  std::vector<Layout> layouts{{"virtual, 2 replicas on cuda:0", {0, 0}}};
  if (gpus >= 2) layouts.push_back({"NCCL, cuda:0,1", {0, 1}});
  char error[512] = "";
  auto check = [&](int rc, const char *what) {
    if (rc != 0) throw std::runtime_error(std::string(what) + ": " + error);
  };
  for (const Layout &layout : layouts) {
    const size_t k = layout.ordinals.size();
    std::vector<dpt_backend_context *> contexts(k, nullptr);
    for (size_t r = 0; r < k; ++r)
      check(api.context_create(layout.ordinals[r], nullptr, &contexts[r], error, sizeof error),
            "context_create");
    dpt_backend_comm *comm = nullptr;
    if (layout.ordinals[0] != layout.ordinals[1])
      check(api.comm_create(int(k), layout.ordinals.data(), &comm, error, sizeof error), "comm_create");
    for (const std::string &wire : o.wires)
      for (size_t mib = 1; mib <= o.max_mib; mib *= 4) {
        const size_t count = mib * (size_t(1) << 20) / sizeof(float);
        std::vector<float *> buffers(k);
        for (size_t r = 0; r < k; ++r) {
          void *p = nullptr;
          check(api.mem_alloc(contexts[r], count * sizeof(float), &p, error, sizeof error), "mem_alloc");
          check(api.mem_set(contexts[r], p, 0, count * sizeof(float), error, sizeof error), "mem_set");
          buffers[r] = static_cast<float *>(p);
        }
        double best = 1e300;
        for (int round = 0; round < 7; ++round) {
          for (auto *c : contexts) check(api.context_synchronize(c, error, sizeof error), "synchronize");
          const double t0 = dpt::platform::now_seconds();
          if (comm != nullptr) {
            check(api.comm_all_reduce(comm, contexts.data(), 1, buffers.data(), &count, wire_dtype(wire), 60,
                                      error, sizeof error),
                  "comm_all_reduce");
          } else {
            check(api.virtual_all_reduce(contexts.data(), int(k), buffers.data(), count, wire_dtype(wire),
                                         error, sizeof error),
                  "virtual_all_reduce");
            for (auto *c : contexts) check(api.context_synchronize(c, error, sizeof error), "synchronize");
          }
          if (round >= 2) best = std::min(best, dpt::platform::now_seconds() - t0);
        }
        const double bytes = double(count * sizeof(float));
        const double busbw = bytes * 2.0 * double(k - 1) / double(k) / best / 1e9;
        std::printf("%-28s %-5s %7zu MiB %10.1f %12.1f\n", layout.name, wire.c_str(), mib, best * 1e6, busbw);
        std::fflush(stdout);
        for (size_t r = 0; r < k; ++r) api.mem_free(contexts[r], buffers[r], error, sizeof error);
      }
    if (comm != nullptr) api.comm_destroy(comm);
    for (auto *c : contexts) api.context_destroy(c);
  }
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--models" && has_value)
      o.models = split(argv[++i]);
    else if (a == "--batch" && has_value)
      o.batch = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--steps" && has_value)
      o.steps = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--max-mib" && has_value)
      o.max_mib = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--wire" && has_value)
      o.wires = split(argv[++i]);
    else if (a == "--tf32")
      o.tf32 = true;
    else if (a == "--deterministic")
      o.deterministic = true;
    else if (a == "--precision" && has_value)
      o.precisions = split(argv[++i]);
    else if (a == "--shard" && has_value)
      o.shards = split(argv[++i]);
    else if (a == "--pipeline" && has_value)
      o.pipeline = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--trace" && has_value)
      o.trace_dir = argv[++i];
    else {
      std::printf(
          "usage: dptrain_gpu_bench [--models lenet,mlp] [--batch 256] [--steps 50] [--max-mib 256] "
          "[--tf32] [--deterministic] [--precision fp32,bf16,fp16] [--wire fp32,bf16,fp16] "
          "[--shard none,optimizer,gradients,parameters,parameters-ahead] [--pipeline S] [--trace DIR]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  for (const std::string &p : o.precisions) {
    dpt::DType unused;
    if (!precision_dtype(p, unused)) {
      std::fprintf(stderr, "dptrain_gpu_bench: unknown precision \"%s\" (fp32, bf16, fp16)\n", p.c_str());
      return 2;
    }
  }
  for (const std::string &s : o.shards)
    if (s != "none" && s != "optimizer" && s != "gradients" && s != "parameters" && s != "parameters-ahead") {
      std::fprintf(stderr,
                   "dptrain_gpu_bench: --shard takes none, optimizer, gradients, parameters and "
                   "parameters-ahead, not '%s'\n",
                   s.c_str());
      return 2;
    }
  if (o.batch < 2 || o.steps < 1) {
    std::fprintf(stderr, "dptrain_gpu_bench: --batch must be at least 2 and --steps at least 1\n");
    return 2;
  }
  for (const std::string &wire : o.wires)
    if (wire != "fp32" && wire != "bf16" && wire != "fp16") {
      std::fprintf(stderr, "dptrain_gpu_bench: --wire takes fp32, bf16 and fp16, not '%s'\n", wire.c_str());
      return 2;
    }
  try {
    dpt::ContextConfig c;
    c.want_cpu = false;
    c.want_cuda = true;
    auto context = std::make_shared<dpt::Context>(c);
    if (context->device_count() == 0) {
      std::printf("no CUDA devices: %s\n", context->backend_report(DPT_DEVICE_CUDA).reason.c_str());
      return 0;
    }
    std::printf("%s\n%zu CUDA device(s); %s\n\n", context->backend_report(DPT_DEVICE_CUDA).versions.c_str(),
                context->device_count(), context->device(0).details().product_name.c_str());
    bench_training(o, context);
    const dpt::BackendModule module = dpt::load_cuda_backend();
    if (module.api != nullptr && o.max_mib > 0) bench_allreduce(o, *module.api, int(context->device_count()));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dptrain_gpu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
