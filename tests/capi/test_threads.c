/* Threads: several trainers trained at the same time on different threads, sharing one context or each with
 * its own, end bitwise equal to the same trainers trained one after another; two threads in calls on one
 * trainer get DPT_ERROR_BUSY. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#include "test_util.h"

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
  int fitting;           /* set by the fit thread just before it calls dpt_trainer_fit (atomic) */
  int stop;              /* the main thread is done probing: the next epoch report stops the fit (atomic) */
  dpt_status fit_status; /* of the fit thread */
} overlap;

static int stop_when_asked(const dpt_progress *p, void *user_data) {
  (void)p;
  return __atomic_load_n(&((overlap *)user_data)->stop, __ATOMIC_SEQ_CST);
}

static void *long_fit(void *arg) {
  overlap *o = arg;
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = 100000; /* until the main thread has seen what it probes for */
  f.batch_size = 24;
  f.progress = stop_when_asked;
  f.user_data = o;
  __atomic_store_n(&o->fitting, 1, __ATOMIC_SEQ_CST);
  do /* the main thread's probes may hold the trainer for a moment when fit starts */
    o->fit_status = dpt_trainer_fit(o->trainer, dataset, NULL, &f, NULL);
  while (o->fit_status == DPT_ERROR_BUSY);
  return NULL;
}

static dpt_trainer *small_trainer(dpt_context *c, dpt_model **m) {
  ASSERT_OK(dpt_model_create(m, 1, 6, 6));
  ASSERT_OK(dpt_model_add_dense(*m, CLASSES));
  dpt_trainer *t = NULL;
  ASSERT_OK(dpt_trainer_create(&t, c, *m, NULL, NULL));
  return t;
}

/* While one thread is inside dpt_trainer_fit, calls from another thread are refused with DPT_ERROR_BUSY
 * (exclusive and read-only ones alike) and change nothing. Probes that land in an epoch report, when the
 * trainer is free, simply succeed; the fit lasts until every kind of probe was refused at least once. */
static void test_overlapping_calls_are_busy(void **state) {
  (void)state;
  dpt_context *c = make_context(2);
  dpt_model *m = NULL;
  overlap o = {.trainer = small_trainer(c, &m)};
  pthread_t fitter;
  assert_int_equal(pthread_create(&fitter, NULL, long_fit, &o), 0);
  while (!__atomic_load_n(&o.fitting, __ATOMIC_SEQ_CST)) sched_yield();
  static float x[24 * IN];
  static int32_t y[24];
  float params[64 * CLASSES];
  size_t n = 0;
  uint64_t steps = 0, checksum = 0;
  int refused[5] = {0, 0, 0, 0, 0};
  for (int attempt = 0; attempt < 1000000; ++attempt) {
    int seen = 0;
    refused[0] += dpt_trainer_step(o.trainer, x, 24 * IN, y, 24, NULL) == DPT_ERROR_BUSY;
    size_t before = n = 12345;
    if (dpt_trainer_parameter_count(o.trainer, &n) == DPT_ERROR_BUSY) {
      assert_int_equal(n, before); /* nothing written */
      assert_non_null(strstr(dpt_last_error_message(), "another thread"));
      ++refused[1];
    }
    refused[2] += dpt_trainer_get_parameters(o.trainer, params, 36 * CLASSES + CLASSES) == DPT_ERROR_BUSY;
    refused[3] += dpt_trainer_step_count(o.trainer, &steps) == DPT_ERROR_BUSY;
    refused[4] += dpt_trainer_parameter_checksum(o.trainer, &checksum) == DPT_ERROR_BUSY;
    for (int i = 0; i < 5; ++i) seen += refused[i] > 0;
    if (seen == 5) break;
  }
  __atomic_store_n(&o.stop, 1, __ATOMIC_SEQ_CST);
  assert_int_equal(pthread_join(fitter, NULL), 0);
  ASSERT_OK(o.fit_status);
  for (int i = 0; i < 5; ++i)
    if (refused[i] == 0) fail_msg("probe %d was never refused while the trainer was fitting", i);
  assert_int_equal(dpt_status_category(DPT_ERROR_BUSY), 1000);
  /* Once fit has returned, the trainer is free again for any thread. */
  ASSERT_OK(dpt_trainer_step(o.trainer, x, 24 * IN, y, 24, NULL));
  dpt_trainer_destroy(o.trainer);
  dpt_model_destroy(m);
  dpt_context_destroy(c);
}

/* ---- the progress callback may use its trainer, on its own thread or through another ------------ */

typedef struct handoff {
  dpt_trainer *trainer;
  dpt_status status;
  uint64_t checksum;
} handoff;

static void *read_checksum(void *arg) {
  handoff *h = arg;
  h->status = dpt_trainer_parameter_checksum(h->trainer, &h->checksum);
  return NULL;
}

typedef struct callback_calls {
  dpt_trainer *trainer;
  const char *checkpoint;
  dpt_status get, save, steps, evaluate;
  handoff other_thread;
} callback_calls;

static int use_trainer_in_callback(const dpt_progress *p, void *user_data) {
  callback_calls *c = user_data;
  (void)p;
  float params[36 * CLASSES + CLASSES];
  uint64_t steps = 0;
  dpt_eval_result e = {.struct_size = sizeof e};
  c->get = dpt_trainer_get_parameters(c->trainer, params, 36 * CLASSES + CLASSES);
  c->save = dpt_trainer_save(c->trainer, c->checkpoint);
  c->steps = dpt_trainer_step_count(c->trainer, &steps);
  c->evaluate = dpt_trainer_evaluate_dataset(c->trainer, dataset, 0, &e);
  /* A thread the callback hands work to (as Go runs callbacks on a goroutine of their own). */
  pthread_t helper;
  c->other_thread.trainer = c->trainer;
  if (pthread_create(&helper, NULL, read_checksum, &c->other_thread) != 0) return 1;
  pthread_join(helper, NULL);
  return 1; /* stop after the first report */
}

static void test_callback_may_use_its_trainer(void **state) {
  (void)state;
  dpt_context *c = make_context(2);
  dpt_model *m = NULL;
  callback_calls calls = {.trainer = small_trainer(c, &m), .checkpoint = "threads_callback.ckpt"};
  calls.get = calls.save = calls.steps = calls.evaluate = calls.other_thread.status = DPT_ERROR_INTERNAL;
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.batch_size = 24;
  f.progress_every = 1;
  f.progress = use_trainer_in_callback;
  f.user_data = &calls;
  ASSERT_OK(dpt_trainer_fit(calls.trainer, dataset, NULL, &f, NULL));
  ASSERT_OK(calls.get);
  ASSERT_OK(calls.save);
  ASSERT_OK(calls.steps);
  ASSERT_OK(calls.evaluate);
  ASSERT_OK(calls.other_thread.status);
  uint64_t checksum = 0;
  ASSERT_OK(dpt_trainer_parameter_checksum(calls.trainer, &checksum));
  assert_true(checksum == calls.other_thread.checksum); /* fit stopped right after that report */
  ASSERT_OK(dpt_trainer_load(calls.trainer, calls.checkpoint));
  remove(calls.checkpoint);
  dpt_trainer_destroy(calls.trainer);
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
                                     cmocka_unit_test(test_overlapping_calls_are_busy),
                                     cmocka_unit_test(test_callback_may_use_its_trainer)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
