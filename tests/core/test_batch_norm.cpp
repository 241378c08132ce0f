// BatchNorm under data parallelism. With sync statistics, the K-device step equals the 1-device full-batch
// step (relative error <= 1e-5 after 1 and 10 steps) for K in {2, 3, 4, 8}, even, weighted and ragged
// splits, slices left empty, and accumulation (statistics per micro-batch, as one device computes them);
// every replica holds bitwise the same parameters and running statistics. With local statistics, the
// normalisation of each slice uses that slice only, so the step differs from the 1-device step, while the
// running statistics still follow the global batch: after one step the first layer's equal the 1-device
// run's (later layers see inputs normalised per slice), and they are identical on every replica. A slice with
// a NaN discards the window on every device without a hang and leaves the running statistics as they were;
// evaluation uses the running statistics; checkpoints carry them.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
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

#include "batch_norm_model.hpp"
#include "core_test_util.hpp"

namespace {

constexpr double kTolerance = 1e-5;
constexpr size_t kClasses = 3;

dpt::ModelSpec model(size_t width) {
  return dpt_test::batch_norm_model(width, kClasses);
}

struct Run {
  size_t devices = 1;
  bool weighted = false;
  size_t accumulation = 1;
  bool sync = true;
  dpt::DType precision = dpt::DType::kF32;  // of the matrix products' inputs
  size_t width = 4;                         // the residual block's channels
};

std::shared_ptr<dpt::Context> context(size_t devices) {
  return std::make_shared<dpt::Context>(dpt::ContextConfig{devices, 0});
}

std::unique_ptr<dpt::Trainer> make_trainer(const Run &run) {
  dpt::TrainerConfig c;
  c.seed = 11;
  c.init = dpt::InitScheme::kNormal;
  c.init_std = 0.3f;
  c.accumulation_steps = run.accumulation;
  c.sync_batch_norm = run.sync;
  c.matmul_dtype = run.precision;
  c.loss_scaling.enabled = run.precision == dpt::DType::kF16;  // GradScaler's defaults
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  if (run.weighted) {
    c.split = dpt::SplitPolicy::kWeighted;
    // Skewed: with small batches the first devices get nothing.
    for (size_t i = 0; i < run.devices; ++i) c.weights.push_back(double(1 + 4 * i * i));
  }
  return std::make_unique<dpt::Trainer>(context(run.devices), model(run.width), c);
}

// Ragged batch sizes, some smaller than the device count (empty slices).
size_t batch_size(size_t step) {
  static const size_t sizes[] = {13, 7, 3, 16, 5};
  return sizes[step % 5];
}

void batch(size_t step, std::vector<float> &x, std::vector<int32_t> &y) {
  const size_t n = batch_size(step);
  dpt_test::TestRng rng(300 + step);
  x = rng.vector(n * 72, -1.0f, 2.0f);  // a mean away from 0, so that the statistics matter
  y.resize(n);
  for (auto &label : y) label = int32_t(rng.below(kClasses));
}

struct Result {
  std::vector<std::vector<float>> params, buffers;  // per replica
};

Result train(const Run &run, size_t steps) {
  auto t = make_trainer(run);
  std::vector<float> x;
  std::vector<int32_t> y;
  for (size_t s = 0; s < steps; ++s) {
    batch(s, x, y);
    t->step(x.data(), y.data(), y.size());
  }
  Result r;
  for (size_t i = 0; i < t->device_count(); ++i) {
    r.params.emplace_back(t->parameter_count());
    r.buffers.emplace_back(t->spec().buffer_count());
    t->get_parameters(i, r.params.back().data());
    t->get_buffers(i, r.buffers.back().data());
  }
  return r;
}

double relative_error(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), norm += double(b[i]) * b[i];
  return std::sqrt(diff / norm);
}

void expect_replicas_identical(const Result &r, const std::string &what) {
  for (size_t i = 1; i < r.params.size(); ++i) {
    if (std::memcmp(r.params[i].data(), r.params[0].data(), r.params[0].size() * sizeof(float)) != 0)
      fail_msg("%s: replica %zu's parameters differ from replica 0's", what.c_str(), i);
    if (std::memcmp(r.buffers[i].data(), r.buffers[0].data(), r.buffers[0].size() * sizeof(float)) != 0)
      fail_msg("%s: replica %zu's running statistics differ from replica 0's", what.c_str(), i);
  }
}

// bf16 (convolutions and dense layers on bfloat16 inputs): as in float32 after one step (the same inputs on
// 1 and K devices, only the order of float32 sums differs); after 10, to bfloat16's resolution, one ulp
// (2^-8): the derivation is test_transformer_equivalence's. fp16 (with loss scaling) likewise, to one
// float16 ulp (2^-11).
void sync_equals_one_device(dpt::DType precision, size_t width = 4) {
  const bool bf16 = precision == dpt::DType::kBF16, fp16 = precision == dpt::DType::kF16;
  for (size_t accumulation : {1, 2}) {
    for (size_t steps : {1, 10}) {
      const Result reference =
          train(Run{1, false, accumulation, true, precision, width}, steps * accumulation);
      const double tolerance = steps == 1 ? kTolerance : bf16 ? 1.0 / 256 : fp16 ? 1.0 / 2048 : kTolerance;
      for (size_t k : {2, 3, 4, 8})
        for (bool weighted : {false, true}) {
          const Result r =
              train(Run{k, weighted, accumulation, true, precision, width}, steps * accumulation);
          const std::string what = std::string(bf16   ? "bf16 "
                                               : fp16 ? "fp16 "
                                                      : "") +
                                   (width != 4 ? "width " + std::to_string(width) + " " : "") +
                                   "K=" + std::to_string(k) + (weighted ? " weighted" : " even") +
                                   " accumulation " + std::to_string(accumulation) + ", " +
                                   std::to_string(steps) + " steps";
          expect_replicas_identical(r, what);
          const double ep = relative_error(r.params[0], reference.params[0]);
          const double eb = relative_error(r.buffers[0], reference.buffers[0]);
          std::printf("%-45s parameters %.2e, running statistics %.2e (tolerance %.1e)\n", what.c_str(), ep,
                      eb, tolerance);
          if (!(ep <= tolerance) || !(eb <= tolerance))
            fail_msg("%s: relative error %.3g / %.3g above %.1e", what.c_str(), ep, eb, tolerance);
        }
    }
  }
}

void test_sync_equals_one_device(void **) {
  sync_equals_one_device(dpt::DType::kF32);
}

// Width 16: the block's second convolution on the Winograd path, whose grouping of tiles depends on the
// slice.
void test_sync_equals_one_device_winograd(void **) {
  sync_equals_one_device(dpt::DType::kF32, 16);
}

void test_sync_equals_one_device_bf16(void **) {
  sync_equals_one_device(dpt::DType::kBF16);
}

void test_sync_equals_one_device_fp16(void **) {
  sync_equals_one_device(dpt::DType::kF16);
}

// Local statistics: what differs (the step) and what does not (the running statistics, and their identity
// across replicas).
void test_local_statistics(void **) {
  const Result reference = train(Run{1, false, 1, true}, 1);
  for (size_t k : {2, 4}) {
    const Result local = train(Run{k, false, 1, false}, 1);
    expect_replicas_identical(local, "local K=" + std::to_string(k));
    const double ep = relative_error(local.params[0], reference.params[0]);
    // bn1 (the first 8 floats: running mean and variance of 4 channels) sees the same inputs as on one
    // device, so its running statistics (of the global batch) are the 1-device ones; the layers after it
    // see inputs normalised per slice, so theirs differ.
    const std::vector<float> first(local.buffers[0].begin(), local.buffers[0].begin() + 8),
        first_reference(reference.buffers[0].begin(), reference.buffers[0].begin() + 8);
    const double eb = relative_error(first, first_reference);
    const double eb_all = relative_error(local.buffers[0], reference.buffers[0]);
    std::printf(
        "local K=%zu after 1 step: parameters differ by %.2e, bn1's running statistics by %.2e, all "
        "by %.2e\n",
        k, ep, eb, eb_all);
    assert_true(ep > 1e-4);         // normalised per slice: another gradient
    assert_true(eb <= kTolerance);  // the running statistics follow the global batch
    assert_true(eb_all > 1e-5);
    const Result later = train(Run{k, false, 1, false}, 6);
    expect_replicas_identical(later, "local K=" + std::to_string(k) + ", 6 steps");
  }
  // One device: local and sync are the same computation, bit for bit.
  const Result one_local = train(Run{1, false, 1, false}, 4), one_sync = train(Run{1, false, 1, true}, 4);
  assert_memory_equal(one_local.params[0].data(), one_sync.params[0].data(), one_sync.params[0].size() * 4);
}

// A NaN in one device's slice: every device still runs the pass (its peers wait for its statistics), the
// window is discarded everywhere, and the running statistics stay finite and as they were.
void test_nonfinite_slice_discards_everywhere(void **) {
  auto t = make_trainer(Run{4, false, 1, true});
  std::vector<float> x;
  std::vector<int32_t> y;
  batch(0, x, y);
  t->step(x.data(), y.data(), y.size());
  std::vector<float> before(t->spec().buffer_count()), params_before(t->parameter_count());
  t->get_buffers(0, before.data());
  t->get_parameters(0, params_before.data());
  batch(1, x, y);
  x[x.size() - 3] = NAN;  // in the last device's slice
  const dpt::StepStats s = t->step(x.data(), y.data(), y.size());
  assert_true(s.skipped_nonfinite);
  for (size_t r = 0; r < t->device_count(); ++r) {
    std::vector<float> after(before.size()), params(params_before.size());
    t->get_buffers(r, after.data());
    t->get_parameters(r, params.data());
    assert_memory_equal(after.data(), before.data(), before.size() * sizeof(float));
    assert_memory_equal(params.data(), params_before.data(), params.size() * sizeof(float));
  }
  batch(2, x, y);
  assert_true(t->step(x.data(), y.data(), y.size()).applied);  // and training goes on
}

// Evaluation normalises with the running statistics (not the batch's); a checkpoint restores them.
void test_evaluation_and_checkpoint(void **) {
  auto t = make_trainer(Run{2, false, 1, true});
  std::vector<float> x;
  std::vector<int32_t> y;
  for (size_t s = 0; s < 3; ++s) batch(s, x, y), t->step(x.data(), y.data(), y.size());
  batch(3, x, y);
  const double loss = t->evaluate(x.data(), y.data(), y.size()).loss_sum;
  assert_true(std::isfinite(loss));
  // The same samples one at a time: batch statistics would differ per sample, running ones do not.
  double one_by_one = 0;
  for (size_t i = 0; i < y.size(); ++i)
    one_by_one += t->evaluate(x.data() + i * 72, y.data() + i, 1).loss_sum;
  assert_true(std::fabs(one_by_one - loss) <= 1e-5 * std::fabs(loss));

  const std::string path = "test_batch_norm.ckpt";
  dpt::save_checkpoint(*t, path);
  std::vector<float> saved(t->spec().buffer_count());
  t->get_buffers(0, saved.data());
  std::vector<float> other(saved.size(), 0.5f);
  t->set_buffers(other.data());
  assert_true(std::fabs(t->evaluate(x.data(), y.data(), y.size()).loss_sum - loss) > 1e-6);
  dpt::load_checkpoint(*t, path);
  std::vector<float> restored(saved.size());
  t->get_buffers(1, restored.data());
  assert_memory_equal(restored.data(), saved.data(), saved.size() * sizeof(float));
  assert_true(t->evaluate(x.data(), y.data(), y.size()).loss_sum == loss);
  std::remove(path.c_str());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_equals_one_device),
      cmocka_unit_test(test_sync_equals_one_device_winograd),
      cmocka_unit_test(test_sync_equals_one_device_bf16),
      cmocka_unit_test(test_sync_equals_one_device_fp16),
      cmocka_unit_test(test_local_statistics),
      cmocka_unit_test(test_nonfinite_slice_discards_everywhere),
      cmocka_unit_test(test_evaluation_and_checkpoint),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
