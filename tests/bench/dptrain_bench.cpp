// dptrain_bench: training throughput for K CPU devices (LeNet, MLP and a wide MLP; with and without the
// bucket overlap, and the share of the all-reduce hidden behind backward; ResNet-18 with sync or local
// BatchNorm), the GEMM rate of each step next to a single-thread SGEMM peak, per-layer times, and all-reduce
// time and bus bandwidth for the ring and textbook algorithms next to single-thread memcpy bandwidth.
// Prints tables (and CSV with --csv); numbers go to docs/benchmarks.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/conv2d_winograd.hpp"
#include "bench_common.hpp"
#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "core/platform.hpp"
#include "core/rng.hpp"
#include "data/dataset.hpp"
#include "graph/network.hpp"
#include "layer_times.hpp"
#include "parallel/device_group.hpp"
#include "parallel/trainer.hpp"

namespace {

using dpt_bench::bench_model;
using dpt_bench::parse_names;

using dpt::platform::now_seconds;

struct Options {
  std::vector<size_t> devices{1, 2};
  std::vector<size_t> reduce_devices{2, 4};
  std::vector<size_t> bucket_kib{0, 1024};  // per K > 1; 0 = one all-reduce after backward
  size_t steps = 30;
  size_t batch = 256;
  std::vector<std::string> models{"lenet", "mlp", "wide-mlp"};
  bool training = true, allreduce = true, layers = true;
  bool sync_batch_norm = true;                            // --bn sync|local
  std::vector<dpt::DType> precisions{dpt::DType::kF32};   // --precision fp32,bf16,fp16
  std::vector<dpt::WireType> wires{dpt::WireType::kF32};  // --allreduce-dtype fp32,bf16,fp16
  dpt::DType activations = dpt::DType::kF32;              // --activation-dtype fp32|bf16|fp16
  bool world = false;        // --world: under mpirun, the all-reduce across the processes only
  std::FILE *csv = nullptr;  // --csv FILE: every figure as a row "section,item,devices,metric,value"
};

std::vector<size_t> parse_list(const char *text, bool allow_zero = false) {
  std::vector<size_t> out;
  for (const char *p = text; *p;) {
    char *end = nullptr;
    unsigned long v = std::strtoul(p, &end, 10);
    if (end == p || (v == 0 && !allow_zero)) {
      std::fprintf(stderr, "dptrain_bench: bad list '%s'\n", text);
      std::exit(2);
    }
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

// Best of several timings of one memcpy of `bytes`, in bytes copied per second.
// Allocated like device buffers (platform::aligned_allocate: huge pages for large buffers), so that the
// all-reduce is compared with a copy over the same kind of memory.
double memcpy_bandwidth(size_t bytes) {
  char *a = static_cast<char *>(dpt::platform::aligned_allocate(bytes, 64));
  char *b = static_cast<char *>(dpt::platform::aligned_allocate(bytes, 64));
  if (a == nullptr || b == nullptr) std::abort();
  std::memset(a, 1, bytes);
  std::memset(b, 2, bytes);
  double best = 1e300;
  for (int i = 0; i < 7; ++i) {
    const double t0 = now_seconds();
    std::memcpy(b, a, bytes);
    best = std::min(best, now_seconds() - t0);
  }
  if (b[bytes / 2] != 1) std::abort();
  dpt::platform::aligned_free(a);
  dpt::platform::aligned_free(b);
  return double(bytes) / best;
}

const char *wire_name(dpt::WireType w) {
  return w == dpt::WireType::kBF16 ? "bf16" : w == dpt::WireType::kF16 ? "fp16" : "fp32";
}

// Median time of one all-reduce of `bytes` of float32 gradient across k device threads, sending wire.
double allreduce_seconds(dpt::Context &context, size_t k, size_t bytes, dpt::AllReduceAlgorithm algorithm,
                         dpt::WireType wire) {
  std::vector<dpt::Device *> devices;
  for (size_t i = 0; i < k; ++i) devices.push_back(&context.device(i));
  const size_t count = bytes / sizeof(float);
  // Device buffers from the devices' own arenas, as the trainer's gradients are.
  std::vector<dpt::DeviceBuffer> buffers;
  for (size_t r = 0; r < k; ++r) {
    buffers.emplace_back(context.device(r).arena(), count);
    std::fill(buffers[r].data(), buffers[r].data() + count, 1.0f);
  }
  dpt::ThreadCollective collective(k);
  const size_t iterations = std::clamp<size_t>((size_t(1) << 30) / bytes, 5, 2000);
  std::vector<double> times(iterations);
  dpt::DeviceGroup(devices, 0).run([&](size_t rank) {
    for (size_t it = 0; it < iterations; ++it) {
      const double t0 = now_seconds();
      collective.all_reduce(rank, buffers[rank].data(), count, algorithm, wire);
      if (rank == 0) times[it] = now_seconds() - t0;
    }
  });
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string size_name(size_t bytes) {
  char text[32];
  if (bytes >= (1u << 20))
    std::snprintf(text, sizeof text, "%zu MiB", bytes >> 20);
  else
    std::snprintf(text, sizeof text, "%zu KiB", bytes >> 10);
  return text;
}

void bench_allreduce(const Options &o) {
  // The reference: a copy through DRAM (64 MiB is twice this machine's last-level cache).
  const double copy = memcpy_bandwidth(64u << 20);
  std::printf("\nsingle-thread memcpy bandwidth (64 MiB, best of 7): %.2f GB/s\n\n", copy / 1e9);
  std::fflush(stdout);
  std::printf(
      "(size: the float32 gradient's bytes; a 16-bit wire sends half of them. algbw and busbw count\n"
      "the float32 bytes, so the rows of one size compare as times do.)\n");
  std::printf("%-6s %-4s %-3s %10s %12s %12s %12s %14s %14s\n", "algo", "wire", "K", "size", "time_us",
              "algbw_GB/s", "busbw_GB/s", "memcpy_GB/s", "busbw/memcpy64");
  const size_t max_devices = *std::max_element(o.reduce_devices.begin(), o.reduce_devices.end());
  dpt::Context context(dpt::ContextConfig{max_devices, 0});
  std::vector<double> copy_at;
  for (size_t bytes = 4096; bytes <= (256u << 20); bytes *= 4) copy_at.push_back(memcpy_bandwidth(bytes));
  for (size_t k : o.reduce_devices)
    for (auto algorithm : {dpt::AllReduceAlgorithm::kRing, dpt::AllReduceAlgorithm::kNaive})
      for (dpt::WireType wire : o.wires) {
        size_t index = 0;
        for (size_t bytes = 4096; bytes <= (256u << 20); bytes *= 4, ++index) {
          const double t = allreduce_seconds(context, k, bytes, algorithm, wire);
          const double algbw = double(bytes) / t;
          const double busbw = algbw * 2.0 * double(k - 1) / double(k);  // as nccl-tests defines it
          const char *name = algorithm == dpt::AllReduceAlgorithm::kRing ? "ring" : "naive";
          std::printf("%-6s %-4s %-3zu %10s %12.1f %12.2f %12.2f %14.2f %14.2f\n", name, wire_name(wire), k,
                      size_name(bytes).c_str(), t * 1e6, algbw / 1e9, busbw / 1e9, copy_at[index] / 1e9,
                      busbw / copy);
          std::fflush(stdout);
          if (o.csv != nullptr) {
            std::fprintf(o.csv, "allreduce,%s %s %zu bytes,%zu,time_us,%.3f\n", name, wire_name(wire), bytes,
                         k, t * 1e6);
            std::fprintf(o.csv, "allreduce,%s %s %zu bytes,%zu,busbw_GBps,%.4f\n", name, wire_name(wire),
                         bytes, k, busbw / 1e9);
            std::fprintf(o.csv, "memcpy,%zu bytes,1,GBps,%.4f\n", bytes, copy_at[index] / 1e9);
          }
        }
      }
  if (o.csv != nullptr) std::fprintf(o.csv, "memcpy,64 MiB,1,GBps,%.4f\n", copy / 1e9);
}

// Under mpirun: the all-reduce across the processes alone (World: MPI's float32 all-reduce, or the
// 16-bit all-to-all + all-gather), median of repeated calls; process 0 prints.
void bench_world_allreduce(const Options &o) {
  const dpt::World &world = dpt::World::get();
  if (world.rank() == 0)
    std::printf("\nall-reduce across %zu MPI processes (%s)\n%-4s %10s %12s %12s %12s\n", world.size(),
                world.library_version().c_str(), "wire", "size", "time_us", "algbw_GB/s", "busbw_GB/s");
  for (dpt::WireType wire : o.wires)
    for (size_t bytes = 1u << 20; bytes <= (64u << 20); bytes *= 4) {
      std::vector<float> buffer(bytes / sizeof(float), 1.0f);
      const size_t iterations = std::clamp<size_t>((size_t(1) << 28) / bytes, 5, 200);
      std::vector<double> times(iterations);
      for (size_t it = 0; it < iterations; ++it) {
        const double t0 = now_seconds();
        world.all_reduce(buffer.data(), buffer.size(), 60, wire);
        times[it] = now_seconds() - t0;
      }
      std::sort(times.begin(), times.end());
      const double t = times[times.size() / 2], algbw = double(bytes) / t;
      const double busbw = algbw * 2.0 * double(world.size() - 1) / double(world.size());
      if (world.rank() == 0) {
        std::printf("%-4s %10s %12.1f %12.2f %12.2f\n", wire_name(wire), size_name(bytes).c_str(), t * 1e6,
                    algbw / 1e9, busbw / 1e9);
        std::fflush(stdout);
        if (o.csv != nullptr)
          std::fprintf(o.csv, "world_allreduce,%s %zu bytes,%zu,time_us,%.3f\n", wire_name(wire), bytes,
                       world.size(), t * 1e6);
      }
    }
  dpt::World::finalize();
}

// The multiply-adds of one training sample's GEMMs, as FLOPs (2 per multiply-add): for conv2d, dense and
// linear, forward W x, and in backward dW (always) and dX (unless the node reads the model's input, whose
// gradient nobody needs). Per output pixel (a linear: per row) a node does weight.size() multiply-adds in
// each of the three. Causal self-attention adds its two products, q k and p v, over the T (T + 1) / 2
// pairs of each head, forward and twice in backward (the scores' and the values' gradients; recomputing the
// scores is not counted), as llm.c counts model FLOPs. The rest of the step (normalisation, activations,
// im2col, the update) is not counted: GFLOP/s over this count is the rate of the step as if it were all
// GEMM, comparable with an SGEMM peak.
double training_flops_per_sample(const dpt::ModelSpec &spec) {
  double flops = 0;
  for (const dpt::Node &node : spec.nodes()) {
    const std::string op = node.op->name;
    if (op == "causal_self_attention") {
      const dpt::Shape &y = node.layout.output;  // [T, C]
      const double t = double(y[0]), pairs = t * (t + 1) / 2;
      flops += 2.0 * 2.0 * pairs * double(y[1]) * 3.0;
      continue;
    }
    if ((op != "conv2d" && op != "dense" && op != "linear") || node.layout.params.empty()) continue;
    const dpt::Shape &w = node.layout.params[0].shape;
    const double per_pixel = double(w.size());
    const double pixels = op == "conv2d"   ? double(node.layout.output.size()) / double(w[0])
                          : op == "linear" ? double(node.layout.output.size()) / double(w[0])
                                           : 1.0;
    const bool reads_input = node.inputs.size() == 1 && node.inputs[0] == 0;
    flops += 2.0 * per_pixel * pixels * (reads_input ? 2.0 : 3.0);
  }
  return flops;
}

// The single-thread SGEMM rate of the BLAS the CPU kernels use (OpenBLAS, one thread per call): square
// row-major C = A B for n = 512, 1024, 2048, the best of 5 runs each; the best of them, in FLOP/s.
// The single-thread GEMM rate of square products, of the kernel the training steps use for precision p.
double gemm_peak(dpt::gemm::Precision p) {
  dpt::blas::use_single_thread();
  double best = 0;
  for (size_t n : {512, 1024, 2048}) {
    std::vector<float> a(n * n), b(n * n), c(n * n);
    dpt::Rng rng(7);
    for (auto &v : a) v = rng.uniform() - 0.5f;
    for (auto &v : b) v = rng.uniform() - 0.5f;
    for (int r = 0; r < 5; ++r) {
      const double t0 = now_seconds();
      dpt::blas::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n, p);
      best = std::max(best, 2.0 * double(n) * double(n) * double(n) / (now_seconds() - t0));
    }
  }
  return best;
}

const char *precision_name(dpt::DType p) {
  return p == dpt::DType::kBF16 ? "bf16" : p == dpt::DType::kF16 ? "fp16" : "fp32";
}

dpt::gemm::Precision gemm_precision(dpt::DType p) {
  return p == dpt::DType::kBF16  ? dpt::gemm::Precision::kBF16
         : p == dpt::DType::kF16 ? dpt::gemm::Precision::kF16
                                 : dpt::gemm::Precision::kF32;
}

void bench_training(const Options &o) {
  double peaks[dpt::gemm::kPrecisionCount] = {};  // per GEMM precision: its kernel's square-product rate
  for (dpt::DType p : o.precisions) {
    const dpt::gemm::Precision g = gemm_precision(p);
    peaks[int(g)] = gemm_peak(g);
    std::printf(
        "\nsingle-thread GEMM peak, %s (%s kernel, square n = 512/1024/2048, best of 5): %.1f GFLOP/s\n",
        precision_name(p), dpt::gemm::kernel_name(dpt::gemm::kernel(g)), peaks[int(g)] / 1e9);
    if (o.csv != nullptr)
      std::fprintf(o.csv, "gemm,peak %s,1,GFLOPps,%.2f\n", precision_name(p), peaks[int(g)] / 1e9);
  }
  std::printf(
      "\ntraining step, batch %zu, SGD, synthetic 1x28x28 inputs, %zu timed steps after 3 warm-up;\n"
      "allreduce_ms is the reduction's own time, exposed_ms the part the step waited for after\n"
      "backward, hidden = 1 - exposed/allreduce; GFLOP/s counts the step's GEMM work only (3 GEMMs per\n"
      "conv/dense: forward, dW, dX, as im2col computes them: Winograd convolutions do fewer, so of_peak\n"
      "may pass 100%%), of_peak = GFLOP/s / (K x the precision's GEMM peak); BatchNorm: %s\n",
      o.batch, o.steps, o.sync_batch_norm ? "sync" : "local");
  for (const std::string &model : o.models) {
    const dpt::ModelSpec spec = bench_model(model);
    const double flops = training_flops_per_sample(spec);
    std::printf("%s: %.4f GFLOP of GEMM work per training sample\n", model.c_str(), flops / 1e9);
    if (o.csv != nullptr)
      std::fprintf(o.csv, "training,%s,1,gemm_GFLOP_per_sample,%.6f\n", model.c_str(), flops / 1e9);
    // Activation bytes per sample in each storage (graph/activation_store.hpp), and a device's share of
    // the batch on one device (K devices: 1/K of it each).
    dpt::MemoryArena arena("cpu:0", 0);
    dpt::CpuKernels kernels(arena);
    const dpt::Network fp32(spec, kernels, dpt::DType::kF32, dpt::DType::kF32);
    const dpt::Network bf16(spec, kernels, dpt::DType::kF32, dpt::DType::kBF16);
    const double a = double(fp32.activation_bytes_per_sample()),
                 b = double(bf16.activation_bytes_per_sample());
    std::printf(
        "%s: activations %.0f bytes per sample in float32, %.0f in 16 bits (%.2f); batch %zu on one "
        "device: %.1f and %.1f MiB\n",
        model.c_str(), a, b, b / a, o.batch, a * double(o.batch) / 1048576.0,
        b * double(o.batch) / 1048576.0);
    if (o.csv != nullptr) {
      std::fprintf(o.csv, "training,%s,1,activation_bytes_per_sample_fp32,%.0f\n", model.c_str(), a);
      std::fprintf(o.csv, "training,%s,1,activation_bytes_per_sample_16bit,%.0f\n", model.c_str(), b);
    }
  }
  if (o.activations != dpt::DType::kF32)
    std::printf("activations kept in %s between forward and backward (--activation-dtype)\n",
                precision_name(o.activations));
  std::printf("\n");
  std::printf("%-9s %-4s %-4s %-3s %9s %10s %8s %11s %13s %11s %7s %10s %9s %8s\n", "model", "prec", "wire",
              "K", "bucket", "images/s", "vs_K=1", "compute_ms", "allreduce_ms", "exposed_ms", "hidden",
              "update_ms", "GFLOP/s", "of_peak");
  for (const std::string &model : o.models) {
    const dpt::ModelSpec spec = bench_model(model);
    const size_t in = spec.input().size();
    const double flops = training_flops_per_sample(spec);
    std::vector<float> x(o.batch * in);
    std::vector<int32_t> y(o.batch * spec.targets_per_sample());
    dpt::Rng rng(1);
    for (auto &v : x) v = rng.uniform();
    if (spec.input_dtype() == dpt::DType::kI32)  // tokens, in the float slots as their bits
      for (auto &v : x) {
        const int32_t token = int32_t(rng.below(spec.token_bound()));
        std::memcpy(&v, &token, sizeof token);
      }
    for (auto &v : y) v = int32_t(rng.below(spec.classes()));
    for (dpt::DType precision : o.precisions) {
      const double peak = peaks[int(gemm_precision(precision))];
      double base = 0;
      for (size_t k : o.devices) {
        auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{k, 0});
        for (size_t kib : k == 1 ? std::vector<size_t>{0} : o.bucket_kib)
          for (dpt::WireType wire : k == 1 ? std::vector<dpt::WireType>{dpt::WireType::kF32} : o.wires) {
            dpt::TrainerConfig config;
            config.allreduce_dtype = wire == dpt::WireType::kBF16  ? dpt::DType::kBF16
                                     : wire == dpt::WireType::kF16 ? dpt::DType::kF16
                                                                   : dpt::DType::kF32;
            config.optimizer.learning_rate = 0.01f;
            config.bucket_bytes = kib * 1024;
            config.sync_batch_norm = o.sync_batch_norm;
            config.matmul_dtype = precision;
            config.activation_dtype = o.activations;
            config.loss_scaling.enabled = precision == dpt::DType::kF16;
            dpt::Trainer trainer(context, spec, config);
            for (int i = 0; i < 3; ++i) trainer.step(x.data(), y.data(), o.batch);
            double compute = 0, reduce = 0, exposed = 0, update = 0;
            const double t0 = now_seconds();
            for (size_t i = 0; i < o.steps; ++i) {
              dpt::StepStats s = trainer.step(x.data(), y.data(), o.batch);
              compute += s.compute_seconds, reduce += s.allreduce_seconds;
              exposed += s.allreduce_exposed_seconds, update += s.update_seconds;
            }
            const double rate = double(o.steps * o.batch) / (now_seconds() - t0);
            if (base == 0) base = rate;
            const double n = double(o.steps);
            const std::string bucket = k == 1 ? "-" : kib == 0 ? "none" : size_name(kib * 1024);
            const double hidden = reduce > 0 ? 1.0 - exposed / reduce : 0.0;
            const double gflops = rate * flops / 1e9;
            std::printf(
                "%-9s %-4s %-4s %-3zu %9s %10.*f %7.2fx %11.2f %13.3f %11.3f %6.0f%% %10.2f %9.1f %7.1f%%\n",
                model.c_str(), precision_name(precision), wire_name(wire), k, bucket.c_str(),
                rate < 1000 ? 1 : 0, rate, rate / base, compute / n * 1e3, reduce / n * 1e3,
                exposed / n * 1e3, hidden * 100.0, update / n * 1e3, gflops,
                100.0 * gflops * 1e9 / (double(k) * peak));
            std::fflush(stdout);
            if (o.csv != nullptr) {
              const std::string item =
                  model + " " + precision_name(precision) +
                  (wire == dpt::WireType::kF32 ? "" : std::string(" wire ") + wire_name(wire)) + " bucket " +
                  bucket;
              std::fprintf(o.csv, "training,%s,%zu,images_per_s,%.1f\n", item.c_str(), k, rate);
              std::fprintf(o.csv, "training,%s,%zu,allreduce_ms,%.4f\n", item.c_str(), k, reduce / n * 1e3);
              std::fprintf(o.csv, "training,%s,%zu,hidden_share,%.4f\n", item.c_str(), k, hidden);
              std::fprintf(o.csv, "training,%s,%zu,step_ms,%.3f\n", item.c_str(), k,
                           1e3 * double(o.batch) / rate);
              std::fprintf(o.csv, "training,%s,%zu,gemm_GFLOPps,%.2f\n", item.c_str(), k, gflops);
            }
          }
      }
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "dptrain_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--devices")
      o.devices = parse_list(value());
    else if (a == "--reduce-devices")
      o.reduce_devices = parse_list(value());
    else if (a == "--steps")
      o.steps = parse_list(value()).at(0);
    else if (a == "--batch")
      o.batch = parse_list(value()).at(0);
    else if (a == "--model" || a == "--models")
      o.models = parse_names(value());
    else if (a == "--bucket-kib")
      o.bucket_kib = parse_list(value(), true);
    else if (a == "--precision") {
      o.precisions.clear();
      for (const std::string &name : parse_names(value())) {
        if (name != "fp32" && name != "bf16" && name != "fp16") {
          std::fprintf(stderr, "dptrain_bench: --precision takes fp32, bf16 and/or fp16\n");
          return 2;
        }
        o.precisions.push_back(name == "bf16"   ? dpt::DType::kBF16
                               : name == "fp16" ? dpt::DType::kF16
                                                : dpt::DType::kF32);
      }
    } else if (a == "--allreduce-dtype") {
      o.wires.clear();
      for (const std::string &name : parse_names(value())) {
        if (name != "fp32" && name != "bf16" && name != "fp16") {
          std::fprintf(stderr, "dptrain_bench: --allreduce-dtype takes fp32, bf16 and/or fp16\n");
          return 2;
        }
        o.wires.push_back(name == "bf16"   ? dpt::WireType::kBF16
                          : name == "fp16" ? dpt::WireType::kF16
                                           : dpt::WireType::kF32);
      }
    } else if (a == "--activation-dtype") {
      const std::string name = value();
      if (name != "fp32" && name != "bf16" && name != "fp16") {
        std::fprintf(stderr, "dptrain_bench: --activation-dtype takes fp32, bf16 or fp16\n");
        return 2;
      }
      o.activations = name == "bf16"   ? dpt::DType::kBF16
                      : name == "fp16" ? dpt::DType::kF16
                                       : dpt::DType::kF32;
    } else if (a == "--winograd-operands") {  // how bf16 Winograd layers store V and dM
      const std::string name = value();
      if (name != "fp32" && name != "bf16") {
        std::fprintf(stderr, "dptrain_bench: --winograd-operands takes fp32 or bf16\n");
        return 2;
      }
      dpt::cpu::winograd::set_bf16_operands(name == "bf16");
    } else if (a == "--world") {
      o.world = true;
    } else if (a == "--bn") {
      const std::string mode = value();
      if (mode != "sync" && mode != "local") {
        std::fprintf(stderr, "dptrain_bench: --bn takes sync or local\n");
        return 2;
      }
      o.sync_batch_norm = mode == "sync";
    } else if (a == "--only-training")
      o.allreduce = false, o.layers = false;
    else if (a == "--only-allreduce")
      o.training = false, o.layers = false;
    else if (a == "--only-layers")
      o.training = false, o.allreduce = false;
    else if (a == "--csv") {
      const char *path = value();
      o.csv = std::fopen(path, "w");
      if (o.csv == nullptr) {
        std::fprintf(stderr, "dptrain_bench: cannot write %s\n", path);
        return 2;
      }
      std::fprintf(o.csv, "section,item,devices,metric,value\n");
    } else {
      std::printf(
          "usage: dptrain_bench [--devices 1,2,4] [--reduce-devices 2,4] [--steps N] [--batch B]\n"
          "                     [--models lenet,mlp,wide-mlp,resnet18] [--bucket-kib 0,1024] [--bn "
          "sync|local]\n"
          "                     [--precision fp32,bf16,fp16] [--allreduce-dtype fp32,bf16,fp16]\n"
          "                     [--activation-dtype fp32|bf16|fp16] [--winograd-operands fp32|bf16]\n"
          "                     [--world (under mpirun: the all-reduce across processes only)]\n"
          "                     [--only-training|--only-layers|--only-allreduce] [--csv FILE]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  try {
    if (o.world) {
      bench_world_allreduce(o);
      return 0;
    }
    if (o.training) bench_training(o);
    if (o.layers)
      for (const std::string &model : o.models)
        for (dpt::DType precision : o.precisions)
          if (model != "wide-mlp") dpt::bench::print_layer_times(model, o.batch, 5, precision, o.csv);
    if (o.allreduce) bench_allreduce(o);
    if (o.csv != nullptr) std::fclose(o.csv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "dptrain_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
