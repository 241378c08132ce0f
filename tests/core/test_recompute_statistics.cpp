// Recomputing batch norm's running statistics from data (dpt::recompute_statistics, the C API's
// dpt_trainer_recompute_batch_norm; PyTorch's update_bn). After a recomputation over batches 1..k every
// running mean and variance is the plain average of the k batches' own (each batch's is what a
// recomputation over that batch alone leaves), the first layer's equal to the means and unbiased variances
// computed here from the data; K devices give the 1-device statistics (sync; local: the first layer's),
// every replica bitwise the same; parameters, optimizer state and counters do not move; a pipeline averages
// its micro-batches' statistics.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "data/dataset.hpp"
#include "parallel/fit.hpp"
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

constexpr size_t kClasses = 3, kChannels = 2, kPixels = 36, kSample = kChannels * kPixels;

// Batch norm on the input itself (its statistics are the data's), then test_batch_norm's model.
dpt::ModelSpec model() {
  return dpt_test::batch_norm_model(4, kClasses, true);
}

struct Run {
  size_t devices = 1;
  bool weighted = false;
  bool sync = true;
};

std::unique_ptr<dpt::Trainer> make_trainer(const Run &run, const dpt::ModelSpec &spec = model()) {
  dpt::TrainerConfig c;
  c.seed = 5;
  c.init = dpt::InitScheme::kNormal;
  c.init_std = 0.3f;
  c.sync_batch_norm = run.sync;
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  if (run.weighted) {
    c.split = dpt::SplitPolicy::kWeighted;
    for (size_t i = 0; i < run.devices; ++i) c.weights.push_back(double(1 + 4 * i * i));  // first ones empty
  }
  return std::make_unique<dpt::Trainer>(std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, 0}),
                                        spec, c);
}

// 37 samples with a mean away from 0 and a spread per channel, so that every statistic matters.
dpt::Dataset data(size_t samples = 37) {
  dpt_test::TestRng rng(77);
  std::vector<float> x = rng.vector(samples * kSample, -1.0f, 2.0f);
  for (size_t i = 0; i < samples; ++i)
    for (size_t p = 0; p < kPixels; ++p)
      x[i * kSample + kPixels + p] = 3.0f * x[i * kSample + kPixels + p] - 4.0f;
  std::vector<int32_t> y(samples);
  for (auto &label : y) label = int32_t(rng.below(kClasses));
  return dpt::Dataset(dpt::Shape{kChannels, 6, 6}, kClasses, std::move(x), std::move(y));
}

// Three steps on the data's first batches, so that the weights and running statistics are not the initial.
void train(dpt::Trainer &t, const dpt::Dataset &d, size_t steps = 3) {
  for (size_t s = 0; s < steps; ++s) t.step(d.sample(s * 9), d.labels(s * 9), 9);
}

std::vector<float> buffers(const dpt::Trainer &t, size_t replica = 0) {
  std::vector<float> b(t.spec().buffer_count());
  t.get_buffers(replica, b.data());
  return b;
}

std::vector<float> parameters(const dpt::Trainer &t, size_t replica = 0) {
  std::vector<float> p(t.parameter_count());
  t.get_parameters(replica, p.data());
  return p;
}

void expect_replicas_identical(const dpt::Trainer &t, const std::string &what) {
  for (size_t r = 1; r < t.device_count(); ++r) {
    if (buffers(t, r) != buffers(t))
      fail_msg("%s: replica %zu's running statistics differ from replica 0's", what.c_str(), r);
    if (parameters(t, r) != parameters(t))
      fail_msg("%s: replica %zu's parameters differ from replica 0's", what.c_str(), r);
  }
}

// |got - want| <= tolerance * (|want| + 1e-3), element by element.
void expect_close(const char *what, const std::vector<float> &got, const std::vector<double> &want,
                  double tolerance) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]) / (std::fabs(want[i]) + 1e-3);
    if (!(e <= tolerance))
      fail_msg("%s: element %zu is %.9g, expected %.9g (error %.3g > %.1g)", what, i, double(got[i]), want[i],
               e, tolerance);
    worst = std::max(worst, e);
  }
  std::printf("%-58s largest relative error %.2e\n", what, worst);
}

// The running statistics after batches of `batch` samples are the average of each batch's own; the first
// layer's (buffers 0..3: bn0's running mean and variance of 2 channels) are the data's.
void expect_average_of_batches(const Run &run, size_t batch) {
  const dpt::Dataset d = data();
  auto t = make_trainer(run);
  train(*t, d);
  const std::vector<float> trained = buffers(*t), before = parameters(*t);
  std::vector<double> average(trained.size(), 0.0), data_average(2 * kChannels, 0.0);
  size_t batches = 0;
  for (size_t start = 0; start < d.size(); start += batch, ++batches) {
    const size_t n = std::min(batch, d.size() - start);
    t->recompute_statistics(d.sample(start), n, 1);  // this batch alone
    const std::vector<float> own = buffers(*t);
    for (size_t i = 0; i < own.size(); ++i) average[i] += own[i];
    for (size_t ch = 0; ch < kChannels; ++ch) {
      double sum = 0, squares = 0;
      for (size_t i = 0; i < n; ++i)
        for (size_t p = 0; p < kPixels; ++p) {
          const double x = static_cast<const float *>(d.sample(start + i))[ch * kPixels + p];
          sum += x, squares += x * x;
        }
      const double count = double(n * kPixels), mean = sum / count;
      data_average[ch] += mean;
      data_average[kChannels + ch] += (squares / count - mean * mean) * count / (count - 1);
    }
  }
  for (double &v : average) v /= double(batches);
  for (double &v : data_average) v /= double(batches);
  dpt::recompute_statistics(*t, d, batch, 0);
  const std::vector<float> got = buffers(*t);
  const std::string what = "K=" + std::to_string(run.devices) + (run.weighted ? " weighted" : " even") +
                           (run.sync ? " sync" : " local") + ", batches of " + std::to_string(batch);
  // Each step of the running average rounds to float once (a few ulps over four batches).
  expect_close((what + ": the batches' average").c_str(), got, average, 1e-6);
  expect_close((what + ": bn0, the data's").c_str(), std::vector<float>(got.begin(), got.begin() + 4),
               data_average, 1e-6);
  if (got == trained) fail_msg("%s: the running statistics did not change", what.c_str());
  expect_replicas_identical(*t, what);
  if (parameters(*t) != before) fail_msg("%s: the parameters changed", what.c_str());
}

void test_average_of_the_batches(void **) {
  expect_average_of_batches(Run{1, false, true}, 10);  // 10 + 10 + 10 + 7
  expect_average_of_batches(Run{1, false, true}, 37);  // one batch: its statistics
  expect_average_of_batches(Run{3, true, true}, 10);   // slices left empty
  expect_average_of_batches(Run{4, false, false}, 8);  // local: the running statistics are the global ones
}

// Sync: the K-device statistics are the 1-device ones (sums in another order only); local: the first
// layer's (the later ones see inputs normalised per slice); every replica the same bits either way.
void test_devices_agree(void **) {
  const dpt::Dataset d = data();
  auto one = make_trainer(Run{});
  train(*one, d);
  dpt::recompute_statistics(*one, d, 12, 30);
  const std::vector<float> reference = buffers(*one);
  for (size_t k : {2, 3, 4, 8})
    for (bool weighted : {false, true}) {
      auto t = make_trainer(Run{k, weighted, true});
      train(*t, d);
      dpt::recompute_statistics(*t, d, 12, 30);
      const std::string what = "K=" + std::to_string(k) + (weighted ? " weighted" : " even");
      expect_replicas_identical(*t, what);
      expect_close((what + " vs 1 device").c_str(), buffers(*t),
                   std::vector<double>(reference.begin(), reference.end()), 1e-5);
    }
  auto local = make_trainer(Run{4, false, false});
  train(*local, d);
  dpt::recompute_statistics(*local, d, 12, 30);
  expect_replicas_identical(*local, "local K=4");
  auto one_local = make_trainer(Run{1, false, false});
  train(*one_local, d);
  dpt::recompute_statistics(*one_local, d, 12, 30);
  const std::vector<float> got = buffers(*local), want = buffers(*one_local);
  expect_close("local K=4 vs 1 device, bn0", std::vector<float>(got.begin(), got.begin() + 4),
               std::vector<double>(want.begin(), want.begin() + 4), 1e-6);
}

// Training goes on as if nothing had happened: a step normalises with its batch's statistics, so the
// parameters after recompute + steps are those of the steps alone, bit for bit; the counters stay.
void test_nothing_else_changes(void **) {
  const dpt::Dataset d = data();
  auto plain = make_trainer(Run{2, false, true}), recomputed = make_trainer(Run{2, false, true});
  train(*plain, d, 2);
  train(*recomputed, d, 2);
  dpt::recompute_statistics(*recomputed, d, 16, 0);
  assert_int_equal(recomputed->optimizer_steps(), plain->optimizer_steps());
  for (size_t s = 2; s < 4; ++s) {
    plain->step(d.sample(s * 9), d.labels(s * 9), 9);
    recomputed->step(d.sample(s * 9), d.labels(s * 9), 9);
  }
  assert_true(parameters(*recomputed) == parameters(*plain));
  assert_int_equal(recomputed->optimizer_steps(), 4);

  // A model without batch norm: nothing to do.
  dpt::ModelSpec mlp(dpt::Shape{kChannels, 6, 6});
  mlp.add_dense(5);
  mlp.add_dense(kClasses);
  auto t = make_trainer(Run{2, false, true}, mlp);
  const std::vector<float> start = parameters(*t);
  dpt::recompute_statistics(*t, d, 10, 0);
  assert_true(parameters(*t) == start);
}

void expect_status(dpt_status want, const std::function<void()> &f) {
  try {
    f();
  } catch (const dpt::Error &e) {
    std::printf("refused (%d): %s\n", int(e.status()), e.what());
    assert_int_equal(e.status(), want);
    return;
  }
  fail_msg("no error, expected %d", int(want));
}

void test_refusals(void **) {
  const dpt::Dataset d = data();
  auto t = make_trainer(Run{2, false, true});
  expect_status(DPT_ERROR_INVALID_ARGUMENT, [&] { dpt::recompute_statistics(*t, d, 0, 0); });
  expect_status(DPT_ERROR_INVALID_ARGUMENT, [&] {
    dpt::recompute_statistics(*t, dpt::Dataset(dpt::Shape{kChannels, 6, 6}, kClasses, {}, {}), 8, 0);
  });
  expect_status(DPT_ERROR_SIZE_MISMATCH, [&] {
    dpt::recompute_statistics(*t, dpt::Dataset(dpt::Shape{5}, kClasses, std::vector<float>(5), {0}), 8, 0);
  });
  // A NaN in the third batch (in the last device's slice): refused before that batch changes anything, the
  // statistics those of the first two batches.
  std::vector<float> x(24 * kSample);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<const float *>(d.sample(0))[i];
  x[x.size() - 5] = NAN;
  dpt::recompute_statistics(*t, d, 8, 16);
  const std::vector<float> two_batches = buffers(*t);
  t->recompute_statistics(x.data(), 8, 1);
  t->recompute_statistics(x.data() + 8 * kSample, 8, 2);
  expect_status(DPT_ERROR_NON_FINITE, [&] { t->recompute_statistics(x.data() + 16 * kSample, 8, 3); });
  assert_true(buffers(*t) == two_batches);
  // The trainer is still usable.
  dpt::recompute_statistics(*t, d, 8, 16);
  assert_true(buffers(*t) == two_batches);
}

// A pipeline normalises each micro-batch on its own: its recomputed statistics are the average of its
// micro-batches', i.e. one device's over batches of the micro-batch size. 2 stages of 1 and of 2 replicas
// (the latter summing each micro-batch's statistics over the stage's replicas), 2 micro-batches per batch.
void test_pipeline(void **) {
  const dpt::Dataset d = data(40);
  for (size_t width : {1, 2}) {
    dpt::TrainerConfig c;
    c.seed = 5;
    c.init = dpt::InitScheme::kNormal;
    c.init_std = 0.3f;
    c.pipeline_stages = 2;
    c.micro_batches = 2;
    dpt::Trainer pipeline(std::make_shared<dpt::Context>(dpt::ContextConfig{2 * width, 0}), model(), c);
    train(pipeline, d);
    auto one = make_trainer(Run{});
    const std::vector<float> weights = parameters(pipeline);
    one->set_parameters(weights.data());
    dpt::recompute_statistics(pipeline, d, 10, 0);  // 4 batches of 10: 8 micro-batches of 5
    dpt::recompute_statistics(*one, d, 5, 0);
    const std::vector<float> want = buffers(*one);
    const std::string what = "pipeline, 2 stages x " + std::to_string(width) + " vs 1 device, batches of 5";
    expect_close(what.c_str(), buffers(pipeline), std::vector<double>(want.begin(), want.end()), 1e-6);
    expect_replicas_identical(pipeline, what);
    if (parameters(pipeline) != weights) fail_msg("%s: the parameters changed", what.c_str());
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_average_of_the_batches),
      cmocka_unit_test(test_devices_agree),
      cmocka_unit_test(test_nothing_else_changes),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_pipeline),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
