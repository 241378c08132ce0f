/* Threads: several trainers trained at the same time on different threads, sharing one context or each with
 * its own, end bitwise equal to the same trainers trained one after another; two threads in calls on one
 * trainer get DPT_ERROR_BUSY. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- overlapping calls on one trainer: the second thread gets DPT_ERROR_BUSY ------------------- */

typedef struct overlap {
  dpt_trainer *trainer;
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int in_callback; /* the fit thread is paused in its first progress callback */
  int release;     /* the main thread is done probing */
  dpt_status nested_get, nested_save, nested_steps; /* re-entrant calls from the callback */
  dpt_status fit_status;
  const char *checkpoint;
} overlap;

static int pause_in_callback(const dpt_progress *p, void *user_data) {
  overlap *o = user_data;
  (void)p;
  size_t n = 0;
  float params[4096];
  uint64_t steps = 0;
  if (dpt_trainer_parameter_count(o->trainer, &n) != DPT_OK || n > 4096) return 1;
  o->nested_get = dpt_trainer_get_parameters(o->trainer, params, n);
  o->nested_save = dpt_trainer_save(o->trainer, o->checkpoint);
  o->nested_steps = dpt_trainer_step_count(o->trainer, &steps);
  pthread_mutex_lock(&o->mutex);
  o->in_callback = 1;
  pthread_cond_broadcast(&o->changed);
  while (!o->release) pthread_cond_wait(&o->changed, &o->mutex);
  pthread_mutex_unlock(&o->mutex);
  return 1; /* stop after the first report */
}

static void *fit_with_pause(void *arg) {
  overlap *o = arg;
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.batch_size = 24;
  f.progress_every = 1;
  f.progress = pause_in_callback;
  f.user_data = o;
  o->fit_status = dpt_trainer_fit(o->trainer, dataset, NULL, &f, NULL);
  return NULL;
}

static void test_overlapping_calls_are_busy(void **state) {
  (void)state;
  dpt_context *c = make_context(2);
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 1, 6, 6));
  ok(dpt_model_add_dense(m, CLASSES));
  overlap o = {.nested_get = -1, .nested_save = -1, .nested_steps = -1, .checkpoint = "busy_test.ckpt"};
  ok(dpt_trainer_create(&o.trainer, c, m, NULL, NULL));
  pthread_mutex_init(&o.mutex, NULL);
  pthread_cond_init(&o.changed, NULL);
  pthread_t fitter;
  assert_int_equal(pthread_create(&fitter, NULL, fit_with_pause, &o), 0);
  pthread_mutex_lock(&o.mutex);
  while (!o.in_callback) pthread_cond_wait(&o.changed, &o.mutex);
  pthread_mutex_unlock(&o.mutex);

  /* The fit thread is inside dpt_trainer_fit: every call from here is refused, and does nothing. */
  static float x[24 * IN];
  static int32_t y[24];
  size_t n = 0;
  uint64_t steps = 99, checksum = 0;
  float params[4096];
  assert_int_equal(dpt_trainer_step(o.trainer, x, 24 * IN, y, 24, NULL), DPT_ERROR_BUSY);
  assert_non_null(strstr(dpt_last_error_message(), "another thread"));
  assert_int_equal(dpt_trainer_parameter_count(o.trainer, &n), DPT_ERROR_BUSY);
  assert_int_equal(n, 0);
  assert_int_equal(dpt_trainer_get_parameters(o.trainer, params, 4096), DPT_ERROR_BUSY);
  assert_int_equal(dpt_trainer_step_count(o.trainer, &steps), DPT_ERROR_BUSY);
  assert_int_equal(steps, 99);
  assert_int_equal(dpt_trainer_parameter_checksum(o.trainer, &checksum), DPT_ERROR_BUSY);
  assert_int_equal(dpt_trainer_load(o.trainer, o.checkpoint), DPT_ERROR_BUSY);
  assert_int_equal(dpt_status_category(DPT_ERROR_BUSY), 1000);

  pthread_mutex_lock(&o.mutex);
  o.release = 1;
  pthread_cond_broadcast(&o.changed);
  pthread_mutex_unlock(&o.mutex);
  assert_int_equal(pthread_join(fitter, NULL), 0);
  ok(o.fit_status);
  /* The callback's own calls on the trainer ran: re-entrance from the calling thread is allowed. */
  ok(o.nested_get);
  ok(o.nested_save);
  ok(o.nested_steps);
  /* Once fit has returned, the trainer is free again for any thread. */
  ok(dpt_trainer_step_count(o.trainer, &steps));
  assert_int_equal(steps, 1);
  ok(dpt_trainer_load(o.trainer, o.checkpoint));
  remove(o.checkpoint);
  pthread_cond_destroy(&o.changed);
  pthread_mutex_destroy(&o.mutex);
  dpt_trainer_destroy(o.trainer);
  dpt_model_destroy(m);
  dpt_context_destroy(c);
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_equals_alone),
                                     cmocka_unit_test(test_overlapping_calls_are_busy)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
