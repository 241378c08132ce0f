// 16-bit activation storage (TrainerConfig::activation_dtype, graph/activation_store.hpp): activations
// kept between forward and backward as bfloat16 or float16 copies, a few float32 working slots while ops
// read and write them.
//  * Memory: the activations of LeNet, ResNet-18 and gpt-mini take about half the bytes (printed, bounded);
//    a device whose memory limit the float32 activations exceed trains with 16-bit ones (to the same bits
//    as without the limit), and the float32 trainer fails with DPT_ERROR_OUT_OF_MEMORY naming the device.
//  * Bits: in an MLP every stored activation is read by backward only as a matrix product's input (which
//    the 16-bit precision rounds anyway) or for its sign (ReLU), so 16-bit storage changes no bit of the
//    bf16 or fp16 run. A convolution and batch-norm model reads them in batch norm's backward: the step then
//    moves by about one 16-bit rounding of those activations, not more.
//  * Data parallel: the rounding is per element, the same on 1 and K devices, so the K-device step equals
//    the 1-device step as without it (1e-5 after one step), and replicas stay bitwise identical.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "core/error.hpp"
#include "graph/network.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

constexpr size_t kClasses = 4;

// Convolutions, batch norm and a residual add on 3x8x8 inputs.
dpt::ModelSpec conv_model() {
  dpt::ModelSpec m(dpt::Shape{3, 8, 8});
  const size_t a = m.add_op("relu", {m.add_batch_norm(m.add_conv2d(6, 3, 1, 1, false))});
  m.add_conv2d(6, 3, 1, 1, false);
  const size_t b = m.add_batch_norm(m.output_tensor());
  m.add_op("relu", {m.add_op("add", {a, b})});
  m.add_pool(dpt::PoolKind::kMax, 2, 2);
  m.add_dense(kClasses);
  return m;
}

dpt::ModelSpec mlp() {
  dpt::ModelSpec m(dpt::Shape{3, 8, 8});
  m.add_dense(40);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(24);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(kClasses);
  return m;
}

struct Run {
  dpt::DType precision = dpt::DType::kBF16, activations = dpt::DType::kF32;
  size_t devices = 1;
  uint64_t memory_limit = 0;
};

struct Result {
  std::vector<std::vector<float>> params;  // per replica
  uint64_t device_bytes = 0;               // device 0's arena in use after the steps
};

Result train(const dpt::ModelSpec &spec, const Run &run, size_t steps) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, run.memory_limit});
  dpt::TrainerConfig c;
  c.seed = 5;
  c.matmul_dtype = run.precision;
  c.activation_dtype = run.activations;
  c.loss_scaling.enabled = run.precision == dpt::DType::kF16;
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  dpt::Trainer t(context, spec, c);
  for (size_t s = 0; s < steps; ++s) {
    dpt_test::TestRng rng(70 + s);
    const size_t n = 12;
    std::vector<float> x = rng.vector(n * spec.input().size(), -1.0f, 2.0f);
    std::vector<int32_t> y(n);
    for (auto &label : y) label = int32_t(rng.below(kClasses));
    t.step(x.data(), y.data(), n);
  }
  Result r;
  for (size_t i = 0; i < t.device_count(); ++i) {
    r.params.emplace_back(t.parameter_count());
    t.get_parameters(i, r.params.back().data());
  }
  r.device_bytes = context->device(0).arena().in_use();
  return r;
}

double relative_error(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), norm += double(b[i]) * b[i];
  return std::sqrt(diff / norm);
}

const char *name(dpt::DType t) {
  return t == dpt::DType::kBF16 ? "bf16" : t == dpt::DType::kF16 ? "fp16" : "fp32";
}

// Bytes of activations per sample, float32 against 16-bit storage, for the built-in models.
void test_activation_bytes(void **) {
  struct Case {
    const char *model;
    double most;  // the largest ratio accepted
  };
  for (const Case &k : {Case{"lenet", 1.0}, Case{"resnet18", 0.60}, Case{"gpt-mini", 0.63}}) {
    const dpt::ModelSpec spec = dpt::ModelSpec::builtin(k.model);
    dpt::MemoryArena arena("cpu:0", 0);
    dpt::CpuKernels kernels(arena);
    const dpt::Network fp32(spec, kernels, dpt::DType::kBF16, dpt::DType::kF32);
    for (const dpt::DType storage : {dpt::DType::kBF16, dpt::DType::kF16}) {
      const dpt::Network half(spec, kernels, dpt::DType::kBF16, storage);
      const double a = double(fp32.activation_bytes_per_sample()),
                   b = double(half.activation_bytes_per_sample());
      std::printf(
          "%-9s activations per sample: float32 %9.0f bytes, %s %9.0f bytes (%.3f); all of a pass: "
          "%9zu and %9zu bytes\n",
          k.model, a, name(storage), b, b / a, fp32.bytes_per_sample(), half.bytes_per_sample());
      if (!(b / a <= k.most))
        fail_msg("%s: %s activations are %.3f of float32's", k.model, name(storage), b / a);
      assert_true(half.bytes_per_sample() <= fp32.bytes_per_sample());
    }
  }
}

// What reserve() allocates is what bytes_per_sample() says, in both storages.
void test_allocations_match(void **) {
  const dpt::ModelSpec spec = conv_model();
  for (const dpt::DType storage : {dpt::DType::kF32, dpt::DType::kBF16}) {
    dpt::MemoryArena arena("cpu:0", 0);
    dpt::CpuKernels kernels(arena);
    dpt::Network network(spec, kernels, dpt::DType::kBF16, storage);
    const uint64_t before = arena.in_use();
    network.reserve(64);
    const uint64_t grown = arena.in_use() - before;
    network.reserve(128);
    const uint64_t per_sample = (arena.in_use() - before - grown) / 64;
    std::printf("%s storage: %llu bytes per sample allocated, bytes_per_sample() %zu\n", name(storage),
                (unsigned long long)per_sample, network.bytes_per_sample());
    // (64-byte alignment of each buffer: a few bytes per sample at most)
    assert_true(per_sample >= network.bytes_per_sample() && per_sample <= network.bytes_per_sample() + 64);
  }
}

// MLP: the stored activations are only ever read as products' inputs or for their sign: the same bits.
void test_mlp_same_bits(void **) {
  for (const dpt::DType precision : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const Result plain = train(mlp(), Run{precision, dpt::DType::kF32}, 3);
    const Result stored = train(mlp(), Run{precision, precision}, 3);
    std::printf("MLP %s, 3 steps: 16-bit activations %s\n", name(precision),
                plain.params[0] == stored.params[0] ? "give the same bits" : "DIFFER");
    assert_true(plain.params[0] == stored.params[0]);
  }
}

// Batch norm's backward reads its stored input: the step moves, by about a 16-bit rounding.
void test_conv_model_moves_by_a_rounding(void **) {
  for (const dpt::DType precision : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const Result plain = train(conv_model(), Run{precision, dpt::DType::kF32}, 1);
    const Result stored = train(conv_model(), Run{precision, precision}, 1);
    const Result fp32 = train(conv_model(), Run{dpt::DType::kF32, dpt::DType::kF32}, 1);
    const double moved = relative_error(stored.params[0], plain.params[0]);
    const double precision_effect = relative_error(plain.params[0], fp32.params[0]);
    const double u = precision == dpt::DType::kBF16 ? 1.0 / 256 : 1.0 / 2048;
    std::printf(
        "conv model %s, 1 step: 16-bit activations move the parameters by %.2e (the 16-bit products "
        "against float32: %.2e; u %.1e)\n",
        name(precision), moved, precision_effect, u);
    assert_true(moved > 0.0);  // batch norm does read them
    assert_true(moved <= u);
  }
}

void test_k_devices_equal_one(void **) {
  for (const dpt::DType precision : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const Result one = train(conv_model(), Run{precision, precision, 1}, 1);
    for (size_t k : {2, 3}) {
      const Result r = train(conv_model(), Run{precision, precision, k}, 1);
      for (size_t i = 1; i < k; ++i) assert_true(r.params[i] == r.params[0]);
      const double e = relative_error(r.params[0], one.params[0]);
      std::printf("%s activations, K=%zu against 1 device after 1 step: %.2e (tolerance 1e-5)\n",
                  name(precision), k, e);
      assert_true(e <= 1e-5);
    }
  }
}

// A memory limit between the two footprints: float32 activations do not fit, 16-bit ones do. (The conv
// model, whose activations outweigh its parameters as ResNet-18's do: a ResNet-18 step took 5 minutes under
// ASan, most of the sanitizer run.)
void test_memory_limit(void **) {
  const dpt::ModelSpec spec = conv_model();
  const Result fp32 = train(spec, Run{dpt::DType::kBF16, dpt::DType::kF32}, 1);
  const Result half = train(spec, Run{dpt::DType::kBF16, dpt::DType::kBF16}, 1);
  const uint64_t limit = (fp32.device_bytes + half.device_bytes) / 2;
  std::printf(
      "conv model, batch 12: device bytes in use with float32 activations %llu, bf16 %llu; limit %llu\n",
      (unsigned long long)fp32.device_bytes, (unsigned long long)half.device_bytes,
      (unsigned long long)limit);
  const std::string message = dpt_test::expect_error(
      [&] {
        train(spec, Run{dpt::DType::kBF16, dpt::DType::kF32, 1, limit}, 1);
      },
      DPT_ERROR_OUT_OF_MEMORY, "float32 activations under the limit");
  std::printf("float32 activations: %s\n", message.c_str());
  assert_non_null(std::strstr(message.c_str(), "cpu:0"));
  const Result limited = train(spec, Run{dpt::DType::kBF16, dpt::DType::kBF16, 1, limit}, 1);
  assert_true(limited.params[0] == half.params[0]);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_activation_bytes),    cmocka_unit_test(test_allocations_match),
      cmocka_unit_test(test_mlp_same_bits),       cmocka_unit_test(test_conv_model_moves_by_a_rounding),
      cmocka_unit_test(test_k_devices_equal_one), cmocka_unit_test(test_memory_limit),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
