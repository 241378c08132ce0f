/* Threads: several trainers trained at the same time on different threads, sharing one context or each with
 * its own, end bitwise equal to the same trainers trained one after another. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#define SAMPLES 240
#define IN 36
#define CLASSES 4
#define TRAINERS 4

static dpt_dataset *dataset;

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

typedef struct job {
  dpt_context *context; /* shared or own */
  size_t devices;       /* first `devices` devices of the context */
  uint64_t seed;
  uint64_t checksum;
  dpt_status status;
} job;

/* Runs on its own thread: create, fit 2 epochs, checksum. Errors are returned, not asserted (cmocka's
 * assertions belong to the main thread). */
static void *run_job(void *arg) {
  job *j = arg;
  static const size_t indices[] = {0, 1, 2};
  dpt_model *m = NULL;
  dpt_trainer *t = NULL;
  dpt_trainer_options o;
  dpt_trainer_options_init(&o);
  o.devices = indices;
  o.device_count = j->devices;
  o.seed = j->seed;
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = 2;
  f.batch_size = 24;
  j->status = dpt_model_create(&m, 1, 6, 6);
  if (j->status == DPT_OK) j->status = dpt_model_add_conv2d(m, 4, 3, 1, 1);
  if (j->status == DPT_OK) j->status = dpt_model_add_activation(m, DPT_ACTIVATION_RELU);
  if (j->status == DPT_OK) j->status = dpt_model_add_dense(m, CLASSES);
  if (j->status == DPT_OK) j->status = dpt_trainer_create(&t, j->context, m, &o, NULL);
  if (j->status == DPT_OK) j->status = dpt_trainer_fit(t, dataset, NULL, &f, NULL);
  if (j->status == DPT_OK) j->status = dpt_trainer_parameter_checksum(t, &j->checksum);
  dpt_trainer_destroy(t);
  dpt_model_destroy(m);
  return NULL;
}

static void run_concurrently(job *jobs, size_t n) {
  pthread_t threads[TRAINERS];
  for (size_t i = 0; i < n; ++i) assert_int_equal(pthread_create(&threads[i], NULL, run_job, &jobs[i]), 0);
  for (size_t i = 0; i < n; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
}

static dpt_context *make_context(size_t devices) {
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = devices;
  dpt_context *c = NULL;
  ok(dpt_context_create(&c, &o));
  return c;
}

static void test_concurrent_equals_alone(void **state) {
  (void)state;
  dpt_context *shared = make_context(3);
  dpt_context *own[TRAINERS];
  job alone[TRAINERS], together[TRAINERS], separate[TRAINERS];
  for (size_t i = 0; i < TRAINERS; ++i) {
    own[i] = make_context(2);
    job j = {shared, 1 + i % 3, 100 + i, 0, DPT_OK};
    alone[i] = together[i] = j;
    separate[i] = j;
    separate[i].context = own[i];
    separate[i].devices = 1 + i % 2;
  }
  for (size_t i = 0; i < TRAINERS; ++i) run_job(&alone[i]); /* one after another */
  run_concurrently(together, TRAINERS);                     /* one context, four threads */
  run_concurrently(separate, TRAINERS);                     /* a context each, four threads */
  for (size_t i = 0; i < TRAINERS; ++i) {
    ok(alone[i].status);
    ok(together[i].status);
    ok(separate[i].status);
    assert_true(together[i].checksum == alone[i].checksum);
    if (separate[i].devices == alone[i].devices) assert_true(separate[i].checksum == alone[i].checksum);
    if (i > 0) assert_true(alone[i].checksum != alone[i - 1].checksum); /* the seeds matter */
  }
  for (size_t i = 0; i < TRAINERS; ++i) dpt_context_destroy(own[i]);
  dpt_context_destroy(shared);
}

static int setup(void **state) {
  (void)state;
  static float x[SAMPLES * IN];
  static int32_t y[SAMPLES];
  for (size_t i = 0; i < SAMPLES; ++i) {
    y[i] = (int32_t)(i % CLASSES);
    for (size_t j = 0; j < IN; ++j)
      x[i * IN + j] = (float)((i * 7 + j * 5) % 13) / 13.0f + (j % CLASSES == (size_t)y[i]);
  }
  return dpt_dataset_create(&dataset, x, SAMPLES * IN, y, SAMPLES, 1, 6, 6, CLASSES) == DPT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  dpt_dataset_destroy(dataset);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_equals_alone)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
