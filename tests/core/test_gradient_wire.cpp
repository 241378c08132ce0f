// The trainer's 16-bit gradient all-reduce (TrainerConfig::allreduce_dtype): replicas bitwise identical,
// bucketed reductions (overlapped with backward) bitwise the unbucketed one, and the K-device step within
// the wire's rounding of the 1-device step (which communicates nothing): after one SGD step the parameters'
// movement differs by at most 2u relative (u the type's unit roundoff, 2^-8 for bfloat16, 2^-11 for float16:
// each replica's summed gradient is rounded once, and the sum once). A float16 wire without loss scaling
// overflows where a slice's summed gradient passes 65504: the window is then skipped as non-finite; with
// loss scaling (fp16 precision), the scaler halves the scale instead.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
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

constexpr size_t kBatch = 24, kClasses = 10;

dpt::ModelSpec model() {
  dpt::ModelSpec m(dpt::Shape{1, 12, 12});
  m.add_conv2d(6, 3, 1, 1);
  m.add_activation(dpt::Activation::kRelu);
  m.add_pool(dpt::PoolKind::kMax, 2, 2);
  m.add_flatten();
  m.add_dense(32);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(kClasses);
  return m;
}

struct Run {
  size_t devices = 1;
  dpt::DType wire = dpt::DType::kF32;
  size_t bucket_bytes = 0;
  dpt::DType precision = dpt::DType::kF32;
};

struct Result {
  std::vector<float> start;
  std::vector<std::vector<float>> params;  // per replica
  uint64_t nonfinite = 0, overflows = 0;
};

Result train(const Run &run, size_t steps, float input_scale = 1.0f) {
  dpt::TrainerConfig c;
  c.seed = 9;
  c.allreduce_dtype = run.wire;
  c.bucket_bytes = run.bucket_bytes;
  c.matmul_dtype = run.precision;
  c.loss_scaling.enabled = run.precision == dpt::DType::kF16;
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, 0}), model(), c);
  Result r;
  r.start.resize(t.parameter_count());
  t.get_parameters(0, r.start.data());
  for (size_t s = 0; s < steps; ++s) {
    dpt_test::TestRng rng(70 + s);
    std::vector<float> x = rng.vector(kBatch * 144, -input_scale, input_scale);
    std::vector<int32_t> y(kBatch);
    for (auto &label : y) label = int32_t(rng.below(kClasses));
    t.step(x.data(), y.data(), kBatch);
  }
  for (size_t i = 0; i < t.device_count(); ++i) {
    r.params.emplace_back(t.parameter_count());
    t.get_parameters(i, r.params.back().data());
  }
  r.nonfinite = t.nonfinite_steps();
  r.overflows = t.overflow_steps();
  return r;
}

double relative_movement_error(const Result &got, const Result &want) {
  double diff = 0, moved = 0;
  for (size_t i = 0; i < got.start.size(); ++i) {
    const double d = double(got.params[0][i]) - want.params[0][i],
                 m = double(want.params[0][i]) - want.start[i];
    diff += d * d, moved += m * m;
  }
  return std::sqrt(diff / moved);
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void test_contract(void **) {
  const Result reference = train(Run{1}, 1);
  for (dpt::DType wire : {dpt::DType::kBF16, dpt::DType::kF16}) {
    const bool bf16 = wire == dpt::DType::kBF16;
    const double u = bf16 ? 1.0 / 256 : 1.0 / 2048, tolerance = 2 * u;
    for (size_t k : {2, 3, 8}) {
      const std::string what = std::string(bf16 ? "bf16" : "fp16") + " wire, K=" + std::to_string(k);
      const Result whole = train(Run{k, wire}, 1), bucketed = train(Run{k, wire, 256}, 1);
      for (size_t i = 0; i < k; ++i) {
        if (!same_bits(whole.params[i], whole.params[0]))
          fail_msg("%s: replica %zu differs from replica 0", what.c_str(), i);
        if (!same_bits(bucketed.params[i], whole.params[i]))
          fail_msg("%s: bucketed replica %zu differs from the unbucketed one", what.c_str(), i);
      }
      const double e = relative_movement_error(whole, reference);
      const double e32 = relative_movement_error(train(Run{k}, 1), reference);
      std::printf("%-20s 1 step vs 1 device: %.2e (float32 wire %.2e; tolerance 2u = %.1e)\n", what.c_str(),
                  e, e32, tolerance);
      if (!(e <= tolerance)) fail_msg("%s: %.3g above %.1e", what.c_str(), e, tolerance);
      if (!(e > e32)) fail_msg("%s: no rounding visible (%.3g vs float32's %.3g)", what.c_str(), e, e32);
    }
  }
}

// Inputs of 3e4: a slice's summed conv gradient passes 65504. The float16 wire makes it infinite and the
// window is skipped as non-finite (parameters untouched); the bfloat16 wire has float32's range and
// trains; fp16 precision's loss scaler meets the same overflow by halving its scale.
void test_fp16_wire_range(void **) {
  const Result f16 = train(Run{2, dpt::DType::kF16}, 1, 3e4f);
  assert_int_equal(f16.nonfinite, 1);
  assert_true(same_bits(f16.params[0], f16.start));
  const Result b16 = train(Run{2, dpt::DType::kBF16}, 1, 3e4f);
  assert_int_equal(b16.nonfinite, 0);
  assert_false(same_bits(b16.params[0], b16.start));
  const Result scaled = train(Run{2, dpt::DType::kF16, 0, dpt::DType::kF16}, 1, 3e4f);
  assert_int_equal(scaled.nonfinite, 0);
  assert_int_equal(scaled.overflows, 1);
  assert_true(same_bits(scaled.params[0], scaled.start));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_contract),
      cmocka_unit_test(test_fp16_wire_range),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
