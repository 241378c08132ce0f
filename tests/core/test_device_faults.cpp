// Device faults and timeouts, injected into the CPU backend: a device that fails in the compute phase or
// inside the all-reduce, and one that stalls past the deadline. Every step returns a device or timeout
// status on every replica within twice the timeout; the trainer then refuses work, can be destroyed, and a
// new trainer recreated from the last checkpoint continues exactly.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "io/checkpoint.hpp"
#include "parallel/retired_trainers.hpp"
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

namespace {

constexpr size_t kBatch = 12;

dpt::ModelSpec model() {
  dpt::ModelSpec m(dpt::Shape{1, 6, 6});
  m.add_conv2d(3, 3, 1, 0);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(4);
  return m;
}

std::unique_ptr<dpt::Trainer> trainer(std::shared_ptr<dpt::Context> context, double timeout) {
  dpt::TrainerConfig c;
  c.seed = 9;
  c.timeout_seconds = timeout;
  c.optimizer.momentum = 0.9f;
  return std::make_unique<dpt::Trainer>(context, model(), c);
}

void step(dpt::Trainer &t, int seed) {
  std::vector<float> x(kBatch * 36);
  std::vector<int32_t> y(kBatch);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 5 + size_t(seed)) % 9) / 9.0f;
  for (size_t i = 0; i < kBatch; ++i) y[i] = int32_t((i + size_t(seed)) % 4);
  t.step(x.data(), y.data(), kBatch);
}

// Runs a step expected to fail; returns its status and checks the elapsed time.
dpt_status failing_step(dpt::Trainer &t, double max_seconds, std::string *message) {
  const double t0 = dpt::platform::now_seconds();
  dpt_status status = DPT_OK;
  try {
    step(t, 7);
  } catch (const dpt::Error &e) {
    status = e.status();
    *message = e.what();
  }
  const double elapsed = dpt::platform::now_seconds() - t0;
  if (elapsed > max_seconds) fail_msg("the failing step took %.3f s, more than %.3f s", elapsed, max_seconds);
  return status;
}

void assert_refuses_work(dpt::Trainer &t) {
  try {
    step(t, 8);
    fail_msg("a broken trainer took a step");
  } catch (const dpt::Error &e) {
    assert_int_equal(e.status(), DPT_ERROR_INVALID_STATE);
  }
}

// Each steady-state step runs two tasks per device: compute, then update (all-reduce + optimizer).
void check_failure(size_t failing_device, uint64_t after_tasks, const char *phase) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  auto t = trainer(context, 5.0);
  step(*t, 1);  // warm-up: buffers reserved
  context->device(failing_device).inject_fault(dpt::FaultKind::kFail, after_tasks);
  std::string message;
  const dpt_status status = failing_step(*t, 5.0, &message);
  if (status != DPT_ERROR_DEVICE)
    fail_msg("%s: status %d (%s), expected a device error", phase, int(status), message.c_str());
  const std::string name = "cpu:" + std::to_string(failing_device);
  assert_non_null(std::strstr(message.c_str(), name.c_str()));  // the root cause, not a peer's abort
  assert_refuses_work(*t);
  t.reset();  // destroyable
}

void test_device_failure_in_compute(void **) {
  check_failure(1, 0, "compute");
}
void test_device_failure_inside_allreduce(void **) {
  check_failure(2, 1, "update");  // its peers are already waiting in the all-reduce
  check_failure(0, 1, "update");
}

// A device stalls for 30 s inside the update with a 1 s timeout: the step returns a timeout within 2 s
// (twice the timeout; sanitizer builds included), the stall is aborted, and destroying the trainer and the
// context does not wait 30 s.
void test_stall_times_out(void **) {
  const double t0 = dpt::platform::now_seconds();
  {
    auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
    auto t = trainer(context, 1.0);
    step(*t, 1);
    context->device(1).inject_fault(dpt::FaultKind::kStall, 1, 30.0);
    std::string message;
    assert_int_equal(failing_step(*t, 2.0, &message), DPT_ERROR_TIMEOUT);
    assert_non_null(std::strstr(message.c_str(), "timeout"));
    assert_refuses_work(*t);
  }
  const double total = dpt::platform::now_seconds() - t0;
  if (total > 8.0) fail_msg("tearing down after a timeout took %.1f s", total);
}

// A device that does not come back even after the abort (it hangs 1.5 s, past twice the 0.2 s timeout):
// the step returns, the caller frees its inputs, the trainer refuses work and cannot be read while the
// task is out, and retiring it does not wait; once the device returns, a sweep frees everything (under
// ASan: nothing the late task touched was freed before, nothing is leaked after).
void test_hung_device_is_retired(void **) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  auto t = trainer(context, 0.2);
  step(*t, 1);
  context->device(1).inject_fault(dpt::FaultKind::kHang, 0, 1.5);
  const double t0 = dpt::platform::now_seconds();
  std::string message;
  assert_int_equal(failing_step(*t, 1.0, &message), DPT_ERROR_TIMEOUT);  // its inputs are gone now
  assert_non_null(std::strstr(message.c_str(), "did not return"));
  assert_true(t->tasks_outstanding());
  assert_refuses_work(*t);
  std::vector<float> p(t->parameter_count());
  try {
    t->get_parameters(0, p.data());
    fail_msg("read the replica of a device that is still running");
  } catch (const dpt::Error &e) {
    assert_int_equal(e.status(), DPT_ERROR_INVALID_STATE);
  }
  context.reset();  // the parked trainer keeps the devices alive
  const double r0 = dpt::platform::now_seconds();
  dpt::retire_trainer(std::move(t));
  if (dpt::platform::now_seconds() - r0 > 0.1) fail_msg("retiring waited for the hung device");
  assert_int_equal(dpt::sweep_retired_trainers(), 1);
  while (dpt::sweep_retired_trainers() != 0) {
    if (dpt::platform::now_seconds() - t0 > 10.0) fail_msg("the hung device never came back");
    usleep(10000);
  }
  // It was freed once the device returned, not before.
  if (dpt::platform::now_seconds() - t0 < 1.4) fail_msg("freed before the hung task returned");
}

// A stall shorter than the timeout is just a slow step.
void test_short_stall_is_not_a_failure(void **) {
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  auto t = trainer(context, 2.0);
  step(*t, 1);
  context->device(0).inject_fault(dpt::FaultKind::kStall, 0, 0.1);
  step(*t, 2);
  step(*t, 3);
}

// After a failure, a new trainer loaded from the last checkpoint continues exactly like a run that never
// failed.
void test_recreate_from_checkpoint(void **) {
  const std::string path = "/tmp/dptrain-faults-" + std::to_string(::getpid()) + ".ckpt";
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  auto reference = trainer(context, 5.0), failing = trainer(context, 5.0);
  for (int s = 1; s <= 3; ++s) step(*reference, s), step(*failing, s);
  dpt::save_checkpoint(*failing, path);
  context->device(2).inject_fault(dpt::FaultKind::kFail, 1);
  std::string message;
  assert_int_equal(failing_step(*failing, 5.0, &message), DPT_ERROR_DEVICE);
  failing.reset();
  auto recreated = trainer(context, 5.0);
  dpt::load_checkpoint(*recreated, path);
  for (int s = 4; s <= 6; ++s) step(*reference, s), step(*recreated, s);
  std::vector<float> a(reference->parameter_count()), b(a.size());
  reference->get_parameters(0, a.data());
  recreated->get_parameters(0, b.data());
  assert_memory_equal(a.data(), b.data(), a.size() * sizeof(float));
  std::remove(path.c_str());
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_device_failure_in_compute),
      cmocka_unit_test(test_device_failure_inside_allreduce),
      cmocka_unit_test(test_stall_times_out),
      cmocka_unit_test(test_hung_device_is_retired),
      cmocka_unit_test(test_short_stall_is_not_a_failure),
      cmocka_unit_test(test_recreate_from_checkpoint),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
