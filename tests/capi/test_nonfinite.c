/* Non-finite values: a NaN or infinity in the inputs, the loss or the gradients skips the update (the
 * parameters and optimizer state stay bitwise as they were, which a following normal step proves by
 * matching a trainer that never saw the bad batch), is reported and counted; policy "error" also returns
 * DPT_ERROR_NON_FINITE; a skip discards the whole accumulation window. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#define N 12
#define IN 16
#define CLASSES 3

static dpt_context *context;

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

static dpt_trainer *make_trainer(dpt_optimizer_kind kind, dpt_nonfinite_policy policy, size_t accumulation) {
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 1, 4, 4));
  ok(dpt_model_add_dense(m, 6));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
  ok(dpt_model_add_dense(m, CLASSES));
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  assert_int_equal(t.nonfinite, DPT_NONFINITE_SKIP); /* the default */
  t.nonfinite = policy;
  t.accumulation_steps = accumulation;
  t.seed = 5;
  dpt_optimizer_options o;
  dpt_optimizer_options_init(&o);
  o.kind = kind;
  o.momentum = kind == DPT_OPTIMIZER_SGD ? 0.9f : 0.0f;
  o.learning_rate = kind == DPT_OPTIMIZER_SGD ? 0.1f : 0.01f;
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, m, &t, &o));
  dpt_model_destroy(m);
  return trainer;
}

static void batch(float *x, int32_t *y, int seed) {
  for (size_t i = 0; i < N * IN; ++i) x[i] = (float)((i * 13 + (size_t)seed * 7) % 17) / 17.0f - 0.4f;
  for (size_t i = 0; i < N; ++i) y[i] = (int32_t)((i + (size_t)seed) % CLASSES);
}

/* A step on batch `seed`, with `span` inputs from `where` on replaced by `poison` (none when where >= N*IN).
 */
static dpt_step_result step_span(dpt_trainer *t, int seed, float poison, size_t where, size_t span) {
  float x[N * IN];
  int32_t y[N];
  batch(x, y, seed);
  for (size_t i = where; i < where + span && i < N * IN; ++i) x[i] = poison;
  dpt_step_result r;
  r.struct_size = sizeof r;
  ok(dpt_trainer_step(t, x, N * IN, y, N, &r));
  return r;
}

static dpt_step_result step(dpt_trainer *t, int seed, float poison, size_t where) {
  return step_span(t, seed, poison, where, 1);
}

static void assert_same_parameters(dpt_trainer *a, dpt_trainer *b) {
  size_t n = 0;
  ok(dpt_trainer_parameter_count(a, &n));
  float *pa = malloc(n * sizeof(float)), *pb = malloc(n * sizeof(float));
  ok(dpt_trainer_get_parameters(a, pa, n));
  ok(dpt_trainer_get_parameters(b, pb, n));
  assert_memory_equal(pa, pb, n * sizeof(float));
  free(pa), free(pb);
}

/* Trainer "bad" sees a poisoned batch between normal ones; "good" sees only the normal ones. After one more
 * normal step both must be bitwise equal: parameters and optimizer state (momentum, Adam moments and step
 * count, which the next update uses) were untouched by the skip. */
static void check_skip(dpt_optimizer_kind kind, float poison, size_t where, size_t span) {
  dpt_trainer *bad = make_trainer(kind, DPT_NONFINITE_SKIP, 1);
  dpt_trainer *good = make_trainer(kind, DPT_NONFINITE_SKIP, 1);
  if (span > 1) { /* all first-layer weights 0.1, so that a sample of huge inputs overflows to infinity */
    size_t n = 0;
    ok(dpt_trainer_parameter_count(good, &n));
    float *p = malloc(n * sizeof(float));
    ok(dpt_trainer_get_parameters(good, p, n));
    for (size_t i = 0; i < 6 * IN; ++i) p[i] = 0.1f;
    ok(dpt_trainer_set_parameters(good, p, n));
    ok(dpt_trainer_set_parameters(bad, p, n));
    free(p);
  }
  step(bad, 1, 0, (size_t)-1), step(good, 1, 0, (size_t)-1);
  step(bad, 2, 0, (size_t)-1), step(good, 2, 0, (size_t)-1);
  const dpt_step_result r = step_span(bad, 3, poison, where, span);
  assert_int_equal(r.skipped_nonfinite, 1);
  assert_int_equal(r.applied, 0);
  assert_int_equal(r.nonfinite_steps, 1);
  assert_int_equal(r.optimizer_steps, 2);
  assert_same_parameters(bad, good);
  const dpt_step_result after = step(bad, 4, 0, (size_t)-1);
  step(good, 4, 0, (size_t)-1);
  assert_int_equal(after.skipped_nonfinite, 0);
  assert_int_equal(after.nonfinite_steps, 1);
  assert_same_parameters(bad, good);
  dpt_trainer_destroy(bad), dpt_trainer_destroy(good);
}

static void test_nan_and_inf_inputs_are_skipped(void **state) {
  (void)state;
  for (int kind = DPT_OPTIMIZER_SGD; kind <= DPT_OPTIMIZER_ADAMW; ++kind) {
    check_skip((dpt_optimizer_kind)kind, NAN, 0, 1);
    check_skip((dpt_optimizer_kind)kind, INFINITY, N * IN - 1,
               1); /* the last sample: another device's slice */
    check_skip((dpt_optimizer_kind)kind, -INFINITY, 5 * IN + 3, 1);
  }
}

/* Finite inputs so large that the first layer overflows (16 x 0.1 x 3e38 > FLT_MAX): the loss is not finite.
 */
static void test_nonfinite_loss_is_skipped(void **state) {
  (void)state;
  check_skip(DPT_OPTIMIZER_SGD, 3e38f, 0, IN);
  check_skip(DPT_OPTIMIZER_ADAMW, 3e38f, 7 * IN, IN);
}

static void test_error_policy(void **state) {
  (void)state;
  dpt_trainer *t = make_trainer(DPT_OPTIMIZER_SGD, DPT_NONFINITE_ERROR, 1);
  dpt_trainer *good = make_trainer(DPT_OPTIMIZER_SGD, DPT_NONFINITE_SKIP, 1);
  step(t, 1, 0, (size_t)-1), step(good, 1, 0, (size_t)-1);
  float x[N * IN];
  int32_t y[N];
  batch(x, y, 2);
  x[3] = NAN;
  dpt_step_result r;
  r.struct_size = sizeof r;
  r.applied = 42;
  r.skipped_nonfinite = 0;
  r.nonfinite_steps = 99;
  assert_int_equal(dpt_trainer_step(t, x, N * IN, y, N, &r), DPT_ERROR_NON_FINITE);
  /* The batch ran and was discarded: the result says so (trainer.h), the counters included. */
  assert_int_equal(r.applied, 0);
  assert_int_equal(r.skipped_nonfinite, 1);
  assert_int_equal(r.nonfinite_steps, 1);
  assert_int_equal(r.optimizer_steps, 1);
  assert_int_equal(r.samples, N);
  /* Any other failure leaves the result as the caller set it. */
  r.applied = 42;
  const int32_t bad_label[N] = {0, 1, 2, 99};
  assert_int_equal(dpt_trainer_step(t, x, N * IN, bad_label, N, &r), DPT_ERROR_OUT_OF_RANGE);
  assert_int_equal(r.applied, 42);
  assert_int_equal(dpt_trainer_step(t, x, N * IN, y, N, &r), DPT_ERROR_NON_FINITE);
  assert_non_null(strstr(dpt_last_error_message(), "NaN or infinity"));
  assert_int_equal(dpt_status_category(DPT_ERROR_NON_FINITE), 1000);
  assert_same_parameters(t, good);
  step(t, 3, 0, (size_t)-1), step(good, 3, 0, (size_t)-1); /* the trainer stays usable */
  assert_same_parameters(t, good);
  dpt_trainer_destroy(t), dpt_trainer_destroy(good);
}

/* With accumulation, a poisoned micro-batch discards its whole window: the next two micro-batches form a
 * fresh window, equal to a trainer that only ever saw them. */
static void test_skip_discards_accumulation_window(void **state) {
  (void)state;
  dpt_trainer *bad = make_trainer(DPT_OPTIMIZER_ADAMW, DPT_NONFINITE_SKIP, 2);
  dpt_trainer *good = make_trainer(DPT_OPTIMIZER_ADAMW, DPT_NONFINITE_SKIP, 2);
  dpt_step_result r = step(bad, 1, 0, (size_t)-1);
  assert_int_equal(r.applied, 0);
  r = step(bad, 2, NAN, 0);
  assert_int_equal(r.skipped_nonfinite, 1);
  r = step(bad, 3, 0, (size_t)-1);
  assert_int_equal(r.applied, 0); /* a new window started */
  r = step(bad, 4, 0, (size_t)-1);
  assert_int_equal(r.applied, 1);
  step(good, 3, 0, (size_t)-1), step(good, 4, 0, (size_t)-1);
  assert_same_parameters(bad, good);
  dpt_trainer_destroy(bad), dpt_trainer_destroy(good);
}

/* fit keeps going past a poisoned sample and reports the count; its loss ignores the skipped batch. */
static void test_fit_counts_skips(void **state) {
  (void)state;
  static float x[60 * IN];
  static int32_t y[60];
  for (int b = 0; b < 5; ++b) batch(x + (size_t)b * N * IN, y + (size_t)b * N, b);
  x[2 * N * IN + 1] = NAN; /* in the third batch of 12 (no shuffling) */
  dpt_dataset *d = NULL;
  ok(dpt_dataset_create(&d, x, 60 * IN, y, 60, 1, 4, 4, CLASSES));
  dpt_trainer *t = make_trainer(DPT_OPTIMIZER_SGD, DPT_NONFINITE_SKIP, 1);
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.batch_size = N;
  f.shuffle = 0;
  f.epochs = 2;
  dpt_fit_result r;
  r.struct_size = sizeof r;
  ok(dpt_trainer_fit(t, d, NULL, &f, &r));
  assert_int_equal(r.nonfinite_steps, 2);
  assert_int_equal(r.optimizer_steps, 8);
  assert_true(isfinite(r.train_loss) && r.train_loss > 0);
  dpt_trainer_destroy(t);
  dpt_dataset_destroy(d);
}

static int setup(void **state) {
  (void)state;
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = 3;
  return dpt_context_create(&context, &o) == DPT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  dpt_context_destroy(context);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nan_and_inf_inputs_are_skipped),
      cmocka_unit_test(test_nonfinite_loss_is_skipped),
      cmocka_unit_test(test_error_policy),
      cmocka_unit_test(test_skip_discards_accumulation_window),
      cmocka_unit_test(test_fit_counts_skips),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
