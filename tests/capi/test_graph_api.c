/* Graph models through the C API: a residual net built with the graph calls (tensor ids, shapes, named
 * parameters and buffers), its JSON round trip (same description, same training bit for bit), the
 * sequential calls unchanged, every new op trained, buffers read and written, and bad ids, names and
 * JSON texts refused with the documented codes, leaving the model usable. */
#include <limits.h>
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

#include "test_util.h"

#define CLASSES 3
#define BATCH 8

static dpt_context *context;

static int setup_context(void **state) {
  dpt_context_options o;
  (void)state;
  dpt_context_options_init(&o);
  o.cpu_devices = 2;
  return dpt_context_create(&context, &o) == DPT_OK ? 0 : -1;
}

static int teardown_context(void **state) {
  (void)state;
  dpt_context_destroy(context);
  return 0;
}

/* ---- helpers ----------------------------------------------------------------------------------- */

/* The example of model.h, verbatim. */
static dpt_status basic_block(dpt_model *m, size_t x, size_t channels, size_t stride, size_t *out) {
  size_t y, s = x, dims[DPT_MODEL_MAX_RANK], rank;
  dpt_status e;
  if ((e = dpt_model_tensor_shape(m, x, dims, DPT_MODEL_MAX_RANK, &rank)) ||
      (e = dpt_model_conv2d(m, x, channels, 3, stride, 1, 0, NULL, &y)) ||
      (e = dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NULL, &y)) ||
      (e = dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NULL, &y)) ||
      (e = dpt_model_conv2d(m, y, channels, 3, 1, 1, 0, NULL, &y)) ||
      (e = dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NULL, &y)))
    return e;
  if ((stride != 1 || dims[0] != channels) &&  // the shortcut: a 1x1 projection
      ((e = dpt_model_conv2d(m, x, channels, 1, stride, 0, 0, NULL, &s)) ||
       (e = dpt_model_batch_norm(m, s, 1e-5f, 0.1f, NULL, &s))))
    return e;
  if ((e = dpt_model_add(m, y, s, NULL, &y))) return e;
  return dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NULL, out);
}

/* 2x8x8 -> stem conv-bn-relu (4 channels) -> a basic block to 8 channels at stride 2 (with the 1x1
 * projection) -> global average pooling -> dense 3. Tensors 0 .. 14. */
static dpt_model *residual_net(void) {
  dpt_model *m = NULL;
  size_t t = 0;
  ASSERT_OK(dpt_model_create(&m, 2, 8, 8));
  ASSERT_OK(dpt_model_conv2d(m, 0, 4, 3, 1, 1, 0, "stem.conv", &t));
  assert_int_equal(t, 1);
  ASSERT_OK(dpt_model_batch_norm(m, t, 1e-5f, 0.1f, "stem.bn", &t));
  assert_int_equal(t, 2);
  ASSERT_OK(dpt_model_activation(m, t, DPT_ACTIVATION_RELU, "stem.relu", &t));
  assert_int_equal(t, 3);
  ASSERT_OK(basic_block(m, t, 8, 2, &t));
  assert_int_equal(t, 12);
  ASSERT_OK(dpt_model_global_avg_pool(m, t, "pool", &t));
  assert_int_equal(t, 13);
  ASSERT_OK(dpt_model_dense(m, t, CLASSES, 1, "fc", &t));
  assert_int_equal(t, 14);
  return m;
}

static char *describe(const dpt_model *m) {
  size_t needed = 0;
  char *text;
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_describe(m, NULL, 0, &needed));
  text = malloc(needed);
  assert_non_null(text);
  ASSERT_OK(dpt_model_describe(m, text, needed, NULL));
  return text;
}

static char *to_json(const dpt_model *m) {
  size_t needed = 0;
  char *text;
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_to_json(m, NULL, 0, &needed));
  text = malloc(needed);
  assert_non_null(text);
  ASSERT_OK(dpt_model_to_json(m, text, needed, NULL));
  assert_int_equal(strlen(text) + 1, needed);
  return text;
}

static dpt_model *round_trip(const dpt_model *m) {
  char *json = to_json(m);
  dpt_model *copy = NULL;
  ASSERT_OK(dpt_model_from_json(&copy, json));
  free(json);
  return copy;
}

static void assert_same_model(const dpt_model *a, const dpt_model *b) {
  char *da = describe(a), *db = describe(b), *ja = to_json(a), *jb = to_json(b);
  size_t na = 0, nb = 0;
  assert_string_equal(da, db);
  assert_string_equal(ja, jb);
  ASSERT_OK(dpt_model_parameter_count(a, &na));
  ASSERT_OK(dpt_model_parameter_count(b, &nb));
  assert_int_equal(na, nb);
  ASSERT_OK(dpt_model_buffer_count(a, &na));
  ASSERT_OK(dpt_model_buffer_count(b, &nb));
  assert_int_equal(na, nb);
  free(da);
  free(db);
  free(ja);
  free(jb);
}

static void shape_is(const dpt_model *m, size_t tensor, size_t rank, size_t d0, size_t d1, size_t d2) {
  size_t dims[DPT_MODEL_MAX_RANK] = {0, 0, 0, 0}, got = 0;
  ASSERT_OK(dpt_model_tensor_shape(m, tensor, dims, DPT_MODEL_MAX_RANK, &got));
  assert_int_equal(got, rank);
  assert_int_equal(dims[0], d0);
  if (rank > 1) assert_int_equal(dims[1], d1);
  if (rank > 2) assert_int_equal(dims[2], d2);
}

/* Deterministic data: inputs in [-1, 1), labels in [0, classes). */
static void fill(float *x, size_t n, int32_t *y, size_t samples, size_t classes, uint64_t seed) {
  uint64_t s = seed;
  size_t i;
  for (i = 0; i < n; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  for (i = 0; i < samples; ++i) y[i] = (int32_t)(i % classes);
}

static dpt_trainer *make_trainer(const dpt_model *m, uint64_t seed) {
  dpt_trainer_options t;
  dpt_optimizer_options o;
  dpt_trainer *trainer = NULL;
  dpt_trainer_options_init(&t);
  t.seed = seed;
  dpt_optimizer_options_init(&o);
  o.learning_rate = 0.05f;
  o.momentum = 0.9f;
  ASSERT_OK(dpt_trainer_create(&trainer, context, m, &t, &o));
  return trainer;
}

/* Trains `steps` steps on fixed data and returns the checksum. */
static uint64_t train(dpt_trainer *t, const dpt_model *m, size_t steps) {
  size_t in = 0, classes = 0, i;
  float *x;
  int32_t y[BATCH];
  uint64_t checksum = 0;
  ASSERT_OK(dpt_model_input_size(m, &in));
  ASSERT_OK(dpt_model_output_size(m, &classes));
  x = malloc(BATCH * in * sizeof *x);
  assert_non_null(x);
  for (i = 0; i < steps; ++i) {
    fill(x, BATCH * in, y, BATCH, classes, 99 + i);
    ASSERT_OK(dpt_trainer_step(t, x, BATCH * in, y, BATCH, NULL));
  }
  free(x);
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &checksum));
  return checksum;
}

static uint64_t initial_checksum(const dpt_model *m) {
  dpt_trainer *t = make_trainer(m, 5);
  uint64_t c = 0;
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &c));
  dpt_trainer_destroy(t);
  return c;
}

/* ---- the residual net ---------------------------------------------------------------------------- */

static void test_residual_net_tensors(void **state) {
  dpt_model *m = residual_net();
  size_t n = 0;
  char *text = describe(m);
  (void)state;
  assert_string_equal(text,
                      "2x8x8 conv3x3s1p1:4:nobias batchnorm:1e-05:0.1 relu conv3x3s2p1:8:nobias "
                      "batchnorm:1e-05:0.1 relu conv3x3s1p1:8:nobias batchnorm:1e-05:0.1 "
                      "conv1x1s2p0:8:nobias@3 batchnorm:1e-05:0.1 add@8,10 relu gap dense:3");
  free(text);
  ASSERT_OK(dpt_model_output(m, &n));
  assert_int_equal(n, 14);
  ASSERT_OK(dpt_model_tensor_count(m, &n));
  assert_int_equal(n, 15);
  ASSERT_OK(dpt_model_layer_count(m, &n));
  assert_int_equal(n, 14);
  ASSERT_OK(dpt_model_output_size(m, &n));
  assert_int_equal(n, CLASSES);
  shape_is(m, 0, 3, 2, 8, 8);
  shape_is(m, 1, 3, 4, 8, 8);
  shape_is(m, 4, 3, 8, 4, 4);  /* the block's first conv, stride 2 */
  shape_is(m, 9, 3, 8, 4, 4);  /* the projection */
  shape_is(m, 11, 3, 8, 4, 4); /* the join */
  shape_is(m, 13, 1, 8, 0, 0); /* global average pooling */
  shape_is(m, 14, 1, CLASSES, 0, 0);
  /* set_output picks another tensor; the next node moves it again. */
  ASSERT_OK(dpt_model_set_output(m, 13));
  ASSERT_OK(dpt_model_output(m, &n));
  assert_int_equal(n, 13);
  ASSERT_OK(dpt_model_output_size(m, &n));
  assert_int_equal(n, 8);
  text = describe(m);
  assert_non_null(strstr(text, "dense:3 ->13"));
  free(text);
  ASSERT_OK(dpt_model_set_output(m, 14));
  dpt_model_destroy(m);
}

typedef struct expected_tensor {
  const char *name;
  size_t rank, dims[4];
} expected_tensor;

static void check_named(const dpt_model *m, dpt_tensor_kind kind, const expected_tensor *want, size_t count,
                        size_t total) {
  size_t n = 0, i, next = 0;
  ASSERT_OK(dpt_model_named_tensor_count(m, kind, &n));
  assert_int_equal(n, count);
  for (i = 0; i < count; ++i) {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t needed = 0, offset = 0, dims[DPT_MODEL_MAX_RANK], rank = 0, size = 1, d;
    ASSERT_OK(dpt_model_named_tensor(m, kind, i, name, sizeof name, &needed, &offset, dims,
                                     DPT_MODEL_MAX_RANK, &rank));
    assert_string_equal(name, want[i].name);
    assert_int_equal(needed, strlen(want[i].name) + 1);
    assert_int_equal(rank, want[i].rank);
    for (d = 0; d < rank; ++d) {
      assert_int_equal(dims[d], want[i].dims[d]);
      size *= dims[d];
    }
    assert_int_equal(offset, next); /* contiguous, in order */
    next += size;
  }
  assert_int_equal(next, total); /* covering the flat vector */
}

static void test_residual_net_named_tensors(void **state) {
  static const expected_tensor params[] = {
      {"stem.conv.weight", 4, {4, 2, 3, 3}}, {"stem.bn.weight", 1, {4}}, {"stem.bn.bias", 1, {4}},
      {"3.weight", 4, {8, 4, 3, 3}},         {"4.weight", 1, {8}},       {"4.bias", 1, {8}},
      {"6.weight", 4, {8, 8, 3, 3}},         {"7.weight", 1, {8}},       {"7.bias", 1, {8}},
      {"8.weight", 4, {8, 4, 1, 1}},         {"9.weight", 1, {8}},       {"9.bias", 1, {8}},
      {"fc.weight", 2, {CLASSES, 8}},        {"fc.bias", 1, {CLASSES}}};
  static const expected_tensor buffers[] = {{"stem.bn.running_mean", 1, {4}}, {"stem.bn.running_var", 1, {4}},
                                            {"4.running_mean", 1, {8}},       {"4.running_var", 1, {8}},
                                            {"7.running_mean", 1, {8}},       {"7.running_var", 1, {8}},
                                            {"9.running_mean", 1, {8}},       {"9.running_var", 1, {8}}};
  dpt_model *m = residual_net();
  size_t parameters = 0, floats = 0;
  (void)state;
  ASSERT_OK(dpt_model_parameter_count(m, &parameters));
  assert_int_equal(parameters, 72 + 8 + 288 + 16 + 576 + 16 + 32 + 16 + 24 + 3);
  ASSERT_OK(dpt_model_buffer_count(m, &floats));
  assert_int_equal(floats, 8 + 16 * 3);
  check_named(m, DPT_TENSOR_PARAMETER, params, sizeof params / sizeof params[0], parameters);
  check_named(m, DPT_TENSOR_BUFFER, buffers, sizeof buffers / sizeof buffers[0], floats);
  {
    /* The size query: too small buffers get needed and rank, nothing else. */
    char name[4] = "xyz";
    size_t needed = 0, offset = 77, dims[1] = {55}, rank = 0;
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 12, NULL, 0,
                                                                     &needed, &offset, NULL, 0, &rank));
    assert_int_equal(needed, sizeof "fc.weight");
    assert_int_equal(rank, 2);
    assert_int_equal(offset, 77);
    EXPECT_STATUS(
        DPT_ERROR_BUFFER_TOO_SMALL,
        dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 12, name, sizeof name, NULL, &offset, dims, 1, NULL));
    assert_string_equal(name, "xyz");
    assert_int_equal(dims[0], 55);
    assert_int_equal(offset, 77);
    /* A name that fits, a shape that does not. */
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL,
                  dpt_model_named_tensor(m, DPT_TENSOR_BUFFER, 0, NULL, 0, NULL, &offset, dims, 0, &rank));
    assert_int_equal(rank, 1);
    /* Everything optional but what has a capacity. */
    {
      char full[sizeof "stem.bn.running_mean"];
      ASSERT_OK(
          dpt_model_named_tensor(m, DPT_TENSOR_BUFFER, 0, full, sizeof full, NULL, NULL, dims, 1, NULL));
      assert_string_equal(full, "stem.bn.running_mean");
      assert_int_equal(dims[0], 4);
    }
  }
  {
    size_t dims[2] = {9, 9}, rank = 0;
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_tensor_shape(m, 1, dims, 2, &rank));
    assert_int_equal(rank, 3);
    assert_int_equal(dims[0], 9);
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_tensor_shape(m, 1, NULL, 0, &rank));
    ASSERT_OK(dpt_model_tensor_shape(m, 14, dims, 1, &rank));
    assert_int_equal(dims[0], CLASSES);
  }
  dpt_model_destroy(m);
}

/* to_json -> from_json: the same description, names and counts; both train to the same parameters and
 * running statistics, bit for bit, on 2 CPU devices. */
static void test_residual_net_json_round_trip(void **state) {
  dpt_model *m = residual_net(), *copy = round_trip(m), *again = round_trip(copy);
  dpt_trainer *a, *b;
  size_t floats = 0;
  float *ba, *bb;
  char *json = to_json(m);
  (void)state;
  assert_same_model(m, copy);
  assert_same_model(copy, again);
  /* The format, as documented. */
  assert_true(
      strstr(json, "{\n  \"format\": \"dptrain.model\",\n  \"version\": 1,\n  \"input\": [2, 8, 8],") ==
      json);
  assert_non_null(
      strstr(json,
             "{\"op\": \"conv2d\", \"name\": \"stem.conv\", \"inputs\": [0], \"out_channels\": 4, "
             "\"kernel\": 3, \"stride\": 1, \"padding\": 1, \"bias\": 0}"));
  assert_non_null(strstr(json,
                         "{\"op\": \"batch_norm\", \"name\": \"4\", \"inputs\": [4], \"eps\": 1e-05, "
                         "\"momentum\": 0.1}"));
  assert_non_null(strstr(json, "{\"op\": \"add\", \"name\": \"10\", \"inputs\": [8, 10]}"));
  assert_non_null(strstr(json, "\"output\": 14\n}\n"));
  free(json);

  assert_true(initial_checksum(m) == initial_checksum(copy));
  a = make_trainer(m, 17);
  b = make_trainer(copy, 17);
  assert_true(train(a, m, 3) == train(b, copy, 3));
  ASSERT_OK(dpt_model_buffer_count(m, &floats));
  ba = malloc(floats * sizeof *ba);
  bb = malloc(floats * sizeof *bb);
  assert_non_null(ba);
  assert_non_null(bb);
  ASSERT_OK(dpt_trainer_get_buffers(a, ba, floats));
  ASSERT_OK(dpt_trainer_get_buffers(b, bb, floats));
  assert_memory_equal(ba, bb, floats * sizeof *ba);
  free(ba);
  free(bb);
  dpt_trainer_destroy(a);
  dpt_trainer_destroy(b);
  dpt_model_destroy(m);
  dpt_model_destroy(copy);
  dpt_model_destroy(again);
}

/* The running statistics start at 0 (mean) and 1 (variance), move with training, and set_buffers replaces
 * them on every replica: evaluation (which normalises with them) follows. */
static void test_buffers_get_set(void **state) {
  dpt_model *m = residual_net();
  dpt_trainer *t = make_trainer(m, 3);
  size_t floats = 0, in = 0, i, offset = 0;
  float *before, *after, *changed;
  float x[BATCH * 128];
  int32_t y[BATCH];
  dpt_eval_result e1, e2, e3;
  (void)state;
  memset(&e1, 0, sizeof e1);
  e1.struct_size = sizeof e1;
  e3 = e2 = e1;
  ASSERT_OK(dpt_model_buffer_count(m, &floats));
  ASSERT_OK(dpt_model_input_size(m, &in));
  assert_int_equal(in, 128);
  before = malloc(floats * sizeof *before);
  after = malloc(floats * sizeof *after);
  changed = malloc(floats * sizeof *changed);
  assert_non_null(before);
  assert_non_null(after);
  assert_non_null(changed);
  ASSERT_OK(dpt_trainer_get_buffers(t, before, floats));
  /* stem.bn.running_mean [4] then stem.bn.running_var [4]. */
  {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t dims[DPT_MODEL_MAX_RANK], rank;
    ASSERT_OK(dpt_model_named_tensor(m, DPT_TENSOR_BUFFER, 1, name, sizeof name, NULL, &offset, dims,
                                     DPT_MODEL_MAX_RANK, &rank));
    assert_string_equal(name, "stem.bn.running_var");
    assert_int_equal(offset, 4);
  }
  for (i = 0; i < 4; ++i) {
    assert_true(before[i] == 0.0f);
    assert_true(before[4 + i] == 1.0f);
  }
  train(t, m, 1);
  ASSERT_OK(dpt_trainer_get_buffers(t, after, floats));
  for (i = 0; i < floats; ++i)
    if (after[i] != before[i]) break;
  assert_true(i < floats); /* the statistics moved */
  for (i = 0; i < floats; ++i) assert_true(isfinite(after[i]));

  fill(x, BATCH * in, y, BATCH, CLASSES, 1234);
  ASSERT_OK(dpt_trainer_evaluate(t, x, BATCH * in, y, BATCH, &e1));
  for (i = 0; i < floats; ++i) changed[i] = after[i] * 0.5f + 0.25f;
  ASSERT_OK(dpt_trainer_set_buffers(t, changed, floats));
  ASSERT_OK(dpt_trainer_get_buffers(t, before, floats));
  assert_memory_equal(before, changed, floats * sizeof *before);
  ASSERT_OK(dpt_trainer_evaluate(t, x, BATCH * in, y, BATCH, &e2));
  assert_true(e2.loss != e1.loss);
  ASSERT_OK(dpt_trainer_set_buffers(t, after, floats));
  ASSERT_OK(dpt_trainer_evaluate(t, x, BATCH * in, y, BATCH, &e3));
  assert_true(e3.loss == e1.loss);
  /* Sizes are checked as for the parameters. */
  EXPECT_STATUS(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_buffers(t, before, floats - 1));
  EXPECT_STATUS(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_buffers(t, before, floats + 1));
  free(before);
  free(after);
  free(changed);
  dpt_trainer_destroy(t);
  dpt_model_destroy(m);
}

/* ---- the sequential calls, unchanged -------------------------------------------------------------- */

static void test_lenet_by_hand(void **state) {
  dpt_model *builtin = NULL, *seq = NULL, *graph = NULL;
  size_t t = 0;
  char *a, *b, *c;
  (void)state;
  ASSERT_OK(dpt_model_create_builtin(&builtin, "lenet"));
  ASSERT_OK(dpt_model_create(&seq, 1, 28, 28));
  ASSERT_OK(dpt_model_add_conv2d(seq, 20, 3, 1, 0));
  ASSERT_OK(dpt_model_add_activation(seq, DPT_ACTIVATION_RELU));
  ASSERT_OK(dpt_model_add_pool(seq, DPT_POOL_AVG, 2, 2));
  ASSERT_OK(dpt_model_add_conv2d(seq, 50, 5, 1, 0));
  ASSERT_OK(dpt_model_add_activation(seq, DPT_ACTIVATION_RELU));
  ASSERT_OK(dpt_model_add_pool(seq, DPT_POOL_AVG, 2, 2));
  ASSERT_OK(dpt_model_add_flatten(seq));
  ASSERT_OK(dpt_model_add_dense(seq, 128));
  ASSERT_OK(dpt_model_add_activation(seq, DPT_ACTIVATION_RELU));
  ASSERT_OK(dpt_model_add_dense(seq, 10));
  /* The same with the graph calls. */
  ASSERT_OK(dpt_model_create(&graph, 1, 28, 28));
  ASSERT_OK(dpt_model_conv2d(graph, t, 20, 3, 1, 0, 1, NULL, &t));
  ASSERT_OK(dpt_model_activation(graph, t, DPT_ACTIVATION_RELU, NULL, &t));
  ASSERT_OK(dpt_model_pool(graph, t, DPT_POOL_AVG, 2, 2, NULL, &t));
  ASSERT_OK(dpt_model_conv2d(graph, t, 50, 5, 1, 0, 1, NULL, &t));
  ASSERT_OK(dpt_model_activation(graph, t, DPT_ACTIVATION_RELU, NULL, &t));
  ASSERT_OK(dpt_model_pool(graph, t, DPT_POOL_AVG, 2, 2, NULL, &t));
  ASSERT_OK(dpt_model_flatten(graph, t, NULL, &t));
  ASSERT_OK(dpt_model_dense(graph, t, 128, 1, NULL, &t));
  ASSERT_OK(dpt_model_activation(graph, t, DPT_ACTIVATION_RELU, "8", &t)); /* its own index */
  ASSERT_OK(dpt_model_dense(graph, t, 10, 1, NULL, NULL));
  a = describe(builtin);
  b = describe(seq);
  c = describe(graph);
  assert_string_equal(a,
                      "1x28x28 conv3x3s1p0:20 relu avgpool2s2 conv5x5s1p0:50 relu avgpool2s2 flatten "
                      "dense:128 relu dense:10");
  assert_string_equal(a, b);
  assert_string_equal(a, c);
  assert_same_model(builtin, seq);
  assert_same_model(builtin, graph);
  assert_true(initial_checksum(builtin) == initial_checksum(seq));
  assert_true(initial_checksum(builtin) == initial_checksum(graph));
  free(a);
  free(b);
  free(c);
  dpt_model_destroy(builtin);
  dpt_model_destroy(seq);
  dpt_model_destroy(graph);
}

/* Every built-in model's JSON reads back to the same model. */
static void test_builtin_json_round_trip(void **state) {
  static const char *const names[] = {"lenet", "mlp", "resnet18", "gpt-mini"};
  size_t i;
  (void)state;
  for (i = 0; i < 4; ++i) {
    dpt_model *m = NULL, *copy;
    dpt_input_type type = DPT_INPUT_FLOAT32;
    ASSERT_OK(dpt_model_create_builtin(&m, names[i]));
    copy = round_trip(m);
    assert_same_model(m, copy);
    ASSERT_OK(dpt_model_input_type(copy, &type));
    assert_int_equal(type, i == 3 ? DPT_INPUT_TOKENS : DPT_INPUT_FLOAT32); /* "input_dtype": "int32" */
    if (i == 2) {
      char name[DPT_MODEL_NAME_CAPACITY];
      size_t n = 0;
      ASSERT_OK(dpt_model_named_tensor_count(copy, DPT_TENSOR_BUFFER, &n));
      assert_int_equal(n, 40);
      ASSERT_OK(dpt_model_named_tensor_count(copy, DPT_TENSOR_PARAMETER, &n));
      assert_int_equal(n, 62);
      {
        size_t dims[DPT_MODEL_MAX_RANK], rank;
        ASSERT_OK(dpt_model_named_tensor(copy, DPT_TENSOR_BUFFER, 39, name, sizeof name, NULL, NULL, dims,
                                         DPT_MODEL_MAX_RANK, &rank));
        assert_string_equal(name, "layer4.1.bn2.running_var");
        ASSERT_OK(dpt_model_named_tensor(copy, DPT_TENSOR_PARAMETER, n - 1, name, sizeof name, NULL, NULL,
                                         dims, DPT_MODEL_MAX_RANK, &rank));
        assert_string_equal(name, "fc.bias");
      }
    }
    dpt_model_destroy(m);
    dpt_model_destroy(copy);
  }
}

/* ResNet-18 built with the graph calls (torchvision's names) is the built-in one. */
static void test_resnet18_by_hand(void **state) {
  static const size_t channels[4] = {64, 128, 256, 512};
  dpt_model *builtin = NULL, *m = NULL;
  size_t x = 0, stage, block;
  char name[64];
  (void)state;
  ASSERT_OK(dpt_model_create_builtin(&builtin, "resnet18"));
  ASSERT_OK(dpt_model_create(&m, 1, 28, 28));
  ASSERT_OK(dpt_model_conv2d(m, 0, 64, 3, 1, 1, 0, "conv1", &x));
  ASSERT_OK(dpt_model_batch_norm(m, x, 1e-5f, 0.1f, "bn1", &x));
  ASSERT_OK(dpt_model_activation(m, x, DPT_ACTIVATION_RELU, "relu", &x));
  for (stage = 0; stage < 4; ++stage) {
    for (block = 0; block < 2; ++block) {
      const size_t stride = stage > 0 && block == 0 ? 2 : 1, c = channels[stage];
      size_t y = 0, s = x;
#define NAME(part) (snprintf(name, sizeof name, "layer%zu.%zu.%s", stage + 1, block, part), name)
      ASSERT_OK(dpt_model_conv2d(m, x, c, 3, stride, 1, 0, NAME("conv1"), &y));
      ASSERT_OK(dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NAME("bn1"), &y));
      ASSERT_OK(dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NAME("relu1"), &y));
      ASSERT_OK(dpt_model_conv2d(m, y, c, 3, 1, 1, 0, NAME("conv2"), &y));
      ASSERT_OK(dpt_model_batch_norm(m, y, 1e-5f, 0.1f, NAME("bn2"), &y));
      if (stride != 1 || (stage > 0 && block == 0)) {
        ASSERT_OK(dpt_model_conv2d(m, x, c, 1, stride, 0, 0, NAME("downsample.0"), &s));
        ASSERT_OK(dpt_model_batch_norm(m, s, 1e-5f, 0.1f, NAME("downsample.1"), &s));
      }
      ASSERT_OK(dpt_model_add(m, y, s, NAME("add"), &y));
      ASSERT_OK(dpt_model_activation(m, y, DPT_ACTIVATION_RELU, NAME("relu2"), &x));
#undef NAME
    }
  }
  ASSERT_OK(dpt_model_global_avg_pool(m, x, "avgpool", &x));
  ASSERT_OK(dpt_model_dense(m, x, 10, 1, "fc", &x));
  assert_same_model(builtin, m);
  dpt_model_destroy(builtin);
  dpt_model_destroy(m);
}

/* ---- every new op trains, and round-trips ------------------------------------------------------- */

static void test_every_op(void **state) {
  dpt_model *m = NULL, *copy;
  size_t a = 0, b = 0, c = 0, t = 0, parts[2];
  dpt_trainer *ta, *tb;
  char *text;
  (void)state;
  ASSERT_OK(dpt_model_create(&m, 2, 6, 6));
  ASSERT_OK(dpt_model_conv2d(m, 0, 3, 3, 1, 1, 1, "a", &a));
  ASSERT_OK(dpt_model_conv2d(m, 0, 5, 1, 1, 0, 0, "b", &b));
  ASSERT_OK(dpt_model_activation(m, b, DPT_ACTIVATION_TANH, NULL, &b));
  parts[0] = a;
  parts[1] = b;
  ASSERT_OK(dpt_model_concat(m, parts, 2, "cat", &c));
  shape_is(m, c, 3, 8, 6, 6);
  ASSERT_OK(dpt_model_activation(m, c, DPT_ACTIVATION_GELU, NULL, &t));
  ASSERT_OK(dpt_model_pool(m, t, DPT_POOL_MAX, 2, 2, NULL, &t));
  shape_is(m, t, 3, 8, 3, 3);
  ASSERT_OK(dpt_model_flatten(m, t, NULL, &t));
  shape_is(m, t, 1, 72, 0, 0);
  ASSERT_OK(dpt_model_layer_norm(m, t, 1e-5f, "ln", &t));
  ASSERT_OK(dpt_model_activation(m, t, DPT_ACTIVATION_GELU_TANH, NULL, &t));
  ASSERT_OK(dpt_model_dropout(m, t, 0.25f, NULL, &t));
  ASSERT_OK(dpt_model_dense(m, t, 6, 0, NULL, &t));
  ASSERT_OK(dpt_model_activation(m, t, DPT_ACTIVATION_SIGMOID, NULL, &t));
  ASSERT_OK(dpt_model_dense(m, t, CLASSES, 1, NULL, &t));
  /* The sequential call accepts the GELUs too. */
  ASSERT_OK(dpt_model_add_activation(m, DPT_ACTIVATION_GELU));
  ASSERT_OK(dpt_model_add_activation(m, DPT_ACTIVATION_GELU_TANH));
  text = describe(m);
  assert_string_equal(text,
                      "2x6x6 conv3x3s1p1:3 conv1x1s1p0:5:nobias@0 tanh concat@1,3 gelu maxpool2s2 flatten "
                      "layernorm:1e-05 gelu:tanh dropout:0.25 dense:6:nobias sigmoid dense:3 gelu gelu:tanh");
  free(text);
  copy = round_trip(m);
  assert_same_model(m, copy);
  ta = make_trainer(m, 8);
  tb = make_trainer(copy, 8);
  assert_true(train(ta, m, 2) == train(tb, copy, 2));
  dpt_trainer_destroy(ta);
  dpt_trainer_destroy(tb);
  dpt_model_destroy(m);
  dpt_model_destroy(copy);
}

/* ---- bad ids and names: the documented codes, the model unchanged and usable -------------------- */

typedef struct snapshot {
  size_t tensors, parameters, output;
  char *text;
} snapshot;

static snapshot take(const dpt_model *m) {
  snapshot s;
  ASSERT_OK(dpt_model_tensor_count(m, &s.tensors));
  ASSERT_OK(dpt_model_parameter_count(m, &s.parameters));
  ASSERT_OK(dpt_model_output(m, &s.output));
  s.text = to_json(m);
  return s;
}

static void unchanged(const dpt_model *m, snapshot *before, const char *what) {
  snapshot now = take(m);
  if (now.tensors != before->tensors || now.parameters != before->parameters ||
      now.output != before->output || strcmp(now.text, before->text) != 0)
    fail_msg("%s changed the model", what);
  free(now.text);
}

#define REFUSED(want, needle, call)                                                                \
  do {                                                                                             \
    size_t out_ = 12345;                                                                           \
    size_t *out = &out_;                                                                           \
    (void)out;                                                                                     \
    EXPECT_STATUS(want, call);                                                                     \
    assert_int_equal(out_, 12345);                                                                 \
    if ((needle) != NULL && strstr(dpt_last_error_message(), (needle)) == NULL)                    \
      fail_msg("%s: the message does not name %s: %s", #call, (needle), dpt_last_error_message()); \
    unchanged(m, &before, #call);                                                                  \
  } while (0)

static void test_bad_ids_and_names(void **state) {
  dpt_model *m = residual_net();
  snapshot before = take(m);
  char long_name[202];
  size_t t = 0, three[3] = {13, 13, 13}, one[1] = {13};
  (void)state;
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';

  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "tensor 15", dpt_model_conv2d(m, 15, 4, 3, 1, 1, 1, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "tensor 99", dpt_model_dense(m, 99, 4, 1, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "does not exist",
          dpt_model_batch_norm(m, SIZE_MAX, 1e-5f, 0.1f, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "tensor 20", dpt_model_add(m, 14, 20, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "add", dpt_model_add(m, 13, 14, NULL, out)); /* [8] + [3] */
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "tensor 15", dpt_model_set_output(m, 15));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "concat", dpt_model_concat(m, one, 1, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "concat", dpt_model_concat(m, three, 5, NULL, out));
  REFUSED(DPT_ERROR_NULL_POINTER, "inputs", dpt_model_concat(m, NULL, 2, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "global", dpt_model_global_avg_pool(m, 13, NULL, out)); /* rank 1 */
  /* Names. */
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"fc\"", dpt_model_dense(m, 13, 4, 1, "fc", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"stem.conv\"", dpt_model_flatten(m, 13, "stem.conv", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"3\"", dpt_model_flatten(m, 13, "3", out)); /* taken: node 3 */
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"7\"", dpt_model_flatten(m, 13, "7", out)); /* digits, not 14 */
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"a b\"", dpt_model_flatten(m, 13, "a b", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"x\\x0a\"", dpt_model_flatten(m, 13, "x\n", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "\"caf\\xc3\\xa9\"", dpt_model_flatten(m, 13, "caf\xc3\xa9", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "empty", dpt_model_flatten(m, 13, "", out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "200", dpt_model_flatten(m, 13, long_name, out));
  /* Attributes. */
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "bias", dpt_model_conv2d(m, 12, 4, 1, 1, 0, 2, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "bias", dpt_model_dense(m, 13, 4, -1, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "eps", dpt_model_batch_norm(m, 12, 0.0f, 0.1f, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "momentum", dpt_model_batch_norm(m, 12, 1e-5f, 1.5f, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "eps", dpt_model_layer_norm(m, 12, NAN, NULL, out));
  REFUSED(DPT_ERROR_OUT_OF_RANGE, "rate", dpt_model_dropout(m, 12, 1.0f, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "activation",
          dpt_model_activation(m, 12, (dpt_activation)5, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "pool", dpt_model_pool(m, 12, (dpt_pool_kind)2, 2, 2, NULL, out));
  REFUSED(DPT_ERROR_INVALID_ARGUMENT, "window", dpt_model_pool(m, 12, DPT_POOL_MAX, 5, 1, NULL, out));
  free(before.text);

  /* The boundaries are allowed, and the model stays usable: names of 200 bytes, a node's own index. */
  long_name[200] = '\0';
  ASSERT_OK(dpt_model_flatten(m, 13, long_name, &t));
  assert_int_equal(t, 15);
  ASSERT_OK(dpt_model_dense(m, t, CLASSES, 1, "15", &t));
  {
    char name[DPT_MODEL_NAME_CAPACITY];
    size_t n = 0, dims[DPT_MODEL_MAX_RANK], rank = 0;
    ASSERT_OK(dpt_model_named_tensor_count(m, DPT_TENSOR_PARAMETER, &n));
    ASSERT_OK(dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, n - 1, name, sizeof name, NULL, NULL, dims,
                                     DPT_MODEL_MAX_RANK, &rank));
    assert_string_equal(name, "15.bias");
  }
  {
    dpt_trainer *trainer = make_trainer(m, 1);
    dpt_model *copy = round_trip(m);
    train(trainer, m, 1);
    assert_same_model(m, copy);
    dpt_trainer_destroy(trainer);
    dpt_model_destroy(copy);
  }
  dpt_model_destroy(m);
}

/* ---- bad JSON texts ----------------------------------------------------------------------------- */

#define HEAD "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, 4, 4], "
#define CONV                                                                                               \
  "{\"op\": \"conv2d\", \"inputs\": [0], \"out_channels\": 2, \"kernel\": 3, \"stride\": 1, \"padding\": " \
  "0, "

typedef struct json_row {
  int want;
  const char *text;
  const char *needle; /* a part of the message, or NULL */
} json_row;

static const json_row json_rows[] = {
    {DPT_ERROR_FORMAT, "", "line 1, column 1"},
    {DPT_ERROR_FORMAT, "   \n  ", "line 2"},
    {DPT_ERROR_FORMAT, "[]", "expected an object"},
    {DPT_ERROR_FORMAT, "{", NULL},
    {DPT_ERROR_FORMAT, "{}", "missing \"format\""},
    {DPT_ERROR_FORMAT, "null", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": []} x", "after the end"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [],}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": []", NULL},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.mod\", \"version\": 1, \"input\": [1], \"nodes\": []}",
     "format"},
    {DPT_ERROR_FORMAT, "{\"format\": 1, \"version\": 1, \"input\": [1], \"nodes\": []}", "format"},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", \"version\": 2, \"input\": [1], \"nodes\": []}",
     "version 2"},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", \"version\": \"1\", \"input\": [1], \"nodes\": []}",
     NULL},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", \"version\": 1.0, \"input\": [1], \"nodes\": []}",
     NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [], \"extra\": 1}", "unknown key \"extra\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [], \"nodes\": []}", "duplicate key \"nodes\""},
    {DPT_ERROR_FORMAT, HEAD "\"output\": 0}", "missing \"nodes\""},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", \"version\": 1, \"nodes\": []}", "missing \"input\""},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [], \"nodes\": []}",
     "input"},
    {DPT_ERROR_FORMAT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1,1,1,1,1], \"nodes\": []}", NULL},
    {DPT_ERROR_FORMAT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, -4, 4], \"nodes\": []}", "non-negative"},
    {DPT_ERROR_FORMAT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, 4e1, 4], \"nodes\": []}", "integer"},
    {DPT_ERROR_FORMAT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, 99999999999999999999, 4], \"nodes\": "
     "[]}",
     "out of range"},
    {DPT_ERROR_INVALID_ARGUMENT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, 0, 4], \"nodes\": []}", "input"},
    {DPT_ERROR_INVALID_ARGUMENT,
     "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [1, 16384, 16385], \"nodes\": []}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": {}}", "expected an array"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [1]}", "nodes[0]"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"convolution\", \"inputs\": [0]}]}",
     "unknown op \"convolution\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"inputs\": [0]}]}", "missing \"op\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": 3, \"inputs\": [0]}]}", "expected a string"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": 1, \"kernal\": 3}]}", "unknown key \"kernal\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": 1, \"bias\": 1}]}", "duplicate key \"bias\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"name\": \"c\"}]}",
     "nodes[0] (conv2d \"c\"): missing \"bias\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": true}]}", "expected a number"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": 0.5}]}", "expected an integer"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": \"1\"}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [" CONV "\"bias\": 9223372036854775808}]}", "out of range"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [" CONV "\"bias\": 2}]}", "bias"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [" CONV "\"bias\": -9223372036854775808}]}", "bias"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"relu\"}]}", "missing \"inputs\""},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": 0}]}", "expected an array"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": [-1]}]}", "non-negative"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": [1]}]}", "tensor 1"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": [0, 0]}]}", "relu takes 1"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": []}]}", NULL},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"add\", \"inputs\": [0, 1]}]}", "tensor 1"},
    {DPT_ERROR_INVALID_ARGUMENT,
     HEAD
     "\"nodes\": [{\"op\": \"conv2d\", \"inputs\": [0], \"out_channels\": 2, \"kernel\": 7, \"stride\": 1, "
     "\"padding\": 0, \"bias\": 1}]}",
     "nodes[0] (conv2d)"},
    {DPT_ERROR_OUT_OF_RANGE, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": 1.5}]}",
     "rate"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": 1e999}]}", "range"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": NaN}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": .5}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": 1.}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [0], \"rate\": +0.5}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"dropout\", \"inputs\": [00], \"rate\": 0.5}]}", NULL},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"batch_norm\", \"inputs\": [0], \"eps\": 1e-5}]}",
     "missing \"momentum\""},
    {DPT_ERROR_INVALID_ARGUMENT,
     HEAD
     "\"nodes\": [{\"op\": \"relu\", \"name\": \"r\", \"inputs\": [0]}, {\"op\": \"relu\", \"name\": \"r\", "
     "\"inputs\": [1]}]}",
     "nodes[1] (relu \"r\")"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"name\": \"\", \"inputs\": [0]}]}",
     "empty"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"name\": \"a/b\", \"inputs\": [0]}]}",
     "a/b"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [{\"op\": \"relu\", \"name\": 0, \"inputs\": [0]}]}",
     "expected a string"},
    {DPT_ERROR_INVALID_ARGUMENT, HEAD "\"nodes\": [{\"op\": \"relu\", \"inputs\": [0]}], \"output\": 2}",
     "tensor 2"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [], \"output\": -1}", "output"},
    {DPT_ERROR_FORMAT, HEAD "\"nodes\": [], \"output\": null}", "output"},
    /* Strings, escapes, literals. */
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model", "unterminated"},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain\\q\"}", "escape"},
    {DPT_ERROR_FORMAT, "{\"format\": \"dp\ttrain\"}", "control character"},
    {DPT_ERROR_FORMAT, "{\"format\": \"\\ud800\"}", "surrogate"},
    {DPT_ERROR_FORMAT, "{\"format\": \"\\udc00\"}", "surrogate"},
    {DPT_ERROR_FORMAT, "{\"format\": \"\\u00\"}", NULL},
    {DPT_ERROR_FORMAT, "{\"format\": \"\\u0000\"}", "NUL"},
    {DPT_ERROR_FORMAT, "{'format': 'dptrain.model'}", NULL},
    {DPT_ERROR_FORMAT, "{\"format\" \"dptrain.model\"}", "':'"},
    {DPT_ERROR_FORMAT, "{\"format\": tru}", NULL},
    {DPT_ERROR_FORMAT, "// a comment\n{}", NULL},
    {DPT_ERROR_FORMAT, "{\"format\": \"dptrain.model\", /* c */ \"version\": 1}", NULL},
    {DPT_ERROR_FORMAT,
     "{\"format\": \"\\u0064ptrain.model\", \"version\": 1, \"input\": [1], \"nodes\": [1e]}", "digit"},
    {DPT_ERROR_FORMAT, "\xef\xbb\xbf{}", NULL},
};

static void test_bad_json(void **state) {
  size_t i;
  int failures = 0;
  (void)state;
  for (i = 0; i < sizeof json_rows / sizeof json_rows[0]; ++i) {
    dpt_model *out = (dpt_model *)&failures; /* a sentinel: must stay untouched */
    const json_row *r = &json_rows[i];
    const dpt_status s = dpt_model_from_json(&out, r->text);
    failures += tu_check_status(s, r->want, r->text, __FILE__, __LINE__);
    if (out != (dpt_model *)&failures) {
      print_error("row %zu wrote *out\n", i);
      ++failures;
      if (s == DPT_OK) dpt_model_destroy(out);
    }
    if (s != DPT_OK && r->needle != NULL && strstr(dpt_last_error_message(), r->needle) == NULL) {
      print_error("row %zu (%s): the message does not contain '%s': %s\n", i, r->text, r->needle,
                  dpt_last_error_message());
      ++failures;
    }
  }
  if (failures != 0) fail_msg("%d bad JSON rows failed", failures);
}

static dpt_status from_text(const char *text) {
  dpt_model *m = NULL;
  const dpt_status s = dpt_model_from_json(&m, text);
  dpt_model_destroy(m);
  return s;
}

/* The limits: nesting, size, keys per object; a tiny hand-written model with defaults (no name, no output).
 */
static void test_json_limits(void **state) {
  enum { DEEP = 100, KEYS = 300 };
  char deep[2 * DEEP + 2], *big, *keys;
  size_t i, used = 0;
  const size_t big_size = ((size_t)4 << 20) + 2;
  (void)state;
  for (i = 0; i < DEEP; ++i) deep[i] = '[';
  for (i = 0; i < DEEP; ++i) deep[DEEP + i] = ']';
  deep[2 * DEEP] = '\0';
  EXPECT_STATUS(DPT_ERROR_FORMAT, from_text(deep));
  assert_non_null(strstr(dpt_last_error_message(), "nested"));

  big = malloc(big_size);
  assert_non_null(big);
  memset(big, ' ', big_size - 1);
  big[0] = '{';
  big[big_size - 2] = '}';
  big[big_size - 1] = '\0';
  EXPECT_STATUS(DPT_ERROR_FORMAT, from_text(big));
  assert_non_null(strstr(dpt_last_error_message(), "bytes"));
  free(big);

  keys = malloc(KEYS * 16 + 8);
  assert_non_null(keys);
  used += (size_t)sprintf(keys, "{");
  for (i = 0; i < KEYS; ++i) used += (size_t)sprintf(keys + used, "%s\"k%zu\": 0", i ? ", " : "", i);
  sprintf(keys + used, "}");
  EXPECT_STATUS(DPT_ERROR_FORMAT, from_text(keys));
  assert_non_null(strstr(dpt_last_error_message(), "keys"));
  free(keys);

  {
    /* 65536 nodes are accepted, one more is not. */
    const size_t nodes = 65537, size = 128 + nodes * 48;
    char *text = malloc(size);
    dpt_model *m = NULL;
    size_t layers = 0;
    assert_non_null(text);
    used =
        (size_t)sprintf(text, "{\"format\": \"dptrain.model\", \"version\": 1, \"input\": [4], \"nodes\": [");
    for (i = 0; i < nodes; ++i)
      used += (size_t)sprintf(text + used, "%s{\"op\": \"relu\", \"inputs\": [%zu]}", i ? ",\n" : "", i);
    sprintf(text + used, "]}");
    EXPECT_STATUS(DPT_ERROR_FORMAT, from_text(text));
    assert_non_null(strstr(dpt_last_error_message(), "more than 65536 nodes"));
    used -= strlen(",\n{\"op\": \"relu\", \"inputs\": [65536]}");
    sprintf(text + used, "]}");
    ASSERT_OK(dpt_model_from_json(&m, text));
    ASSERT_OK(dpt_model_layer_count(m, &layers));
    assert_int_equal(layers, 65536);
    dpt_model_destroy(m);
    free(text);
  }
  {
    /* Written by hand: names and output left out, white space anywhere, a real given as an integer. */
    dpt_model *m = NULL;
    char *text;
    size_t n = 0;
    ASSERT_OK(
        dpt_model_from_json(&m,
                            " {\"nodes\" : [\n {\"inputs\": [0], \"op\": \"flatten\"},\n"
                            "  {\"op\": \"layer_norm\", \"inputs\": [1], \"eps\": 1},\r\n"
                            "  {\"op\": \"dense\", \"inputs\": [2], \"units\": 3, \"bias\": 1}],\t"
                            "\"input\": [1, 2, 2], \"version\": 1, \"format\": \"dptrain.\\u006dodel\"}\n"));
    text = describe(m);
    assert_string_equal(text, "1x2x2 flatten layernorm:1 dense:3");
    free(text);
    ASSERT_OK(dpt_model_output(m, &n));
    assert_int_equal(n, 3);
    ASSERT_OK(dpt_model_parameter_count(m, &n));
    assert_int_equal(n, 4 + 4 + 12 + 3);
    text = to_json(m);
    assert_non_null(strstr(text, "\"name\": \"1\""));
    assert_non_null(strstr(text, "\"eps\": 1}"));
    free(text);
    dpt_model_destroy(m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_residual_net_tensors),
      cmocka_unit_test(test_residual_net_named_tensors),
      cmocka_unit_test(test_residual_net_json_round_trip),
      cmocka_unit_test(test_buffers_get_set),
      cmocka_unit_test(test_lenet_by_hand),
      cmocka_unit_test(test_builtin_json_round_trip),
      cmocka_unit_test(test_resnet18_by_hand),
      cmocka_unit_test(test_every_op),
      cmocka_unit_test(test_bad_ids_and_names),
      cmocka_unit_test(test_bad_json),
      cmocka_unit_test(test_json_limits),
  };
  return cmocka_run_group_tests(tests, setup_context, teardown_context);
}
