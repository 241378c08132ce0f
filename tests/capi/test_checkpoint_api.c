/* Checkpoints through the C API: a run stopped after 2 epochs and resumed (in another trainer) matches the
 * uninterrupted run bitwise on the same devices and within the equivalence tolerance on other devices;
 * misuse of the checkpoint functions returns the documented statuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#define SAMPLES 200
#define IN 16
#define CLASSES 3

static dpt_context *context;
static dpt_dataset *dataset;
static char path[64];

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

static dpt_trainer *make_trainer(size_t devices) {
  static const size_t indices[] = {0, 1, 2};
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 1, 4, 4));
  ok(dpt_model_add_dense(m, 8));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_TANH));
  ok(dpt_model_add_dropout(m, 0.1f));
  ok(dpt_model_add_dense(m, CLASSES));
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  t.devices = indices;
  t.device_count = devices;
  t.seed = 21;
  dpt_optimizer_options o;
  dpt_optimizer_options_init(&o);
  o.kind = DPT_OPTIMIZER_ADAMW;
  o.learning_rate = 0.01f;
  o.schedule = DPT_SCHEDULE_COSINE;
  o.total_steps = 28;
  o.warmup_steps = 3;
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, m, &t, &o));
  dpt_model_destroy(m);
  return trainer;
}

static void fit(dpt_trainer *t, size_t epochs) {
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = epochs;
  f.batch_size = 30; /* 7 batches per epoch, the last one ragged */
  ok(dpt_trainer_fit(t, dataset, NULL, &f, NULL));
}

static void parameters(dpt_trainer *t, float *p, size_t n) {
  ok(dpt_trainer_get_parameters(t, p, n));
}

static void test_exact_resume(void **state) {
  (void)state;
  dpt_trainer *full = make_trainer(2);
  fit(full, 4);
  dpt_trainer *first = make_trainer(2);
  fit(first, 2);
  ok(dpt_trainer_save(first, path));
  uint64_t epochs = 0, steps = 0;
  ok(dpt_trainer_epoch_count(first, &epochs));
  ok(dpt_trainer_step_count(first, &steps));
  assert_int_equal(epochs, 2);
  assert_int_equal(steps, 14);
  dpt_trainer_destroy(first);

  size_t n = 0;
  ok(dpt_trainer_parameter_count(full, &n));
  float *expected = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float)),
        *start = malloc(n * sizeof(float));
  parameters(full, expected, n);
  dpt_trainer *initial = make_trainer(2);
  parameters(initial, start, n);
  dpt_trainer_destroy(initial);

  for (size_t k = 1; k <= 3; ++k) {
    dpt_trainer *resumed = make_trainer(k);
    ok(dpt_trainer_load(resumed, path));
    ok(dpt_trainer_epoch_count(resumed, &epochs));
    assert_int_equal(epochs, 2);
    fit(resumed, 2);
    parameters(resumed, got, n);
    if (k == 2) {
      assert_memory_equal(got, expected, n * sizeof(float)); /* same devices: bitwise */
    } else {
      double diff = 0, moved = 0;
      for (size_t i = 0; i < n; ++i) {
        diff += ((double)got[i] - expected[i]) * ((double)got[i] - expected[i]);
        moved += ((double)expected[i] - start[i]) * ((double)expected[i] - start[i]);
      }
      if (!(sqrt(diff / moved) <= 1e-4)) fail_msg("K=%zu: relative error %g", k, sqrt(diff / moved));
    }
    dpt_trainer_destroy(resumed);
  }
  free(expected), free(got), free(start);
  dpt_trainer_destroy(full);
}

static void test_misuse(void **state) {
  (void)state;
  dpt_trainer *t = make_trainer(1);
  uint64_t v = 77;
  assert_int_equal(dpt_trainer_save(NULL, path), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_save(t, NULL), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_save(t, ""), DPT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(dpt_trainer_save(t, "/nonexistent-dir/x.ckpt"), DPT_ERROR_IO);
  assert_non_null(strstr(dpt_last_error_message(), "/nonexistent-dir/x.ckpt"));
  assert_int_equal(dpt_trainer_load(NULL, path), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_load(t, NULL), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_load(t, ""), DPT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(dpt_trainer_load(t, "/nonexistent-dir/x.ckpt"), DPT_ERROR_IO);
  assert_int_equal(dpt_trainer_load(t, "/etc/hostname"), DPT_ERROR_FORMAT);
  assert_int_equal(dpt_trainer_epoch_count(NULL, &v), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_epoch_count(t, NULL), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_step_count(NULL, &v), DPT_ERROR_NULL_POINTER);
  assert_int_equal(dpt_trainer_step_count(t, NULL), DPT_ERROR_NULL_POINTER);
  assert_int_equal(v, 77);       /* untouched on failure */
  ok(dpt_trainer_save(t, path)); /* the handle stays usable */
  dpt_trainer_destroy(t);
}

/* Inside an accumulation window there is no exact state to save. */
static void test_save_inside_accumulation_window(void **state) {
  (void)state;
  static const size_t one[] = {0};
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 1, 4, 4));
  ok(dpt_model_add_dense(m, CLASSES));
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  t.devices = one;
  t.device_count = 1;
  t.accumulation_steps = 2;
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, m, &t, NULL));
  float x[2 * IN] = {0};
  int32_t y[2] = {0, 1};
  ok(dpt_trainer_step(trainer, x, 2 * IN, y, 2, NULL));
  assert_int_equal(dpt_trainer_save(trainer, path), DPT_ERROR_INVALID_STATE);
  ok(dpt_trainer_step(trainer, x, 2 * IN, y, 2, NULL));
  ok(dpt_trainer_save(trainer, path));
  dpt_trainer_destroy(trainer);
  dpt_model_destroy(m);
}

static int setup(void **state) {
  (void)state;
  snprintf(path, sizeof path, "/tmp/dptrain-capi-%ld.ckpt", (long)getpid());
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = 3;
  if (dpt_context_create(&context, &o) != DPT_OK) return -1;
  static float x[SAMPLES * IN];
  static int32_t y[SAMPLES];
  for (size_t i = 0; i < SAMPLES; ++i) {
    y[i] = (int32_t)(i % CLASSES);
    for (size_t j = 0; j < IN; ++j)
      x[i * IN + j] = (float)((i * 31 + j * 17) % 23) / 23.0f + (j % CLASSES == (size_t)y[i]);
  }
  return dpt_dataset_create(&dataset, x, SAMPLES * IN, y, SAMPLES, 1, 4, 4, CLASSES) == DPT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  dpt_dataset_destroy(dataset);
  dpt_context_destroy(context);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_resume),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_save_inside_accumulation_window),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
