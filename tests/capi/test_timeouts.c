/* Timeouts shorter than the work: a step whose slices take longer than timeout_seconds (slow, not hung)
 * returns DPT_ERROR_TIMEOUT, and nothing of the library touches the caller's inputs, or memory the
 * library has freed, after the call returned (run under ASan by the test command). The trainer is then
 * refused, destroying it never waits, and the context stays usable for a new trainer. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#include "test_util.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_seconds(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&t, NULL);
}

/* One step of LeNet on `batch` samples with the given timeout; the inputs are freed as soon as it returns. */
static dpt_status slow_step(dpt_trainer *t, size_t batch, double *seconds) {
  float *x = calloc(batch * 784, sizeof *x);
  int32_t *y = calloc(batch, sizeof *y);
  assert_non_null(x);
  assert_non_null(y);
  for (size_t i = 0; i < batch * 784; ++i) x[i] = (float)(i % 17) / 17.0f;
  for (size_t i = 0; i < batch; ++i) y[i] = (int32_t)(i % 10);
  const double t0 = now();
  const dpt_status s = dpt_trainer_step(t, x, batch * 784, y, batch, NULL);
  *seconds = now() - t0;
  memset(x, 0xff, batch * 784 * sizeof *x); /* NaN: a late reader would train on garbage */
  free(x);
  free(y);
  return s;
}

static void test_timeout_shorter_than_a_slice(void **state) {
  (void)state;
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = 2;
  dpt_context *c = NULL;
  ASSERT_OK(dpt_context_create(&c, &co));
  dpt_model *m = NULL;
  ASSERT_OK(dpt_model_create_builtin(&m, "lenet"));
  for (int round = 0; round < 3; ++round) {
    dpt_trainer_options o;
    dpt_trainer_options_init(&o);
    o.timeout_seconds = 0.02; /* one 256-sample LeNet slice takes longer */
    dpt_trainer *t = NULL;
    ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
    double seconds = 0;
    assert_int_equal(slow_step(t, 512, &seconds), DPT_ERROR_TIMEOUT);
    assert_non_null(strstr(dpt_last_error_message(), "timeout"));
    if (seconds > 2.0) fail_msg("the timed-out step took %.3f s", seconds);
    /* Refused from now on, with the reason. */
    assert_int_equal(slow_step(t, 512, &seconds), DPT_ERROR_INVALID_STATE);
    const double t0 = now();
    dpt_trainer_destroy(t); /* at once, even while a device is still computing the abandoned slice */
    if (now() - t0 > 0.5) fail_msg("destroying the timed-out trainer took %.3f s", now() - t0);
    if (round == 1) pause_seconds(0.5); /* also: destroyed after the devices came back */
  }
  /* The context is fine: a trainer with a normal timeout trains on it, and a later create frees what the
   * timed-out trainers left behind once their devices returned. */
  dpt_trainer_options o;
  dpt_trainer_options_init(&o);
  o.timeout_seconds = 1e300; /* finite, so allowed: an astronomical deadline (clamped, not overflowed) */
  dpt_trainer *t = NULL;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  double seconds = 0;
  ASSERT_OK(slow_step(t, 512, &seconds));
  uint64_t steps = 0;
  ASSERT_OK(dpt_trainer_step_count(t, &steps));
  assert_int_equal(steps, 1);
  dpt_trainer_destroy(t);
  dpt_model_destroy(m);
  dpt_context_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_timeout_shorter_than_a_slice)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
