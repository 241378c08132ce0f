// Gradient buckets overlapped with backward: the plan covers the gradient exactly, back to front; a trainer
// with buckets of any size produces the very bits of the unbucketed trainer (K devices, even and weighted
// splits, ragged batches, SGD-momentum and AdamW with clipping, accumulation); a NaN on one device and a
// failing or stalling device behave as without buckets (window discarded; error status, no hang).
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"
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

// Four layers with parameters of different sizes, and parameter-free layers between them.
dpt::ModelSpec model() {
  dpt::ModelSpec m(dpt::Shape{1, 8, 8});
  m.add_conv2d(4, 3, 1, 1);
  m.add_activation(dpt::Activation::kRelu);
  m.add_pool(dpt::PoolKind::kMax, 2, 2);
  m.add_conv2d(6, 3, 1, 0);
  m.add_activation(dpt::Activation::kTanh);
  m.add_flatten();
  m.add_dense(20);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(5);
  return m;
}

void test_plan_covers_the_gradient_back_to_front(void **) {
  for (const dpt::ModelSpec &spec :
       {model(), dpt::ModelSpec::builtin("lenet"), dpt::ModelSpec::builtin("mlp")}) {
    const size_t total = spec.parameter_count();
    for (size_t bytes : {size_t(0), size_t(1), size_t(4096), size_t(1) << 16, size_t(1) << 30}) {
      const auto buckets = dpt::plan_buckets(spec, bytes);
      assert_true(!buckets.empty());
      assert_int_equal(buckets.front().end, total);  // the last layer's gradient comes first
      assert_int_equal(buckets.back().begin, 0);
      for (size_t b = 0; b < buckets.size(); ++b) {
        assert_true(buckets[b].begin < buckets[b].end);
        if (b + 1 < buckets.size()) {
          assert_int_equal(buckets[b + 1].end, buckets[b].begin);  // adjacent, no gap, no overlap
          assert_true(buckets[b + 1].lowest_layer < buckets[b].lowest_layer);
          assert_true((buckets[b].end - buckets[b].begin) * sizeof(float) >=
                      bytes);  // only the last is short
        }
        assert_true(spec.nodes()[buckets[b].lowest_layer].parameters() > 0);
      }
      if (bytes == 0 || bytes == (size_t(1) << 30)) assert_int_equal(buckets.size(), 1);
      if (bytes == 1) {  // one bucket per layer with parameters
        size_t layers = 0;
        for (const auto &l : spec.nodes()) layers += l.parameters() > 0;
        assert_int_equal(buckets.size(), layers);
      }
    }
  }
}

struct Run {
  size_t devices = 2;
  size_t bucket_bytes = 0;
  size_t accumulation = 1;
  bool adamw = false;
  bool weighted = false;
};

std::unique_ptr<dpt::Trainer> make_trainer(const Run &run, double timeout = 0,
                                           std::shared_ptr<dpt::Context> context = nullptr) {
  if (context == nullptr) context = std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, 0});
  dpt::TrainerConfig c;
  c.seed = 5;
  c.bucket_bytes = run.bucket_bytes;
  c.accumulation_steps = run.accumulation;
  c.timeout_seconds = timeout;
  if (run.weighted) {
    c.split = dpt::SplitPolicy::kWeighted;
    for (size_t i = 0; i < run.devices; ++i) c.weights.push_back(double(1 + 2 * i));
  }
  if (run.adamw) {
    c.optimizer.kind = dpt::OptimizerKind::kAdamW;
    c.optimizer.learning_rate = 0.01f;
    c.optimizer.weight_decay = 0.01f;
    c.optimizer.clip_norm = 0.5f;
  } else {
    c.optimizer.learning_rate = 0.1f;
    c.optimizer.momentum = 0.9f;
  }
  return std::make_unique<dpt::Trainer>(context, model(), c);
}

// Ragged batches of 13 and 7 samples, so that some devices get uneven (and, weighted, tiny) slices.
void batch(size_t step, size_t n, std::vector<float> &x, std::vector<int32_t> &y) {
  dpt_test::TestRng rng(100 + step);
  x = rng.vector(n * 64, -1.0f, 1.0f);
  y.resize(n);
  for (auto &label : y) label = int32_t(rng.below(5));
}

std::vector<float> train(const Run &run, size_t steps) {
  auto t = make_trainer(run);
  std::vector<float> x;
  std::vector<int32_t> y;
  for (size_t s = 0; s < steps; ++s) {
    const size_t n = s % 2 == 0 ? 13 : 7;
    batch(s, n, x, y);
    t->step(x.data(), y.data(), n);
  }
  std::vector<float> params(t->parameter_count());
  t->get_parameters(t->device_count() - 1, params.data());
  return params;
}

void test_buckets_change_no_bit(void **) {
  for (size_t k : {2, 3, 4})
    for (bool adamw : {false, true})
      for (size_t accumulation : {1, 2})
        for (bool weighted : {false, true}) {
          Run run{k, 0, accumulation, adamw, weighted};
          const std::vector<float> reference = train(run, 6);
          for (size_t bytes : {size_t(1), size_t(1024), size_t(1) << 20}) {
            run.bucket_bytes = bytes;
            const std::vector<float> bucketed = train(run, 6);
            if (std::memcmp(reference.data(), bucketed.data(), reference.size() * sizeof(float)) != 0)
              fail_msg("K=%zu adamw=%d accumulation=%zu weighted=%d bucket_bytes=%zu: parameters differ", k,
                       int(adamw), accumulation, int(weighted), bytes);
          }
        }
}

// The step reports the all-reduce work and the part of it that was not hidden.
void test_step_reports_the_exposed_share(void **) {
  auto t = make_trainer(Run{3, 1, 1, false, false});
  std::vector<float> x;
  std::vector<int32_t> y;
  batch(0, 13, x, y);
  const dpt::StepStats s = t->step(x.data(), y.data(), 13);
  assert_true(s.applied);
  assert_true(s.allreduce_seconds > 0.0);
  assert_true(s.allreduce_exposed_seconds >= 0.0);
  assert_true(s.allreduce_exposed_seconds <= s.compute_seconds);
}

// A NaN in the slice of the last device: its backward is skipped but its buckets are still posted, the
// peers' reductions complete, and the window is discarded everywhere; training then goes on exactly as an
// unbucketed trainer that saw the same batches.
void test_nan_on_one_device_discards_the_window(void **) {
  auto bucketed = make_trainer(Run{3, 1, 1, false, false});
  auto plain = make_trainer(Run{3, 0, 1, false, false});
  std::vector<float> x;
  std::vector<int32_t> y;
  batch(0, 13, x, y);
  x[12 * 64 + 5] = std::numeric_limits<float>::quiet_NaN();  // the last sample lives on the last device
  std::vector<float> before(bucketed->parameter_count()), after(before.size()), other(before.size());
  bucketed->get_parameters(0, before.data());
  const dpt::StepStats s = bucketed->step(x.data(), y.data(), 13);
  plain->step(x.data(), y.data(), 13);
  assert_true(s.skipped_nonfinite);
  bucketed->get_parameters(2, after.data());
  assert_memory_equal(before.data(), after.data(), before.size() * sizeof(float));
  for (size_t step = 1; step < 4; ++step) {
    batch(step, 13, x, y);
    bucketed->step(x.data(), y.data(), 13);
    plain->step(x.data(), y.data(), 13);
  }
  bucketed->get_parameters(1, after.data());
  plain->get_parameters(1, other.data());
  assert_memory_equal(other.data(), after.data(), other.size() * sizeof(float));
}

dpt_status failing_step(dpt::Trainer &t, double max_seconds, std::string &message) {
  std::vector<float> x;
  std::vector<int32_t> y;
  batch(9, 13, x, y);
  const double t0 = dpt::platform::now_seconds();
  dpt_status status = DPT_OK;
  try {
    t.step(x.data(), y.data(), 13);
  } catch (const dpt::Error &e) {
    status = e.status();
    message = e.what();
  }
  const double elapsed = dpt::platform::now_seconds() - t0;
  if (elapsed > max_seconds) fail_msg("the failing step took %.3f s, more than %.3f s", elapsed, max_seconds);
  return status;
}

// A trainer with single-layer buckets on 3 devices that has taken one step (buffers reserved).
std::unique_ptr<dpt::Trainer> warmed_up(std::shared_ptr<dpt::Context> context, double timeout) {
  auto t = make_trainer(Run{3, 1, 1, false, false}, timeout, std::move(context));
  std::vector<float> x;
  std::vector<int32_t> y;
  batch(0, 13, x, y);
  t->step(x.data(), y.data(), 13);
  return t;
}

// A device that fails while its peers reduce buckets (their communication threads wait for its buckets),
// and one that stalls past the deadline: an error status within the deadline, the trainer destroyable.
void test_faults_during_overlap(void **) {
  std::string message;
  {
    auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
    auto t = warmed_up(context, 5.0);
    context->device(1).inject_fault(dpt::FaultKind::kFail, 0);  // its next task: the compute phase
    assert_int_equal(failing_step(*t, 5.0, message), DPT_ERROR_DEVICE);
    assert_non_null(std::strstr(message.c_str(), "cpu:1"));
  }
  const double t0 = dpt::platform::now_seconds();
  {
    auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
    auto t = warmed_up(context, 1.0);
    context->device(2).inject_fault(dpt::FaultKind::kStall, 0, 30.0);
    assert_int_equal(failing_step(*t, 2.0, message), DPT_ERROR_TIMEOUT);
  }
  if (dpt::platform::now_seconds() - t0 > 8.0) fail_msg("tearing down after a timeout took too long");
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_covers_the_gradient_back_to_front),
      cmocka_unit_test(test_buckets_change_no_bit),
      cmocka_unit_test(test_step_reports_the_exposed_share),
      cmocka_unit_test(test_nan_on_one_device_discards_the_window),
      cmocka_unit_test(test_faults_during_overlap),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
