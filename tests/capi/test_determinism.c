/* Same seed and configuration give bitwise identical runs; fit() continues its epoch sequence across calls;
 * prediction and evaluation agree with each other and across device counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#define SAMPLES 300
#define CLASSES 4

static dpt_context *context;
static dpt_dataset *dataset;

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

static dpt_model *make_model(void) {
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 1, 6, 6));
  ok(dpt_model_add_conv2d(m, 3, 3, 1, 0));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
  ok(dpt_model_add_flatten(m));
  ok(dpt_model_add_dropout(m, 0.2f));
  ok(dpt_model_add_dense(m, CLASSES));
  return m;
}

static dpt_trainer *make_trainer(size_t devices, uint64_t seed, size_t accumulation) {
  static const size_t indices[] = {0, 1, 2};
  dpt_model *m = make_model();
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  t.devices = indices;
  t.device_count = devices;
  t.seed = seed;
  t.accumulation_steps = accumulation;
  dpt_optimizer_options o;
  dpt_optimizer_options_init(&o);
  o.kind = DPT_OPTIMIZER_ADAMW;
  o.learning_rate = 0.01f;
  o.clip_norm = 1.0f;
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, m, &t, &o));
  dpt_model_destroy(m); /* the trainer keeps its own copy */
  return trainer;
}

static uint64_t fit_checksum(dpt_trainer *t, size_t epochs) {
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = epochs;
  f.batch_size = 32; /* 300 samples: a ragged last batch */
  ok(dpt_trainer_fit(t, dataset, NULL, &f, NULL));
  uint64_t sum = 0;
  ok(dpt_trainer_parameter_checksum(t, &sum));
  return sum;
}

static void test_same_seed_same_checksum(void **state) {
  (void)state;
  for (size_t acc = 1; acc <= 3; acc += 2) {
    dpt_trainer *a = make_trainer(3, 42, acc), *b = make_trainer(3, 42, acc), *c = make_trainer(3, 43, acc);
    const uint64_t ca = fit_checksum(a, 2), cb = fit_checksum(b, 2), cc = fit_checksum(c, 2);
    assert_true(ca == cb);
    assert_true(ca != cc);
    dpt_trainer_destroy(a), dpt_trainer_destroy(b), dpt_trainer_destroy(c);
  }
}

static void test_fit_continues_epochs(void **state) {
  (void)state;
  dpt_trainer *once = make_trainer(2, 5, 1), *twice = make_trainer(2, 5, 1);
  const uint64_t c1 = fit_checksum(once, 3);
  fit_checksum(twice, 1);
  const uint64_t c2 = fit_checksum(twice, 2);
  assert_true(c1 == c2);
  dpt_trainer_destroy(once), dpt_trainer_destroy(twice);
}

static void test_checksum_tracks_parameters(void **state) {
  (void)state;
  dpt_trainer *t = make_trainer(1, 9, 1);
  size_t n = 0;
  ok(dpt_trainer_parameter_count(t, &n));
  float *p = calloc(n, sizeof(float));
  ok(dpt_trainer_set_parameters(t, p, n));
  uint64_t sum = 0;
  ok(dpt_trainer_parameter_checksum(t, &sum));
  /* FNV-1a 64 of n * 4 zero bytes, computed independently here. */
  uint64_t expected = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n * sizeof(float); ++i) expected *= 0x100000001b3ULL;
  assert_true(sum == expected);
  free(p);
  dpt_trainer_destroy(t);
}

static void test_predict_matches_evaluate(void **state) {
  (void)state;
  dpt_trainer *t3 = make_trainer(3, 11, 1), *t1 = make_trainer(1, 11, 1);
  fit_checksum(t3, 1);
  size_t n = 0;
  ok(dpt_trainer_parameter_count(t3, &n));
  float *p = malloc(n * sizeof(float));
  ok(dpt_trainer_get_parameters(t3, p, n));
  ok(dpt_trainer_set_parameters(t1, p, n));
  float *x = malloc(SAMPLES * 36 * sizeof(float));
  int32_t y[SAMPLES];
  ok(dpt_dataset_copy_batch(dataset, 0, SAMPLES, x, SAMPLES * 36, y, SAMPLES));
  float *l3 = malloc(SAMPLES * CLASSES * sizeof(float)), *l1 = malloc(SAMPLES * CLASSES * sizeof(float));
  ok(dpt_trainer_predict(t3, x, SAMPLES * 36, SAMPLES, l3, SAMPLES * CLASSES));
  ok(dpt_trainer_predict(t1, x, SAMPLES * 36, SAMPLES, l1, SAMPLES * CLASSES));
  size_t correct = 0;
  for (size_t s = 0; s < SAMPLES; ++s) {
    size_t best = 0;
    for (size_t c = 0; c < CLASSES; ++c) {
      assert_true(fabsf(l3[s * CLASSES + c] - l1[s * CLASSES + c]) <=
                  1e-5f * (1.0f + fabsf(l1[s * CLASSES + c])));
      if (l3[s * CLASSES + c] > l3[s * CLASSES + best]) best = c;
    }
    correct += (int32_t)best == y[s];
  }
  dpt_eval_result e;
  e.struct_size = sizeof e;
  ok(dpt_trainer_evaluate(t3, x, SAMPLES * 36, y, SAMPLES, &e));
  assert_int_equal(e.samples, SAMPLES);
  assert_true(fabs(e.accuracy - (double)correct / SAMPLES) < 1e-12);
  dpt_eval_result ed;
  ed.struct_size = sizeof ed;
  ok(dpt_trainer_evaluate_dataset(t3, dataset, 64, &ed));
  assert_true(fabs(ed.accuracy - e.accuracy) < 1e-12);
  assert_true(fabs(ed.loss - e.loss) < 1e-6 * e.loss);
  free(p), free(x), free(l3), free(l1);
  dpt_trainer_destroy(t3), dpt_trainer_destroy(t1);
}

static uint64_t device_memory_in_use(size_t index) {
  dpt_device_info info;
  info.struct_size = sizeof info;
  ok(dpt_device_get_info(context, index, &info));
  return info.memory_in_use;
}

/* Device memory is allocated when a trainer is created and at the first step of the largest slice size;
 * later steps of that size or smaller allocate nothing (the arenas' usage stays constant). */
static void test_no_device_allocation_after_first_step(void **state) {
  (void)state;
  const uint64_t before[3] = {device_memory_in_use(0), device_memory_in_use(1), device_memory_in_use(2)};
  dpt_trainer *t = make_trainer(3, 1, 2);
  float *x = malloc(SAMPLES * 36 * sizeof(float));
  int32_t y[SAMPLES];
  ok(dpt_dataset_copy_batch(dataset, 0, SAMPLES, x, SAMPLES * 36, y, SAMPLES));
  ok(dpt_trainer_step(t, x, 64 * 36, y, 64, NULL));
  uint64_t after_first[3];
  for (size_t d = 0; d < 3; ++d) {
    after_first[d] = device_memory_in_use(d);
    assert_true(after_first[d] > before[d]); /* the replica and its activations live in the arena */
  }
  const size_t sizes[] = {64, 17, 1, 64, 50, 3};
  for (size_t i = 0; i < 6; ++i) ok(dpt_trainer_step(t, x, sizes[i] * 36, y, sizes[i], NULL));
  for (size_t d = 0; d < 3; ++d) assert_true(device_memory_in_use(d) == after_first[d]);
  dpt_trainer_destroy(t);
  for (size_t d = 0; d < 3; ++d) assert_true(device_memory_in_use(d) == before[d]); /* all returned */
  free(x);
}

static int setup(void **state) {
  (void)state;
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = 3;
  if (dpt_context_create(&context, &o) != DPT_OK) return -1;
  static float x[SAMPLES * 36];
  static int32_t y[SAMPLES];
  uint64_t s = 99;
  for (size_t i = 0; i < SAMPLES; ++i) {
    y[i] = (int32_t)(i % CLASSES);
    for (size_t j = 0; j < 36; ++j) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      /* A learnable pattern: the class lights up one quadrant, plus noise. */
      const size_t quadrant = (j / 18) * 2 + (j % 6) / 3;
      x[i * 36 + j] = (quadrant == (size_t)y[i] ? 1.0f : 0.0f) + (float)(s >> 40) / 16777216.0f * 0.5f;
    }
  }
  return dpt_dataset_create(&dataset, x, SAMPLES * 36, y, SAMPLES, 1, 6, 6, CLASSES) == DPT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  dpt_dataset_destroy(dataset);
  dpt_context_destroy(context);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_seed_same_checksum),
      cmocka_unit_test(test_fit_continues_epochs),
      cmocka_unit_test(test_checksum_tracks_parameters),
      cmocka_unit_test(test_predict_matches_evaluate),
      cmocka_unit_test(test_no_device_allocation_after_first_step),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
