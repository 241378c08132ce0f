/* The numerics contract: a K-device step equals the 1-device full-batch step (relative error <= 1e-5) for
 * every split, ragged batches and K > batch, over 1 and 20 steps of SGD-momentum and AdamW, with either
 * all-reduce; replicas are bitwise identical after every step; accumulation equals one big batch. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

#include "relative_error.h"

#define MAX_DEVICES 8
#define CLASSES 5

static dpt_context *context;

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

/* Deterministic data: inputs in [-1, 1), labels in [0, CLASSES). */
static uint64_t lcg_state;
static double next_unit(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0;
}
static void fill_batch(float *x, size_t n, int32_t *y, size_t samples, uint64_t seed) {
  lcg_state = seed;
  for (size_t i = 0; i < n; ++i) x[i] = (float)(2.0 * next_unit() - 1.0);
  for (size_t i = 0; i < samples; ++i) y[i] = (int32_t)(next_unit() * CLASSES);
}

/* A small CNN with every layer kind that has a backward pass, dropout included. */
static dpt_model *make_model(void) {
  dpt_model *m = NULL;
  ok(dpt_model_create(&m, 2, 8, 8));
  ok(dpt_model_add_conv2d(m, 4, 3, 1, 1));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
  ok(dpt_model_add_pool(m, DPT_POOL_MAX, 2, 2));
  ok(dpt_model_add_conv2d(m, 3, 3, 1, 0));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_TANH));
  ok(dpt_model_add_pool(m, DPT_POOL_AVG, 2, 1));
  ok(dpt_model_add_flatten(m));
  ok(dpt_model_add_dense(m, 12));
  ok(dpt_model_add_activation(m, DPT_ACTIVATION_SIGMOID));
  ok(dpt_model_add_dropout(m, 0.25f));
  ok(dpt_model_add_dense(m, CLASSES));
  return m;
}

typedef struct config {
  size_t devices;
  dpt_split_policy split;
  dpt_allreduce_algorithm allreduce;
  dpt_optimizer_kind optimizer;
  size_t accumulation;
} config;

static dpt_trainer *make_trainer(const dpt_model *m, const config *c) {
  static const size_t indices[MAX_DEVICES] = {0, 1, 2, 3, 4, 5, 6, 7};
  static const float weights[MAX_DEVICES] = {1.0f, 3.0f, 0.5f, 2.0f, 1.0f, 1.5f, 0.25f, 4.0f};
  dpt_trainer_options t;
  dpt_trainer_options_init(&t);
  t.devices = indices;
  t.device_count = c->devices;
  t.split = c->split;
  t.split_weights = weights;
  t.allreduce = c->allreduce;
  t.seed = 1234;
  t.accumulation_steps = c->accumulation;
  dpt_optimizer_options o;
  dpt_optimizer_options_init(&o);
  o.kind = c->optimizer;
  if (c->optimizer == DPT_OPTIMIZER_SGD) {
    o.learning_rate = 0.1f;
    o.momentum = 0.9f;
    o.weight_decay = 1e-3f;
  } else {
    o.learning_rate = 0.01f;
    o.weight_decay = 0.01f;
  }
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, m, &t, &o));
  return trainer;
}

static size_t parameter_count(dpt_trainer *t) {
  size_t n = 0;
  ok(dpt_trainer_parameter_count(t, &n));
  return n;
}

static void assert_replicas_identical(dpt_trainer *t, size_t devices, float *a, float *b) {
  const size_t n = parameter_count(t);
  ok(dpt_trainer_get_replica_parameters(t, 0, a, n));
  for (size_t r = 1; r < devices; ++r) {
    ok(dpt_trainer_get_replica_parameters(t, r, b, n));
    if (memcmp(a, b, n * sizeof(float)) != 0) fail_msg("replica %zu differs from replica 0", r);
  }
}

/* Runs `steps` steps of batch `batch` on the configuration and on 1 device, compares after every step. */
static void check_equivalence(const config *c, size_t batch, size_t steps) {
  dpt_model *m = make_model();
  size_t in = 0;
  ok(dpt_model_input_size(m, &in));
  config single = *c;
  single.devices = 1;
  single.split = DPT_SPLIT_EVEN;
  single.accumulation = 1;
  dpt_trainer *reference = make_trainer(m, &single);
  dpt_trainer *parallel = make_trainer(m, c);
  const size_t n = parameter_count(reference);
  const size_t micro = batch / c->accumulation; /* batch is a multiple of accumulation */
  float *x = malloc(batch * in * sizeof(float));
  int32_t *y = malloc(batch * sizeof(int32_t));
  float *p_ref = malloc(n * sizeof(float)), *p_par = malloc(n * sizeof(float)),
        *scratch = malloc(n * sizeof(float));
  float *start = malloc(n * sizeof(float));
  ok(dpt_trainer_get_parameters(reference, start, n));
  ok(dpt_trainer_get_parameters(parallel, p_par, n));
  assert_memory_equal(start, p_par, n * sizeof(float)); /* same seed: same initialisation */
  for (size_t step = 0; step < steps; ++step) {
    fill_batch(x, batch * in, y, batch, 1000 + step);
    dpt_step_result r;
    r.struct_size = sizeof r;
    ok(dpt_trainer_step(reference, x, batch * in, y, batch, &r));
    for (size_t k = 0; k < c->accumulation; ++k) {
      ok(dpt_trainer_step(parallel, x + k * micro * in, micro * in, y + k * micro, micro, &r));
      assert_int_equal(r.applied, k + 1 == c->accumulation);
    }
    ok(dpt_trainer_get_parameters(reference, p_ref, n));
    ok(dpt_trainer_get_parameters(parallel, p_par, n));
    const double err = tu_relative_error(p_par, p_ref, start, n);
    if (!(err <= 1e-5))
      fail_msg("K=%zu split=%d allreduce=%d opt=%d acc=%zu batch=%zu step %zu: relative error %g", c->devices,
               (int)c->split, (int)c->allreduce, (int)c->optimizer, c->accumulation, batch, step, err);
    assert_replicas_identical(parallel, c->devices, p_par, scratch);
  }
  free(x), free(y), free(p_ref), free(p_par), free(scratch), free(start);
  dpt_trainer_destroy(parallel);
  dpt_trainer_destroy(reference);
  dpt_model_destroy(m);
}

static void test_one_step_every_split(void **state) {
  (void)state;
  const size_t ks[] = {1, 2, 3, 4, 8};
  const size_t batches[] = {1, 5, 7, 16, 33}; /* ragged, and fewer samples than devices */
  for (size_t ki = 0; ki < 5; ++ki)
    for (int split = DPT_SPLIT_EVEN; split <= DPT_SPLIT_AUTO; ++split)
      for (size_t bi = 0; bi < 5; ++bi)
        for (int opt = DPT_OPTIMIZER_SGD; opt <= DPT_OPTIMIZER_ADAMW; ++opt) {
          config c = {ks[ki], (dpt_split_policy)split,
                      (ki + bi) % 2 ? DPT_ALLREDUCE_NAIVE : DPT_ALLREDUCE_RING, (dpt_optimizer_kind)opt, 1};
          check_equivalence(&c, batches[bi], 1);
        }
}

static void test_twenty_steps(void **state) {
  (void)state;
  const size_t ks[] = {2, 3, 4, 8};
  for (size_t ki = 0; ki < 4; ++ki)
    for (int opt = DPT_OPTIMIZER_SGD; opt <= DPT_OPTIMIZER_ADAMW; ++opt)
      for (int algo = DPT_ALLREDUCE_RING; algo <= DPT_ALLREDUCE_NAIVE; ++algo) {
        config even = {ks[ki], DPT_SPLIT_EVEN, (dpt_allreduce_algorithm)algo, (dpt_optimizer_kind)opt, 1};
        check_equivalence(&even, 21, 20);
        config weighted = {ks[ki], DPT_SPLIT_WEIGHTED, (dpt_allreduce_algorithm)algo, (dpt_optimizer_kind)opt,
                           1};
        check_equivalence(&weighted, 32, 20);
      }
}

static void test_accumulation_equals_big_batch(void **state) {
  (void)state;
  config c = {3, DPT_SPLIT_EVEN, DPT_ALLREDUCE_RING, DPT_OPTIMIZER_SGD, 4};
  check_equivalence(&c, 24, 5); /* 4 micro-batches of 6 == one batch of 24 */
  config w = {2, DPT_SPLIT_WEIGHTED, DPT_ALLREDUCE_NAIVE, DPT_OPTIMIZER_ADAMW, 2};
  check_equivalence(&w, 10, 5);
}

static void test_split_sizes(void **state) {
  (void)state;
  dpt_model *m = make_model();
  config c = {3, DPT_SPLIT_EVEN, DPT_ALLREDUCE_RING, DPT_OPTIMIZER_SGD, 1};
  dpt_trainer *t = make_trainer(m, &c);
  size_t counts[3];
  ok(dpt_trainer_split_sizes(t, 10, counts, 3));
  assert_int_equal(counts[0], 4);
  assert_int_equal(counts[1], 3);
  assert_int_equal(counts[2], 3);
  ok(dpt_trainer_split_sizes(t, 2, counts, 3));
  assert_int_equal(counts[2], 0);
  dpt_trainer_destroy(t);
  c.split = DPT_SPLIT_WEIGHTED; /* weights 1, 3, 0.5 */
  t = make_trainer(m, &c);
  ok(dpt_trainer_split_sizes(t, 90, counts, 3));
  assert_int_equal(counts[0], 20);
  assert_int_equal(counts[1], 60);
  assert_int_equal(counts[2], 10);
  ok(dpt_trainer_split_sizes(t, 7, counts, 3)); /* quotas 1.56, 4.67, 0.78: remainders go to 2 then 0 */
  assert_int_equal(counts[0] + counts[1] + counts[2], 7);
  assert_int_equal(counts[1], 5);
  dpt_trainer_destroy(t);
  /* Exact rounding on 8 devices, weights 8, 7, ..., 1: the quotas of 162 are 36, 31.5, 27, 22.5, 18, 13.5,
   * 9, 4.5, so the two samples left go to the first two tied devices (floating-point quotas gave
   * 36:31:27:23:18:14:9:4). */
  {
    static const size_t all8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const float w8[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    const size_t want[8] = {36, 32, 27, 23, 18, 13, 9, 4};
    size_t got[8];
    dpt_trainer_options o;
    dpt_trainer_options_init(&o);
    o.devices = all8;
    o.device_count = 8;
    o.split = DPT_SPLIT_WEIGHTED;
    o.split_weights = w8;
    ok(dpt_trainer_create(&t, context, m, &o, NULL));
    ok(dpt_trainer_split_sizes(t, 162, got, 8));
    for (size_t i = 0; i < 8; ++i) assert_int_equal(got[i], want[i]);
    dpt_trainer_destroy(t);
  }
  dpt_model_destroy(m);
}

static int setup(void **state) {
  (void)state;
  dpt_context_options o;
  dpt_context_options_init(&o);
  o.cpu_devices = MAX_DEVICES;
  return dpt_context_create(&context, &o) == DPT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  dpt_context_destroy(context);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_sizes),
      cmocka_unit_test(test_one_step_every_split),
      cmocka_unit_test(test_twenty_steps),
      cmocka_unit_test(test_accumulation_equals_big_batch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
