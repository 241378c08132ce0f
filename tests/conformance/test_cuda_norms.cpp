// The CUDA module's kernels of the ops of residual and normalised networks (op_forward, op_backward over a
// dpt_op_call, modules/interface/op_call.h): add, concat, global_avg_pool, gelu (erf and tanh forms),
// layer_norm and batch_norm, against the CPU reference kernels (src/backend/cpu/ops, dpt::cpu::find_op) on
// host copies of the same data. batch_norm runs as the executor runs it (src/graph/network.cpp): two phases
// per pass, the statistics copied and summed over the replicas of one batch in between, with local and with
// synchronised statistics, several replicas (one of them with no samples), one replica of no samples, the
// evaluation phase on the running statistics, and a batch whose statistics are not finite.
//
// Tolerances: |GPU - CPU| <= rel * scale + abs, scale |CPU| unless named. Both sides evaluate the same
// expressions in the same order (the module's ops/*.cu are compiled with --fmad=false, the CPU kernels with
// -ffp-contract=off; double division and square root are correctly rounded on both), so results differ only
// where the sums are taken in another order (the GPU's fixed trees, the CPU's plain loops) or in erf, tanh
// and exp:
//  * add, concat, global_avg_pool backward, batch_norm evaluation: bitwise (the same roundings, no sums).
//  * sums in double (batch_norm's statistics, layer_norm's and global_avg_pool's row and plane sums): two
//    orders of N terms agree to 2 N 2^-53 of the sum of magnitudes; N <= 5000 here, so 1e-11 of it (1e-10
//    for batch_norm's mean and 1/sqrt(var + eps), whose variance E[x^2] - mean^2 amplifies that by
//    E[x^2] / var < 2 on this data), count exact.
//  * a float rounded once from such doubles (y, dx of the norms; global_avg_pool y; running statistics):
//    rel 2.4e-7 (2^-22: the doubles round to floats at most one ulp apart, ulp <= 2^-23 |y|) plus abs 1e-10
//    for elements near zero, where the doubles' discrepancy (<= 1e-12 of terms <= 64: |xhat| <= sqrt(d))
//    exceeds an ulp of the result. Against an error of FP32 accumulation (~1e-7 sqrt(N) relative) or of an
//    index (order 1) these fail.
//  * gelu: rel 2.4e-7 + abs 1e-13. Both sides now take erf and exp from interface/op_math.hpp (the same
//    plain double operations), so they should agree bitwise; the tolerance is the one set when the module
//    used CUDA's own erf and exp (within 2 ulp of exact): the doubles a few ulp apart and the floats at most
//    one rounding, except in the tails where 1 + erf(x / sqrt 2) cancels: there a few ulp(1) times |x| <= 30
//    times the derivative's polynomial (< 15), below 1e-13. Tightened once a GPU has run it.
//  * batch_norm dW, db: dW += float(sum): rel 3e-7 of |start| + sum |dy * xhat| (two roundings of floats of
//    that size, plus the sums' 1e-11).
//  * layer_norm dW, db: the CPU adds float(dy * xhat) into dW row by row in float, the module adds float of
//    a double sum once: rel (rows + 4) 2^-24 of |start| + sum |dy * xhat| (the classic bound of a float sum
//    of rows terms, plus the module's two roundings).
// Every GPU result is also checked to have the same bits on a second run (fixed-order reductions, no
// atomics), and batch_norm's replicas to hold the same running statistics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "cuda_harness.hpp"
#include "op_runner.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

using cuda_test::check;
using cuda_test::expect_bitwise;
using cuda_test::expect_close;
using cuda_test::Gpu;
using cuda_test::uniform;
using namespace cuda_test;               // the op runner (op_runner.hpp)
constexpr double kOneRounding = 2.4e-7;  // 2^-22: two floats one rounding apart, relative
constexpr double kNearZero = 1e-10;      // the doubles' discrepancy where a float result cancels to ~0

// ---- add, concat
// ------------------------------------------------------------------------------------------------

void check_add(int64_t n, const Dims &dims, uint64_t seed) {
  print_message("add n %lld, %zu elements per sample\n", (long long)n, elements(dims));
  const Spec s{"add", n, {}, {}, {dims, dims}, dims, {}, {}};
  const Data d = make_data(s, seed);
  CpuRunner cpu(s, d);
  train_pass(cpu);
  Gpu gpu;
  GpuRunner g(gpu, s, d);
  train_pass(g);
  expect_bitwise("add y", g.data.y, cpu.data.y);
  expect_bitwise("add dx[0]", g.data.dx[0], cpu.data.dx[0]);
  expect_bitwise("add dx[1]", g.data.dx[1], cpu.data.dx[1]);
  // One gradient asked for: the other is not written.
  GpuRunner one(gpu, s, d);
  one.want_dx = {false, true};
  one.backward();
  one.to_host();
  expect_bitwise("add dx[0] not asked for: untouched", one.data.dx[0], d.dx[0]);
  expect_bitwise("add dx[1] alone", one.data.dx[1], cpu.data.dx[1]);
}

void test_gpu_add(void **) {
  check_add(3, {4, 5, 6}, 100);
  check_add(64, {1000}, 110);
  check_add(1, {1}, 120);
}

void check_concat(int64_t n, const std::vector<Dims> &in, std::vector<bool> want_dx, uint64_t seed) {
  Dims out = in[0];
  out[0] = 0;
  for (const Dims &d : in) out[0] += d[0];
  print_message("concat n %lld, %zu inputs, %lld channels, %zu elements per sample\n", (long long)n,
                in.size(), (long long)out[0], elements(out));
  const Spec s{"concat", n, {}, {}, in, out, {}, {}};
  const Data d = make_data(s, seed);
  CpuRunner cpu(s, d);
  train_pass(cpu);
  Gpu gpu;
  GpuRunner g(gpu, s, d);
  g.want_dx = want_dx;
  train_pass(g);
  expect_bitwise("concat y", g.data.y, cpu.data.y);
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string name = "concat dx[" + std::to_string(i) + "]";
    if (want_dx[i])
      expect_bitwise(name.c_str(), g.data.dx[i], cpu.data.dx[i]);
    else
      expect_bitwise((name + " not asked for: untouched").c_str(), g.data.dx[i], d.dx[i]);
  }
}

void test_gpu_concat(void **) {
  check_concat(5, {{2, 4, 4}, {3, 4, 4}}, {true, true}, 200);
  check_concat(17, {{5}, {1}, {7}}, {true, false, true}, 210);
  check_concat(3, {{1, 3}, {2, 3}, {3, 3}, {4, 3}}, {true, true, true, true}, 220);
  check_concat(1, {{64, 7, 7}, {32, 7, 7}}, {false, true}, 230);  // a DenseNet-like join
}

// ---- global_avg_pool
// --------------------------------------------------------------------------------------------

void check_global_avg_pool(int64_t n, int64_t c, int64_t h, int64_t w, float offset, uint64_t seed) {
  print_message("global_avg_pool n %lld, %lldx%lldx%lld, offset %g\n", (long long)n, (long long)c,
                (long long)h, (long long)w, double(offset));
  const Spec s{"global_avg_pool", n, {}, {}, {{c, h, w}}, {c}, {}, {}};
  Data d = make_data(s, seed);
  for (float &x : d.x[0]) x += offset;
  CpuRunner cpu(s, d);
  train_pass(cpu);
  Data a = d;
  a.x[0] = absolute(d.x[0]);
  CpuRunner bound(s, a);  // y of |x|: the mean magnitude of each plane
  bound.forward();
  Gpu gpu;
  GpuRunner g(gpu, s, d);
  train_pass(g);
  // Sums of h w <= 4096 terms: 1e-12 of the mean magnitude, far below the float rounding.
  expect_close("global_avg_pool y", g.data.y, cpu.data.y, &bound.data.y, kOneRounding, 0.0);
  expect_bitwise("global_avg_pool dx", g.data.dx[0], cpu.data.dx[0]);
  GpuRunner again(gpu, s, d);
  train_pass(again);
  expect_same_bits("global_avg_pool, second run:", again.data, g.data);
}

void test_gpu_global_avg_pool(void **) {
  check_global_avg_pool(8, 16, 7, 7, 0.0f, 300);  // a ResNet head
  check_global_avg_pool(3, 5, 33, 31, 0.25f, 310);
  check_global_avg_pool(2, 3, 1, 1, 0.0f, 320);
  check_global_avg_pool(1, 2, 64, 64, 0.0f, 330);
}

// ---- gelu
// -------------------------------------------------------------------------------------------------------

void test_gpu_gelu(void **) {
  const int64_t n = 4, size = 1003;
  std::vector<float> x = uniform(size_t(n * size), 400, -8.0f, 8.0f);
  const float specials[] = {0.0f, -0.0f, 1e-3f, -1e-3f, 1e-30f, 0.5f,   -0.5f, 3.0f,   -3.0f, 5.0f,  -5.0f,
                            6.0f, -6.0f, 10.0f, -10.0f, 13.0f,  -13.0f, 20.0f, -20.0f, 30.0f, -30.0f};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) x[i * 97] = specials[i];
  Gpu gpu;
  for (const int64_t form : {0, 1}) {
    const char *name = form == 0 ? "gelu (erf)" : "gelu (tanh)";
    print_message("%s, %lld values\n", name, (long long)(n * size));
    const Spec s{"gelu", n, {form}, {}, {{size}}, {size}, {}, {}};
    Data d = make_data(s, 410 + uint64_t(form));
    d.x[0] = x;
    CpuRunner cpu(s, d);
    train_pass(cpu);
    GpuRunner g(gpu, s, d);
    train_pass(g);
    expect_close((std::string(name) + " y").c_str(), g.data.y, cpu.data.y, nullptr, kOneRounding, 1e-13);
    expect_close((std::string(name) + " dx").c_str(), g.data.dx[0], cpu.data.dx[0], nullptr, kOneRounding,
                 1e-13);
    GpuRunner again(gpu, s, d);
    train_pass(again);
    expect_same_bits(std::string(name) + ", second run:", again.data, g.data);
  }
}

// ---- layer_norm
// -------------------------------------------------------------------------------------------------

void check_layer_norm(int64_t n, const Dims &dims, float offset, uint64_t seed) {
  const int64_t d = dims.back();
  const size_t rows = size_t(n) * elements(dims) / size_t(d);
  print_message("layer_norm n %lld, %zu rows of %lld, offset %g\n", (long long)n, rows, (long long)d,
                double(offset));
  const Spec s{"layer_norm", n, {}, {1e-5}, {dims}, dims, {{d}, {d}}, {}, 2 * rows * sizeof(float), 0};
  Data data = make_data(s, seed);
  for (float &x : data.x[0]) x += offset;
  CpuRunner cpu(s, data);
  cpu.forward();
  Gpu gpu;
  GpuRunner g(gpu, s, data);
  g.forward();
  g.to_host();
  const std::vector<double> forward_saved = g.data.saved;
  expect_close("layer_norm y", g.data.y, cpu.data.y, nullptr, kOneRounding, kNearZero);
  expect_close("layer_norm saved (mean, 1/sqrt(var + eps))", saved_floats(g.data, 2 * rows),
               saved_floats(cpu.data, 2 * rows), nullptr, kOneRounding, 1e-11);

  // Backward from the same saved values (the CPU's), so that it is compared alone.
  g.data.saved = cpu.data.saved;
  g.to_device();
  cpu.backward();
  g.backward();
  g.to_host();
  expect_close("layer_norm dx", g.data.dx[0], cpu.data.dx[0], nullptr, kOneRounding, kNearZero);
  // The bound of dW and db: |start| + sum over the rows of |dy xhat| (|dy|).
  std::vector<float> bound_w = absolute(data.dparams[0]), bound_b = absolute(data.dparams[1]);
  const std::vector<float> saved = saved_floats(cpu.data, 2 * rows);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < size_t(d); ++i) {
      const double xhat = (double(data.x[0][r * size_t(d) + i]) - saved[2 * r]) * saved[2 * r + 1];
      const double g_i = data.dy[r * size_t(d) + i];
      bound_w[i] += float(std::fabs(g_i * xhat));
      bound_b[i] += float(std::fabs(g_i));
    }
  const double rel = double(rows + 4) * std::ldexp(1.0, -24);
  expect_close("layer_norm dW (accumulated)", g.data.dparams[0], cpu.data.dparams[0], &bound_w, rel, 0.0);
  expect_close("layer_norm db (accumulated)", g.data.dparams[1], cpu.data.dparams[1], &bound_b, rel, 0.0);

  // The same bits on a second run; and the gradients asked for alone.
  GpuRunner again(gpu, s, data);
  again.forward();
  again.to_host();
  expect_doubles_bitwise("layer_norm saved, second run", again.data.saved, forward_saved);
  again.data.saved = cpu.data.saved;
  again.to_device();
  again.backward();
  again.to_host();
  expect_same_bits("layer_norm, second run:", again.data, g.data);
  GpuRunner part(gpu, s, data);
  part.data.saved = cpu.data.saved;
  part.to_device();
  part.want_dx = {false};
  part.want_dparams = {false, true};
  part.backward();
  part.to_host();
  expect_bitwise("layer_norm dx not asked for: untouched", part.data.dx[0], data.dx[0]);
  expect_bitwise("layer_norm dW not asked for: untouched", part.data.dparams[0], data.dparams[0]);
  expect_bitwise("layer_norm db alone", part.data.dparams[1], g.data.dparams[1]);
}

void test_gpu_layer_norm(void **) {
  check_layer_norm(7, {64}, 0.0f, 500);
  check_layer_norm(3, {5, 300}, 3.0f, 510);      // rank 2: a sequence of 5 tokens; an offset (two passes)
  check_layer_norm(2, {3, 4, 1000}, 0.0f, 520);  // rank 3, rows wider than a block
  check_layer_norm(5, {1}, 0.0f, 530);           // d = 1: var 0, xhat 0
  check_layer_norm(4, {2, 4096}, 0.0f, 540);     // 2^20 / d limits the chunks of dW
  check_layer_norm(130, {8}, 0.5f, 550);         // several chunks of rows
  check_layer_norm(300, {64, 16}, 0.0f, 560);    // 19200 rows: the most chunks (256)
}

// ---- batch_norm
// -------------------------------------------------------------------------------------------------

struct BnCase {
  Dims dims;                    // one sample's: [c] or [c, h, w]
  std::vector<int64_t> slices;  // the replicas' samples
  bool sync;                    // sync_statistics
  uint64_t seed;
  double statistics_momentum = 0;  // the running statistics' weight of this batch (0: reals' 0.1)
};

Spec bn_spec(const Dims &dims, int64_t n, double statistics_momentum = 0) {
  const int64_t c = dims[0];
  Spec s{"batch_norm",
         n,
         {},
         {1e-5, 0.1},
         {dims},
         dims,
         {{c}, {c}},
         {{c}, {c}},
         size_t(2 * c + 1) * sizeof(double),
         size_t(2 * (2 * c + 1))};
  s.statistics_momentum = statistics_momentum;
  return s;
}

// The executor's training pass over the replicas of one batch (src/graph/network.cpp, run_phased): forward
// STATISTICS; the first set copied to the second and summed over every replica; forward APPLY; backward
// STATISTICS; with sync the first set summed over every replica; backward APPLY. Keeps each replica's
// statistics as its STATISTICS phases wrote them.
struct BnStatistics {
  std::vector<double> forward, backward;
};
std::vector<BnStatistics> bn_training_pass(const std::vector<Runner *> &replicas, size_t c, bool sync) {
  const size_t stride = 2 * c + 1;
  std::vector<BnStatistics> kept(replicas.size());
  for (Runner *r : replicas) r->forward(DPT_OP_PHASE_STATISTICS, 1, sync);
  std::vector<double> sums(stride, 0.0);
  for (size_t k = 0; k < replicas.size(); ++k) {
    replicas[k]->to_host();
    const std::vector<double> &st = replicas[k]->data.statistics;
    kept[k].forward.assign(st.begin(), st.begin() + long(stride));
    for (size_t i = 0; i < stride; ++i) sums[i] += st[i];
  }
  for (Runner *r : replicas) {
    std::copy(sums.begin(), sums.end(), r->data.statistics.begin() + long(stride));
    r->to_device();
    r->forward(DPT_OP_PHASE_APPLY, 1, sync);
  }
  for (Runner *r : replicas) r->backward(DPT_OP_PHASE_STATISTICS, sync);
  std::fill(sums.begin(), sums.end(), 0.0);
  for (size_t k = 0; k < replicas.size(); ++k) {
    replicas[k]->to_host();
    const std::vector<double> &st = replicas[k]->data.statistics;
    kept[k].backward.assign(st.begin(), st.begin() + long(stride));
    for (size_t i = 0; i < stride; ++i) sums[i] += st[i];
  }
  if (sync)
    for (Runner *r : replicas) {
      std::copy(sums.begin(), sums.end(), r->data.statistics.begin());
      r->to_device();
    }
  for (Runner *r : replicas) {
    r->backward(DPT_OP_PHASE_APPLY, sync);
    r->to_host();
  }
  return kept;
}

// The scales of one replica's statistics (the sums of the magnitudes of their terms, count exact) and of
// its parameter gradients (|start| + the sums of magnitudes), from the CPU's saved mean and 1/sqrt(var +
// eps).
struct BnScales {
  std::vector<double> forward, backward;
  std::vector<float> dw, db;
};
BnScales bn_scales(const Data &start, const Data &cpu, size_t c, size_t pixels, size_t n) {
  BnScales s{std::vector<double>(2 * c + 1, 0.0), std::vector<double>(2 * c + 1, 0.0),
             absolute(start.dparams[0]), absolute(start.dparams[1])};
  for (size_t ch = 0; ch < c; ++ch) {
    const double mean = cpu.saved[ch], inv_std = cpu.saved[c + ch];
    double a = 0.0, b = 0.0;
    for (size_t i = 0; i < n; ++i)
      for (size_t p = 0; p < pixels; ++p) {
        const size_t at = (i * c + ch) * pixels + p;
        const double x = start.x[0][at], g = start.dy[at];
        s.forward[ch] += std::fabs(x);
        s.forward[c + ch] += x * x;
        a += std::fabs(g);
        b += std::fabs(g * (x - mean) * inv_std);
      }
    s.backward[ch] = a;
    s.backward[c + ch] = b;
    s.dw[ch] += float(b);
    s.db[ch] += float(a);
  }
  return s;
}

// Scales of saved: the mean's is the largest |x| (an upper bound of the mean magnitude), 1/sqrt(var + eps)'s
// itself, the count exact.
std::vector<double> bn_saved_scale(const Data &cpu, size_t c, double largest) {
  std::vector<double> s(2 * c + 1, 0.0);
  for (size_t ch = 0; ch < c; ++ch) {
    s[ch] = largest;
    s[c + ch] = std::fabs(cpu.saved[c + ch]);
  }
  return s;
}

void check_batch_norm(const BnCase &k) {
  const size_t c = size_t(k.dims[0]), pixels = elements(k.dims) / c;
  int64_t total = 0;
  std::string slices;
  for (const int64_t n : k.slices) {
    total += n;
    slices += (slices.empty() ? "" : " + ") + std::to_string(n);
  }
  print_message("batch_norm %zu channels of %zu pixels, samples %s, %s statistics\n", c, pixels,
                slices.c_str(), k.sync ? "synchronised" : "local");
  // One batch: x (offset 0.5: a mean that is not 0), dy; the same parameters, gradient starts and running
  // statistics on every replica.
  const Spec whole = bn_spec(k.dims, total, k.statistics_momentum);
  Data batch = make_data(whole, k.seed);
  for (float &x : batch.x[0]) x += 0.5f;
  batch.buffers[0] = uniform(c, k.seed + 30, -0.5f, 0.5f);
  batch.buffers[1] = uniform(c, k.seed + 31, 0.5f, 1.5f);
  const size_t sample = elements(k.dims);
  std::vector<Spec> specs;
  std::vector<Data> starts;
  size_t first = 0;
  for (const int64_t n : k.slices) {
    specs.push_back(bn_spec(k.dims, n, k.statistics_momentum));
    Data d = make_data(specs.back(), k.seed);
    d.x[0].assign(batch.x[0].begin() + long(first * sample),
                  batch.x[0].begin() + long((first + size_t(n)) * sample));
    d.dy.assign(batch.dy.begin() + long(first * sample),
                batch.dy.begin() + long((first + size_t(n)) * sample));
    d.params = batch.params;
    d.dparams = batch.dparams;
    d.buffers = batch.buffers;
    starts.push_back(d);
    first += size_t(n);
  }

  std::vector<std::unique_ptr<Runner>> cpu, gpu_runs, again;
  Gpu gpu;
  for (size_t r = 0; r < specs.size(); ++r) {
    cpu.push_back(std::make_unique<CpuRunner>(specs[r], starts[r]));
    gpu_runs.push_back(std::make_unique<GpuRunner>(gpu, specs[r], starts[r]));
    again.push_back(std::make_unique<GpuRunner>(gpu, specs[r], starts[r]));
  }
  auto raw = [](std::vector<std::unique_ptr<Runner>> &v) {
    std::vector<Runner *> p;
    for (std::unique_ptr<Runner> &r : v) p.push_back(r.get());
    return p;
  };
  const std::vector<BnStatistics> cpu_stats = bn_training_pass(raw(cpu), c, k.sync);
  const std::vector<BnStatistics> gpu_stats = bn_training_pass(raw(gpu_runs), c, k.sync);
  const std::vector<BnStatistics> again_stats = bn_training_pass(raw(again), c, k.sync);

  for (size_t r = 0; r < specs.size(); ++r) {
    const Data &want = cpu[r]->data, &got = gpu_runs[r]->data;
    const std::string name = "batch_norm replica " + std::to_string(r) + " ";
    const BnScales scales = bn_scales(starts[r], want, c, pixels, size_t(specs[r].n));
    expect_doubles((name + "forward statistics").c_str(), gpu_stats[r].forward, cpu_stats[r].forward,
                   scales.forward, 1e-11);
    expect_doubles((name + "saved (mean, 1/sqrt(var + eps), N)").c_str(), got.saved, want.saved,
                   bn_saved_scale(want, c, 1.5), 1e-10);
    expect_close((name + "y").c_str(), got.y, want.y, nullptr, kOneRounding, kNearZero);
    expect_close((name + "running mean").c_str(), got.buffers[0], want.buffers[0], nullptr, kOneRounding,
                 1e-12);
    expect_close((name + "running var").c_str(), got.buffers[1], want.buffers[1], nullptr, kOneRounding,
                 1e-12);
    expect_doubles((name + "backward statistics").c_str(), gpu_stats[r].backward, cpu_stats[r].backward,
                   scales.backward, 1e-11);
    expect_close((name + "dx").c_str(), got.dx[0], want.dx[0], nullptr, kOneRounding, kNearZero);
    expect_close((name + "dW (accumulated)").c_str(), got.dparams[0], want.dparams[0], &scales.dw, 3e-7, 0.0);
    expect_close((name + "db (accumulated)").c_str(), got.dparams[1], want.dparams[1], &scales.db, 3e-7, 0.0);
    // Every replica holds the same running statistics; a second run has the same bits.
    expect_bitwise((name + "running mean = replica 0's").c_str(), got.buffers[0],
                   gpu_runs[0]->data.buffers[0]);
    expect_bitwise((name + "running var = replica 0's").c_str(), got.buffers[1],
                   gpu_runs[0]->data.buffers[1]);
    expect_same_bits(name + "second run:", again[r]->data, got);
    expect_doubles_bitwise((name + "forward statistics, second run").c_str(), again_stats[r].forward,
                           gpu_stats[r].forward);
    expect_doubles_bitwise((name + "backward statistics, second run").c_str(), again_stats[r].backward,
                           gpu_stats[r].backward);
  }
}

void test_gpu_batch_norm(void **) {
  check_batch_norm({{5, 7, 6}, {8}, false, 600});
  check_batch_norm({{5, 7, 6}, {8}, true, 610});
  check_batch_norm({{12}, {37}, false, 620});  // after a dense layer: [c], one pixel
  check_batch_norm({{3, 16, 16}, {2}, false, 630});
}

// Replicas of one batch, one of them empty: local statistics, and the global batch's (sync). Either way the
// running statistics follow the global batch, the same on every replica.
void test_gpu_batch_norm_replicas(void **) {
  check_batch_norm({{4, 5, 5}, {5, 0, 3}, false, 700});
  check_batch_norm({{4, 5, 5}, {5, 0, 3}, true, 710});
  check_batch_norm({{6}, {1, 9}, true, 720});
  // A recomputation's batch (dpt_op_call::statistics_momentum in place of the op's momentum): the third of
  // a plain average, and the first (weight 1: the batch's statistics replace the running ones).
  check_batch_norm({{4, 5, 5}, {5, 0, 3}, true, 730, 1.0 / 3.0});
  check_batch_norm({{6}, {7}, false, 740, 1.0});
}

// A lone replica of no samples still runs both phases: its statistics are zeros, the count 0, so the running
// statistics stay (no global batch), and the gradients get + 0.
void test_gpu_batch_norm_no_samples(void **) {
  check_batch_norm({{3, 2, 2}, {0}, false, 800});
  check_batch_norm({{3, 2, 2}, {0}, true, 810});
}

// Evaluation: one call, phase 0 (or APPLY with training 0, as the CPU kernel reads it), normalising with the
// running statistics: the same expressions on both sides, the same bits.
void test_gpu_batch_norm_evaluation(void **) {
  for (const int32_t phase : {int32_t(DPT_OP_PHASE_SINGLE), int32_t(DPT_OP_PHASE_APPLY)}) {
    print_message("batch_norm evaluation, phase %d\n", int(phase));
    const Spec s = bn_spec({3, 4, 4}, 6);
    Data d = make_data(s, 900);
    d.buffers[0] = uniform(3, 901, -0.5f, 0.5f);
    d.buffers[1] = uniform(3, 902, 0.1f, 2.0f);
    CpuRunner cpu(s, d);
    cpu.forward(phase, 0, 0);
    Gpu gpu;
    GpuRunner g(gpu, s, d);
    g.forward(phase, 0, 0);
    g.to_host();
    expect_bitwise("batch_norm evaluation y", g.data.y, cpu.data.y);
    expect_bitwise("batch_norm evaluation: running mean untouched", g.data.buffers[0], d.buffers[0]);
    expect_bitwise("batch_norm evaluation: running var untouched", g.data.buffers[1], d.buffers[1]);
  }
}

// A batch whose statistics are not finite (an infinite x in channel 1): that channel's running statistics
// stay as they were (a discarded step keeps them), the others follow the batch.
void test_gpu_batch_norm_not_finite(void **) {
  const size_t c = 4;
  const Spec s = bn_spec({int64_t(c), 3, 3}, 5);
  Data d = make_data(s, 950);
  d.buffers[0] = uniform(c, 951, -0.5f, 0.5f);
  d.buffers[1] = uniform(c, 952, 0.5f, 1.5f);
  d.x[0][(2 * c + 1) * 9 + 4] = INFINITY;  // sample 2, channel 1
  Gpu gpu;
  CpuRunner cpu(s, d);
  GpuRunner g(gpu, s, d);
  for (Runner *r : {static_cast<Runner *>(&cpu), static_cast<Runner *>(&g)}) {
    r->forward(DPT_OP_PHASE_STATISTICS, 1, 0);
    r->to_host();
    std::copy(r->data.statistics.begin(), r->data.statistics.begin() + long(2 * c + 1),
              r->data.statistics.begin() + long(2 * c + 1));
    r->to_device();
    r->forward(DPT_OP_PHASE_APPLY, 1, 0);
    r->to_host();
  }
  for (int b = 0; b < 2; ++b) {
    const char *name = b == 0 ? "running mean" : "running var";
    assert_true(std::memcmp(&g.data.buffers[b][1], &d.buffers[b][1], sizeof(float)) == 0);
    assert_true(std::memcmp(&cpu.data.buffers[b][1], &d.buffers[b][1], sizeof(float)) == 0);
    expect_close((std::string("batch_norm, channel 1 not finite: ") + name).c_str(), g.data.buffers[b],
                 cpu.data.buffers[b], nullptr, kOneRounding, 1e-12);
  }
}

// ---- every new op
// -----------------------------------------------------------------------------------------------

// Zero samples and no data: a no-op (batch_norm's phases: test_gpu_batch_norm_no_samples).
void test_gpu_zero_samples(void **) {
  const Spec specs[] = {
      {"add", 0, {}, {}, {{5}, {5}}, {5}, {}, {}},
      {"concat", 0, {}, {}, {{2, 3}, {1, 3}}, {3, 3}, {}, {}},
      {"global_avg_pool", 0, {}, {}, {{3, 4, 4}}, {3}, {}, {}},
      {"gelu", 0, {0}, {}, {{5}}, {5}, {}, {}},
      {"gelu", 0, {1}, {}, {{5}}, {5}, {}, {}},
      {"layer_norm", 0, {}, {1e-5}, {{2, 8}}, {2, 8}, {{8}, {8}}, {}},
      bn_spec({3, 2, 2}, 0),
  };
  Gpu gpu;
  for (const Spec &s : specs) {
    dpt_op_call c = cuda_test::op_call(s.op, 0, s.ints);
    for (size_t i = 0; i < s.reals.size(); ++i) c.reals[i] = s.reals[i];
    c.input_count = int32_t(s.in.size());
    for (size_t i = 0; i < s.in.size(); ++i) c.inputs[i] = cuda_test::tensor(nullptr, s.in[i]);
    c.output = cuda_test::tensor(nullptr, s.out);
    c.param_count = int32_t(s.params.size());
    for (size_t k = 0; k < s.params.size(); ++k) c.params[k] = cuda_test::tensor(nullptr, s.params[k]);
    c.buffer_count = int32_t(s.buffers.size());
    for (size_t k = 0; k < s.buffers.size(); ++k) c.buffers[k] = cuda_test::tensor(nullptr, s.buffers[k]);
    c.training = 0;  // batch_norm: the evaluation phase, which has nothing to do without samples
    const std::string name = s.op;
    check(gpu.api().op_forward(gpu.ctx(), &c, gpu.error, sizeof gpu.error), (name + " forward, n 0").c_str(),
          gpu.error);
    if (std::strcmp(s.op, "batch_norm") != 0)
      check(gpu.api().op_backward(gpu.ctx(), &c, gpu.error, sizeof gpu.error),
            (name + " backward, n 0").c_str(), gpu.error);
  }
  gpu.sync();
}

// Calls that break op_call.h's rules are refused, naming the device and the call.
void test_gpu_bad_calls(void **) {
  Gpu gpu;
  auto refused = [&](dpt_op_call c, bool forward, const char *what) {
    const int rc =
        (forward ? gpu.api().op_forward : gpu.api().op_backward)(gpu.ctx(), &c, gpu.error, sizeof gpu.error);
    print_message("%-40s -> %d: %s\n", what, rc, gpu.error);
    if (rc != DPT_BACKEND_ERROR_INVALID_ARGUMENT) fail_msg("%s returned %d: %s", what, rc, gpu.error);
    const std::string label = std::string(forward ? "op_forward(" : "op_backward(") + c.op + ")";
    if (std::strstr(gpu.error, "cuda:0") == nullptr || std::strstr(gpu.error, label.c_str()) == nullptr)
      fail_msg("%s: the message '%s' does not name cuda:0 and %s", what, gpu.error, label.c_str());
  };
  float *buffer = static_cast<float *>(gpu.alloc(4096 * sizeof(float)));
  {
    dpt_op_call c = cuda_test::op_call("add", 2, {});
    c.input_count = 2;
    c.inputs[0] = cuda_test::tensor(buffer, {4});
    c.inputs[1] = cuda_test::tensor(buffer + 64, {5});
    c.output = cuda_test::tensor(buffer + 128, {4});
    refused(c, true, "add of [4] and [5]");
  }
  {
    dpt_op_call c = cuda_test::op_call("concat", 2, {});
    c.input_count = 2;
    c.inputs[0] = cuda_test::tensor(buffer, {2, 3});
    c.inputs[1] = cuda_test::tensor(buffer + 64, {2, 4});
    c.output = cuda_test::tensor(buffer + 128, {4, 3});
    refused(c, true, "concat of [2, 3] and [2, 4]");
    c.input_count = 1;
    c.inputs[1] = dpt_tensor{};
    c.output = cuda_test::tensor(buffer + 128, {2, 3});
    refused(c, true, "concat of one input");
  }
  {
    dpt_op_call c = cuda_test::op_call("layer_norm", 2, {});
    c.reals[0] = 1e-5;
    c.inputs[0] = cuda_test::tensor(buffer, {8});
    c.output = cuda_test::tensor(buffer + 64, {8});
    c.param_count = 2;
    c.params[0] = cuda_test::tensor(buffer + 128, {9});
    c.params[1] = cuda_test::tensor(buffer + 192, {8});
    c.saved = buffer + 256;
    c.saved_bytes = 4 * sizeof(float);
    refused(c, true, "layer_norm of [8] with a weight [9]");
  }
  {
    dpt_op_call c = cuda_test::op_call("batch_norm", 2, {});
    c.reals[0] = 1e-5;
    c.reals[1] = 0.1;
    c.inputs[0] = cuda_test::tensor(buffer, {3});
    c.output = cuda_test::tensor(buffer + 64, {3});
    c.param_count = 2;
    c.params[0] = cuda_test::tensor(buffer + 128, {3});
    c.params[1] = cuda_test::tensor(buffer + 192, {3});
    c.buffer_count = 2;
    c.buffers[0] = cuda_test::tensor(buffer + 256, {3});
    c.buffers[1] = cuda_test::tensor(buffer + 320, {3});
    c.training = 1;
    c.phase = DPT_OP_PHASE_STATISTICS;
    refused(c, true, "batch_norm statistics without statistics");
  }
  gpu.sync();
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_add),
      cmocka_unit_test(test_gpu_concat),
      cmocka_unit_test(test_gpu_global_avg_pool),
      cmocka_unit_test(test_gpu_gelu),
      cmocka_unit_test(test_gpu_layer_norm),
      cmocka_unit_test(test_gpu_batch_norm),
      cmocka_unit_test(test_gpu_batch_norm_replicas),
      cmocka_unit_test(test_gpu_batch_norm_no_samples),
      cmocka_unit_test(test_gpu_batch_norm_evaluation),
      cmocka_unit_test(test_gpu_batch_norm_not_finite),
      cmocka_unit_test(test_gpu_zero_samples),
      cmocka_unit_test(test_gpu_bad_calls),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
