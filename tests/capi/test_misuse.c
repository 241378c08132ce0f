/*
 * Misuse of every exported function: NULL handles and pointers, wrong and overflowing lengths,
 * out-of-range indices and labels, bad enum values and bad options; files that are missing, not regular,
 * truncated or do not fit the model (safetensors).
 *
 * Every row of the tables below checks that the call returns the documented status (or the most
 * specific sensible one), that dpt_last_error_message() is a fresh, non-empty single line, that every
 * out-parameter is untouched, and that the fixture's handles are unchanged (trainer checksum, layer and
 * parameter counts, dataset size). A table reports all of its failing rows before failing the test.
 * After each table, valid calls on the same handles must still succeed with the right values.
 *
 * Fixture: a context with 2 CPU devices, a model 1x4x4 -> dense 3 (51 parameters), a trainer on both
 * devices, an 8-sample dataset that fits the model and two that do not.
 */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dptrain/dptrain.h>

#include "portable.h"
#include "test_util.h"

enum {
  IN = 16,     /* floats per sample: 1 x 4 x 4 */
  CLASSES = 3, /* outputs of the model */
  PARAMS = IN * CLASSES + CLASSES,
  BATCH = 4,       /* batch used by step / evaluate / predict rows */
  SAMPLES = 8,     /* samples of the fixture datasets */
  DEVICES = 2,     /* devices of the fixture context and trainer */
  OUT_FLOATS = 128 /* SAMPLES * IN */
};

#define BATCH_IN ((size_t)BATCH * IN)
#define BATCH_LOGITS ((size_t)BATCH * CLASSES)
#define HALF_SIZE ((size_t)1 << (sizeof(size_t) * CHAR_BIT - 1)) /* 2 * HALF_SIZE wraps to 0 */
#define STALE_MARKER "dpt-stale-message-marker"

/* Everything a failing call could write to. Reset to sentinels before each row, compared after. */
typedef struct outs {
  dpt_context *context;
  dpt_model *model;
  dpt_dataset *dataset;
  dpt_trainer *trainer;
  size_t size, size2, size3;
  uint64_t u64;
  float floats[OUT_FLOATS];
  int32_t labels[SAMPLES];
  size_t counts[DEVICES + 2];
  dpt_step_result step;
  dpt_eval_result eval;
  dpt_fit_result fit;
  dpt_device_info info;
  dpt_backend_info backend;
  dpt_replica_memory memory;
  dpt_replica_times times;
  int flag;
  char text[DPT_MODEL_NAME_CAPACITY];
  size_t dims[DPT_MODEL_MAX_RANK];
} outs;

typedef struct fixture {
  dpt_context *ctx;
  dpt_model *model; /* 1x4x4 -> dense 3 */
  dpt_model *empty; /* 1x4x4, no layers */
  dpt_trainer *trainer;
  dpt_dataset *data;        /* 8 samples 1x4x4, 3 classes */
  dpt_dataset *bad_shape;   /* 8 samples 1x3x3, 3 classes */
  dpt_dataset *bad_classes; /* 8 samples 1x4x4, 5 classes, labels up to 4 */
  float in[OUT_FLOATS];
  int32_t lab[SAMPLES];
  int32_t lab_neg[BATCH];  /* one label -2 (-1 is DPT_IGNORE_LABEL) */
  int32_t lab_high[BATCH]; /* one label == CLASSES */
  int32_t lab_max[BATCH];  /* one label INT32_MAX */
  float params[PARAMS + 1];
  dpt_fit_options fit_options; /* valid: 1 epoch, batch 4, no shuffle */

  /* Baselines of the invariants. */
  uint64_t checksum;
  size_t model_layers, model_params, empty_layers, data_samples;

  outs o, snapshot;
  int stale_marker_usable;
  int failures, rows;
} fixture;

/* Distinct addresses that a library could never hand out. */
static union {
  void *pointer;
  long double number;
  uint64_t integer;
} sentinel_objects[4];
#define SENTINEL_CONTEXT ((dpt_context *)(void *)&sentinel_objects[0])
#define SENTINEL_MODEL ((dpt_model *)(void *)&sentinel_objects[1])
#define SENTINEL_DATASET ((dpt_dataset *)(void *)&sentinel_objects[2])
#define SENTINEL_TRAINER ((dpt_trainer *)(void *)&sentinel_objects[3])

/* ---- fixture --------------------------------------------------------------------------------- */

static dpt_status make_dataset(dpt_dataset **out, const float *inputs, size_t samples, size_t height,
                               size_t width, size_t classes) {
  int32_t labels[SAMPLES];
  size_t i;
  for (i = 0; i < samples; ++i) labels[i] = (int32_t)(i % classes);
  return dpt_dataset_create(out, inputs, samples * height * width, labels, samples, 1, height, width,
                            classes);
}

static int setup(void **state) {
  fixture *f = (fixture *)calloc(1, sizeof *f);
  dpt_context_options context_options;
  dpt_trainer_options trainer_options;
  size_t i;
  if (f == NULL) return -1;
  *state = f;

  for (i = 0; i < OUT_FLOATS; ++i) f->in[i] = (float)((int)((i * 37) % 17) - 8) / 16.0f;
  for (i = 0; i < SAMPLES; ++i) f->lab[i] = (int32_t)(i % CLASSES);
  for (i = 0; i < BATCH; ++i) f->lab_neg[i] = f->lab_high[i] = f->lab_max[i] = f->lab[i];
  f->lab_neg[2] = -2;
  f->lab_high[3] = CLASSES;
  f->lab_max[1] = INT32_MAX;
  for (i = 0; i < PARAMS + 1; ++i) f->params[i] = 0.01f * (float)i - 0.25f;

  dpt_context_options_init(&context_options);
  context_options.cpu_devices = DEVICES;
  dpt_trainer_options_init(&trainer_options);
  trainer_options.seed = 7;
  dpt_fit_options_init(&f->fit_options);
  f->fit_options.epochs = 1;
  f->fit_options.batch_size = BATCH;
  f->fit_options.shuffle = 0;

  if (dpt_context_create(&f->ctx, &context_options) != DPT_OK ||
      dpt_model_create(&f->model, 1, 4, 4) != DPT_OK || dpt_model_add_dense(f->model, CLASSES) != DPT_OK ||
      dpt_model_create(&f->empty, 1, 4, 4) != DPT_OK ||
      dpt_trainer_create(&f->trainer, f->ctx, f->model, &trainer_options, NULL) != DPT_OK ||
      make_dataset(&f->data, f->in, SAMPLES, 4, 4, CLASSES) != DPT_OK ||
      make_dataset(&f->bad_shape, f->in, SAMPLES, 3, 3, CLASSES) != DPT_OK ||
      make_dataset(&f->bad_classes, f->in, SAMPLES, 4, 4, 5) != DPT_OK ||
      dpt_trainer_parameter_checksum(f->trainer, &f->checksum) != DPT_OK ||
      dpt_model_layer_count(f->model, &f->model_layers) != DPT_OK ||
      dpt_model_parameter_count(f->model, &f->model_params) != DPT_OK ||
      dpt_model_layer_count(f->empty, &f->empty_layers) != DPT_OK ||
      dpt_dataset_sample_count(f->data, &f->data_samples) != DPT_OK) {
    print_error("fixture setup failed: %s\n", dpt_last_error_message());
    return -1;
  }
  /* A failing call whose message is recognisable: each row must replace it with its own. */
  {
    dpt_dataset *ignored = NULL;
    (void)dpt_dataset_load_idx(&ignored, "/nonexistent/" STALE_MARKER, "/nonexistent/" STALE_MARKER);
    f->stale_marker_usable = strstr(dpt_last_error_message(), STALE_MARKER) != NULL;
  }
  return 0;
}

static int teardown(void **state) {
  fixture *f = (fixture *)*state;
  if (f == NULL) return 0;
  dpt_trainer_destroy(f->trainer);
  dpt_dataset_destroy(f->data);
  dpt_dataset_destroy(f->bad_shape);
  dpt_dataset_destroy(f->bad_classes);
  dpt_model_destroy(f->model);
  dpt_model_destroy(f->empty);
  dpt_context_destroy(f->ctx);
  free(f);
  return 0;
}

/* ---- the row checker ------------------------------------------------------------------------- */

static void reset_outs(outs *o) {
  memset(o, 0xA5, sizeof *o);
  o->context = SENTINEL_CONTEXT;
  o->model = SENTINEL_MODEL;
  o->dataset = SENTINEL_DATASET;
  o->trainer = SENTINEL_TRAINER;
  o->step.struct_size = sizeof o->step;
  o->eval.struct_size = sizeof o->eval;
  o->fit.struct_size = sizeof o->fit;
  o->info.struct_size = sizeof o->info;
  o->backend.struct_size = sizeof o->backend;
  o->memory.struct_size = sizeof o->memory;
  o->times.struct_size = sizeof o->times;
}

static void row_begin(fixture *f) {
  if (f->stale_marker_usable) {
    dpt_dataset *ignored = NULL;
    (void)dpt_dataset_load_idx(&ignored, "/nonexistent/" STALE_MARKER, "/nonexistent/" STALE_MARKER);
  }
  reset_outs(&f->o);
  memcpy(&f->snapshot, &f->o, sizeof f->o);
}

/* Reports (and destroys) a handle that a failing constructor wrote. */
static int check_out_handle(void *now, void *sentinel, const char *name, const char *what, int line,
                            void (*destroy)(void *)) {
  if (now == sentinel) return 0;
  print_error("test_misuse.c:%d: %s: wrote %s (%p) although it failed or should have\n", line, what, name,
              now);
  if (now != NULL) destroy(now);
  return 1;
}
static void destroy_context(void *p) {
  dpt_context_destroy((dpt_context *)p);
}
static void destroy_model(void *p) {
  dpt_model_destroy((dpt_model *)p);
}
static void destroy_dataset(void *p) {
  dpt_dataset_destroy((dpt_dataset *)p);
}
static void destroy_trainer(void *p) {
  dpt_trainer_destroy((dpt_trainer *)p);
}

/* Checks the fixture's handles; re-baselines after a change so that only one row is blamed. */
static int check_invariants(fixture *f, const char *what, int line) {
  int problems = 0;
  uint64_t checksum = 0;
  size_t n = 0;
  if (dpt_trainer_parameter_checksum(f->trainer, &checksum) != DPT_OK || checksum != f->checksum) {
    print_error("test_misuse.c:%d: %s: the trainer's parameters changed\n", line, what);
    f->checksum = checksum;
    ++problems;
  }
  if (dpt_model_layer_count(f->model, &n) != DPT_OK || n != f->model_layers) {
    print_error("test_misuse.c:%d: %s: the model's layer count changed (%zu -> %zu)\n", line, what,
                f->model_layers, n);
    f->model_layers = n;
    ++problems;
  }
  if (dpt_model_parameter_count(f->model, &n) != DPT_OK || n != f->model_params) {
    print_error("test_misuse.c:%d: %s: the model's parameter count changed\n", line, what);
    f->model_params = n;
    ++problems;
  }
  if (dpt_model_layer_count(f->empty, &n) != DPT_OK || n != f->empty_layers) {
    print_error("test_misuse.c:%d: %s: the empty model gained a layer\n", line, what);
    f->empty_layers = n;
    ++problems;
  }
  if (dpt_dataset_sample_count(f->data, &n) != DPT_OK || n != f->data_samples) {
    print_error("test_misuse.c:%d: %s: the dataset's sample count changed\n", line, what);
    f->data_samples = n;
    ++problems;
  }
  return problems;
}

static void row_end(fixture *f, int want, dpt_status got, const char *what, int line) {
  int problems = tu_check_status(got, want, what, "test_misuse.c", line);
  outs *o = &f->o;
  if (got != DPT_OK && f->stale_marker_usable && strstr(dpt_last_error_message(), STALE_MARKER) != NULL) {
    print_error("test_misuse.c:%d: %s: failed without setting its own message (still \"%s\")\n", line, what,
                dpt_last_error_message());
    ++problems;
  }
  problems += check_out_handle(o->context, SENTINEL_CONTEXT, "*out (context)", what, line, destroy_context);
  problems += check_out_handle(o->model, SENTINEL_MODEL, "*out (model)", what, line, destroy_model);
  problems += check_out_handle(o->dataset, SENTINEL_DATASET, "*out (dataset)", what, line, destroy_dataset);
  problems += check_out_handle(o->trainer, SENTINEL_TRAINER, "*out (trainer)", what, line, destroy_trainer);
  o->context = SENTINEL_CONTEXT;
  o->model = SENTINEL_MODEL;
  o->dataset = SENTINEL_DATASET;
  o->trainer = SENTINEL_TRAINER;
  if (memcmp(&f->o, &f->snapshot, sizeof f->o) != 0) {
    print_error("test_misuse.c:%d: %s: wrote an output buffer or result although it failed\n", line, what);
    ++problems;
  }
  problems += check_invariants(f, what, line);
  f->failures += problems != 0;
  ++f->rows;
}

/* One row of a misuse table: the expected status and the call. */
#define ROW(want, call)                          \
  do {                                           \
    row_begin(f);                                \
    row_end(f, (want), (call), #call, __LINE__); \
  } while (0)

static void finish_table(fixture *f) {
  if (f->failures != 0) {
    print_error("%d of %d rows failed\n", f->failures, f->rows);
    fail();
  }
}

/* ---- options tables: rows that set a few fields of an options struct ------------------------- */

typedef struct field_set {
  size_t offset;
  size_t size; /* 0 ends the list */
  char kind;   /* 'i' integer or enum, 'f' float, 'p' pointer */
  double number;
  const void *pointer;
} field_set;

#define FIELD_SIZE(T, field) sizeof(((T *)0)->field)
#define SET_INT(T, field, value) \
  { offsetof(T, field), FIELD_SIZE(T, field), 'i', (double)(value), NULL }
#define SET_FLT(T, field, value) \
  { offsetof(T, field), FIELD_SIZE(T, field), 'f', (double)(value), NULL }
#define SET_PTR(T, field, value) \
  { offsetof(T, field), FIELD_SIZE(T, field), 'p', 0.0, (value) }

typedef struct option_row {
  const char *name;
  int want;
  field_set sets[4];
} option_row;

static void apply_fields(void *base, const field_set *sets) {
  size_t i;
  for (i = 0; i < 4 && sets[i].size != 0; ++i) {
    char *field = (char *)base + sets[i].offset;
    const field_set *s = &sets[i];
    if (s->kind == 'f' && s->size == sizeof(double)) {
      memcpy(field, &s->number, sizeof s->number);
    } else if (s->kind == 'f') {
      float v = (float)s->number;
      assert_int_equal(s->size, sizeof v);
      memcpy(field, &v, sizeof v);
    } else if (s->kind == 'p') {
      assert_int_equal(s->size, sizeof s->pointer);
      memcpy(field, &s->pointer, sizeof s->pointer);
    } else if (s->size == sizeof(int32_t)) {
      int32_t v = (int32_t)s->number;
      memcpy(field, &v, sizeof v);
    } else {
      uint64_t v = s->number < 0 ? (uint64_t)(int64_t)s->number : (uint64_t)s->number;
      assert_int_equal(s->size, sizeof v);
      memcpy(field, &v, sizeof v);
    }
  }
}

static const size_t dev_0_2[] = {0, 2};
static const size_t dev_huge[] = {SIZE_MAX};
static const size_t dev_0_0[] = {0, 0};
static const size_t dev_1_0_1[] = {1, 0, 1};
static const size_t dev_0_1[] = {0, 1};
static const float w_zero[] = {0.0f, 1.0f};
static const float w_zeros[] = {0.0f, 0.0f};
static const float w_negative[] = {-1.0f, 2.0f};

#define TOPT dpt_trainer_options
#define OOPT dpt_optimizer_options
#define FOPT dpt_fit_options
#define WEIGHTED(weights)                                                                                    \
  SET_INT(TOPT, split, DPT_SPLIT_WEIGHTED), SET_PTR(TOPT, devices, dev_0_1), SET_INT(TOPT, device_count, 2), \
      SET_PTR(TOPT, split_weights, weights)

/* Two stages on devices 0 and 1. */
#define PIPELINE_2 \
  SET_INT(TOPT, pipeline_stages, 2), SET_PTR(TOPT, devices, dev_0_1), SET_INT(TOPT, device_count, 2)
#define NORMAL_INIT SET_INT(TOPT, init, DPT_INIT_NORMAL)
#define ADAMW SET_INT(OOPT, kind, DPT_OPTIMIZER_ADAMW)
#define STEP_SCHEDULE SET_INT(OOPT, schedule, DPT_SCHEDULE_STEP)
#define COSINE SET_INT(OOPT, schedule, DPT_SCHEDULE_COSINE)

static void run_trainer_option_rows(fixture *f, const option_row *rows, size_t count, int optimizer) {
  size_t i;
  for (i = 0; i < count; ++i) {
    dpt_trainer_options topt;
    dpt_optimizer_options oopt;
    char what[160];
    dpt_trainer_options_init(&topt);
    dpt_optimizer_options_init(&oopt);
    if (optimizer)
      apply_fields(&oopt, rows[i].sets);
    else
      apply_fields(&topt, rows[i].sets);
    snprintf(what, sizeof what, "dpt_trainer_create with %s options: %s", optimizer ? "optimizer" : "trainer",
             rows[i].name);
    row_begin(f);
    row_end(f, rows[i].want, dpt_trainer_create(&f->o.trainer, f->ctx, f->model, &topt, &oopt), what,
            __LINE__);
  }
}

/* ---- status / version / options_init --------------------------------------------------------- */

static void test_status_and_init_functions(void **state) {
  const char *text;
  dpt_context_options c;
  dpt_trainer_options t;
  dpt_optimizer_options o;
  dpt_fit_options fo;
  (void)state;
  text = dpt_status_string((dpt_status)99);
  assert_non_null(text);
  assert_non_null(dpt_status_string((dpt_status)-5));
  assert_int_equal(dpt_status_category((dpt_status)99), 0);
  assert_int_equal(dpt_status_category((dpt_status)-5), 0); /* the header: 0 for negative values */
  assert_non_null(dpt_version_string());
  assert_int_equal(dpt_version_number(), DPT_VERSION_NUMBER);
  assert_non_null(dpt_last_error_message());

  /* _options_init accepts NULL; destructors accept NULL. */
  dpt_context_options_init(NULL);
  dpt_trainer_options_init(NULL);
  dpt_optimizer_options_init(NULL);
  dpt_fit_options_init(NULL);
  dpt_context_destroy(NULL);
  dpt_model_destroy(NULL);
  dpt_dataset_destroy(NULL);
  dpt_trainer_destroy(NULL);

  /* The documented defaults. */
  memset(&c, 0xA5, sizeof c);
  dpt_context_options_init(&c);
  assert_int_equal(c.struct_size, sizeof c);
  assert_int_equal(c.cpu_devices, 0);
  assert_int_equal(c.cpu_memory_limit, 0);

  memset(&t, 0xA5, sizeof t);
  dpt_trainer_options_init(&t);
  assert_int_equal(t.struct_size, sizeof t);
  assert_null(t.devices);
  assert_int_equal(t.device_count, 0);
  assert_int_equal(t.split, DPT_SPLIT_EVEN);
  assert_null(t.split_weights);
  assert_int_equal(t.allreduce, DPT_ALLREDUCE_RING);
  assert_int_equal(t.seed, 0);
  assert_int_equal(t.accumulation_steps, 1);
  assert_int_equal(t.init, DPT_INIT_UNIFORM_FAN_IN);
  assert_true(t.init_std == 0.01f);
  assert_int_equal(t.nonfinite, DPT_NONFINITE_SKIP);
  assert_true(t.timeout_seconds == 300.0);
  assert_int_equal(t.bucket_bytes, 1u << 20);
  assert_int_equal(t.communicator, DPT_COMMUNICATOR_LOCAL);
  assert_int_equal(t.batch_norm, DPT_BATCH_NORM_SYNC);
  assert_int_equal(t.precision, DPT_PRECISION_FP32);
  assert_true(t.initial_loss_scale == 65536.0);
  assert_int_equal(t.loss_scale_growth_interval, 2000);
  assert_int_equal(t.allreduce_dtype, DPT_PRECISION_FP32);
  assert_int_equal(t.activation_dtype, DPT_PRECISION_FP32);
  assert_int_equal(t.shard, DPT_SHARD_NONE);
  assert_int_equal(t.pipeline_stages, 0);
  assert_int_equal(t.micro_batches, 0);
  assert_int_equal(t.pipeline_schedule, DPT_PIPELINE_1F1B);
  assert_null(t.pipeline_cuts);
  assert_int_equal(t.shard_scope, DPT_SHARD_SCOPE_PROCESS);
  assert_int_equal(t.pipeline_scope, DPT_PIPELINE_SCOPE_PROCESS);
  assert_int_equal(t.pipeline_balance, DPT_PIPELINE_BALANCE_WORK);
  assert_int_equal(t.pipeline_balance_batch, 0);
  assert_int_equal(t.pipeline_copies, 0);

  memset(&o, 0xA5, sizeof o);
  dpt_optimizer_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.kind, DPT_OPTIMIZER_SGD);
  assert_true(o.learning_rate == 0.1f);
  assert_true(o.momentum == 0.0f);
  assert_int_equal(o.nesterov, 0);
  assert_true(o.weight_decay == 0.0f);
  assert_true(o.beta1 == 0.9f);
  assert_true(o.beta2 == 0.999f);
  assert_true(o.epsilon == 1e-8f);
  assert_int_equal(o.schedule, DPT_SCHEDULE_CONSTANT);
  assert_int_equal(o.warmup_steps, 0);
  assert_true(o.gamma == 0.1f);
  assert_true(o.min_learning_rate == 0.0f);
  assert_true(o.clip_norm == 0.0f);

  memset(&fo, 0xA5, sizeof fo);
  dpt_fit_options_init(&fo);
  assert_int_equal(fo.struct_size, sizeof fo);
  assert_int_equal(fo.epochs, 1);
  assert_int_equal(fo.batch_size, 256);
  assert_true(fo.shuffle != 0);
  assert_int_equal(fo.progress_every, 0);
  assert_null(fo.progress);
  assert_null(fo.user_data);
  assert_int_equal(fo.eval_batch_size, 1000);
}

/* ---- contexts and devices -------------------------------------------------------------------- */

/* The MPI world: NULL outputs are refused before MPI is touched; finalizing a world never started is a no-op.
 */
static void test_world_misuse(void **state) {
  size_t rank = 7, size = 7;
  (void)state;
  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_world_get(NULL, &size));
  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_world_get(&rank, NULL));
  assert_int_equal(rank, 7);
  assert_int_equal(size, 7);
  assert_int_equal(dpt_world_finalize(), DPT_OK);
}

static void test_context_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_context_options opt;
  dpt_device_info info;
  dpt_backend_info backend;
  dpt_context *big = NULL;
  size_t count = 0;

  ROW(DPT_ERROR_NULL_POINTER, dpt_context_create(NULL, NULL));
  dpt_context_options_init(&opt);
  opt.struct_size = 0;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_context_create(&f->o.context, &opt));
  opt.struct_size = 1;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_context_create(&f->o.context, &opt));
  opt.struct_size = sizeof(size_t) - 1;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_context_create(&f->o.context, &opt));
  dpt_context_options_init(&opt);
  opt.cpu_devices = DPT_MAX_CPU_DEVICES + 1;
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_context_create(&f->o.context, &opt));
  opt.cpu_devices = SIZE_MAX;
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_context_create(&f->o.context, &opt));

  ROW(DPT_ERROR_NULL_POINTER, dpt_device_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_device_count(f->ctx, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_device_get_info(NULL, 0, &f->o.info));
  ROW(DPT_ERROR_NULL_POINTER, dpt_device_get_info(f->ctx, 0, NULL));
  /* A device index of the context: "a requested device does not exist" (as dpt_trainer_create). */
  ROW(DPT_ERROR_DEVICE_NOT_FOUND, dpt_device_get_info(f->ctx, DEVICES, &f->o.info));
  ROW(DPT_ERROR_DEVICE_NOT_FOUND, dpt_device_get_info(f->ctx, SIZE_MAX, &f->o.info));
  memset(&info, 0xA5, sizeof info);
  info.struct_size = 0;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_device_get_info(f->ctx, 0, &info));
  assert_int_equal(info.struct_size, 0);
  assert_int_equal(info.ordinal, (size_t)0xA5A5A5A5A5A5A5A5ull);

  /* device_selection must be a dpt_device_selection value. */
  dpt_context_options_init(&opt);
  opt.device_selection = (dpt_device_selection)3;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_context_create(&f->o.context, &opt));
  opt.device_selection = (dpt_device_selection)-1;
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_context_create(&f->o.context, &opt));

  ROW(DPT_ERROR_NULL_POINTER, dpt_device_can_access_peer(NULL, 0, 1, &f->o.flag));
  ROW(DPT_ERROR_NULL_POINTER, dpt_device_can_access_peer(f->ctx, 0, 1, NULL));
  ROW(DPT_ERROR_DEVICE_NOT_FOUND, dpt_device_can_access_peer(f->ctx, DEVICES, 0, &f->o.flag));
  ROW(DPT_ERROR_DEVICE_NOT_FOUND, dpt_device_can_access_peer(f->ctx, 0, DEVICES, &f->o.flag));
  ROW(DPT_ERROR_DEVICE_NOT_FOUND, dpt_device_can_access_peer(f->ctx, SIZE_MAX, SIZE_MAX, &f->o.flag));

  ROW(DPT_ERROR_NULL_POINTER, dpt_backend_get_info(NULL, DPT_DEVICE_CUDA, &f->o.backend));
  ROW(DPT_ERROR_NULL_POINTER, dpt_backend_get_info(f->ctx, DPT_DEVICE_CUDA, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_backend_get_info(f->ctx, (dpt_device_kind)0, &f->o.backend));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_backend_get_info(f->ctx, (dpt_device_kind)3, &f->o.backend));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_backend_get_info(f->ctx, (dpt_device_kind)-1, &f->o.backend));
  memset(&backend, 0xA5, sizeof backend);
  backend.struct_size = offsetof(dpt_backend_info, versions); /* the struct has always had versions */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_backend_get_info(f->ctx, DPT_DEVICE_CPU, &backend));
  assert_int_equal(backend.device_count, (size_t)0xA5A5A5A5A5A5A5A5ull);
  finish_table(f);

  /* Still usable, with the right values. */
  ASSERT_OK(dpt_device_count(f->ctx, &count));
  assert_int_equal(count, DEVICES);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_OK(dpt_device_get_info(f->ctx, 1, &info));
  assert_int_equal(info.kind, DPT_DEVICE_CPU);
  assert_int_equal(info.ordinal, 1);
  assert_string_equal(info.name, "cpu:1");
  assert_int_equal(info.memory_limit, 0);
  assert_true(info.total_memory > 0);

  /* The largest context is allowed. */
  dpt_context_options_init(&opt);
  opt.cpu_devices = DPT_MAX_CPU_DEVICES;
  ASSERT_OK(dpt_context_create(&big, &opt));
  ASSERT_OK(dpt_device_count(big, &count));
  assert_int_equal(count, DPT_MAX_CPU_DEVICES);
  info.struct_size = sizeof info;
  ASSERT_OK(dpt_device_get_info(big, DPT_MAX_CPU_DEVICES - 1, &info));
  assert_string_equal(info.name, "cpu:63");
  dpt_context_destroy(big);
}

/* A device_info with a smaller struct_size: the library writes only that many bytes. */
static void test_device_info_partial_struct(void **state) {
  fixture *f = (fixture *)*state;
  dpt_device_info info;
  dpt_status status;
  unsigned char tail[sizeof info];
  size_t size = offsetof(dpt_device_info, name);
  memset(&info, 0xA5, sizeof info);
  info.struct_size = size;
  memcpy(tail, &info, sizeof info);
  status = dpt_device_get_info(f->ctx, 1, &info);
  /* Either accepted (writing the prefix) or refused; never written past struct_size. */
  if (status != DPT_OK && status != DPT_ERROR_INVALID_ARGUMENT) {
    print_error("dpt_device_get_info with struct_size %zu returned %s\n", size, dpt_status_string(status));
    fail();
  }
  assert_memory_equal((unsigned char *)&info + size, tail + size, sizeof info - size);
  assert_int_equal(info.struct_size, size);
  if (status == DPT_OK) {
    assert_int_equal(info.kind, DPT_DEVICE_CPU);
    assert_int_equal(info.ordinal, 1);
  }
}

/* Callers built against 0.1 pass the 0.1 struct sizes: the appended fields take their defaults (options)
 * or are not written (results). */
static void test_structs_of_0_1(void **state) {
  fixture *f = (fixture *)*state;
  dpt_context_options opt;
  dpt_device_info info;
  dpt_backend_info backend;
  dpt_context *c = NULL;
  unsigned char before[sizeof info];
  size_t n = 0;
  const size_t options_0_1 = offsetof(dpt_context_options, cpu_memory_limit) + sizeof(uint64_t);
  const size_t info_0_1 = offsetof(dpt_device_info, memory_in_use) + sizeof(uint64_t);

  memset(&opt, 0xA5, sizeof opt); /* garbage where device_selection would be */
  opt.struct_size = options_0_1;
  opt.cpu_devices = DEVICES;
  opt.cpu_memory_limit = 0;
  ASSERT_OK(dpt_context_create(&c, &opt));
  ASSERT_OK(dpt_device_count(c, &n));
  assert_int_equal(n, DEVICES);
  memset(&backend, 0, sizeof backend);
  backend.struct_size = sizeof backend;
  ASSERT_OK(dpt_backend_get_info(c, DPT_DEVICE_CUDA, &backend));
  assert_int_equal(backend.requested, 0); /* CPU only, as in 0.1 */

  memset(&info, 0xA5, sizeof info);
  info.struct_size = info_0_1;
  memcpy(before, &info, sizeof info);
  ASSERT_OK(dpt_device_get_info(c, 1, &info));
  assert_int_equal(info.kind, DPT_DEVICE_CPU);
  assert_string_equal(info.name, "cpu:1");
  assert_int_equal(info.struct_size, info_0_1);
  assert_memory_equal((unsigned char *)&info + info_0_1, before + info_0_1, sizeof info - info_0_1);
  dpt_context_destroy(c);
  (void)f;
}

typedef struct env_row {
  const char *value;
  int want;
  size_t devices; /* when want == DPT_OK */
} env_row;

static void test_context_environment(void **state) {
  fixture *f = (fixture *)*state;
  static const env_row rows[] = {
    {"abc", DPT_ERROR_INVALID_ARGUMENT, 0},
    {"0", DPT_ERROR_INVALID_ARGUMENT, 0},
    {"-1", DPT_ERROR_INVALID_ARGUMENT, 0},
    {"3x", DPT_ERROR_INVALID_ARGUMENT, 0},
    {"1.5", DPT_ERROR_INVALID_ARGUMENT, 0},
  /* Set but empty is "not a positive integer" (the header's words), not "unset". */
#if !defined(_WIN32) /* Windows cannot hold an empty variable: setting "" removes it */
    {"", DPT_ERROR_INVALID_ARGUMENT, 0},
#endif
    {"65", DPT_ERROR_OUT_OF_RANGE, 0},
    /* A positive integer too large even for an integer type: out of range, or refused as unparsable. */
    {"99999999999999999999999999", WANT_TOO_BIG, 0},
    {"3", DPT_OK, 3},
    {"64", DPT_OK, 64},
  };
  const char *saved = getenv("DPTRAIN_CPU_DEVICES");
  char saved_copy[64] = "";
  int had = saved != NULL;
  size_t i;
  if (had) snprintf(saved_copy, sizeof saved_copy, "%s", saved);

  for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
    char what[128];
    assert_int_equal(test_setenv("DPTRAIN_CPU_DEVICES", rows[i].value), 0);
    snprintf(what, sizeof what, "dpt_context_create(&out, NULL) with DPTRAIN_CPU_DEVICES=\"%s\"",
             rows[i].value);
    if (rows[i].want == DPT_OK) {
      dpt_context *ctx = NULL;
      size_t count = 0;
      if (tu_check_status(dpt_context_create(&ctx, NULL), DPT_OK, what, __FILE__, __LINE__)) {
        ++f->failures;
        continue;
      }
      ASSERT_OK(dpt_device_count(ctx, &count));
      if (count != rows[i].devices) {
        print_error("%s: %zu devices, expected %zu\n", what, count, rows[i].devices);
        ++f->failures;
      }
      dpt_context_destroy(ctx);
    } else {
      row_begin(f);
      row_end(f, rows[i].want, dpt_context_create(&f->o.context, NULL), what, __LINE__);
    }
  }
  /* An explicit cpu_devices ignores the environment. */
  {
    dpt_context_options opt;
    dpt_context *ctx = NULL;
    size_t count = 0;
    assert_int_equal(test_setenv("DPTRAIN_CPU_DEVICES", "abc"), 0);
    dpt_context_options_init(&opt);
    opt.cpu_devices = 2;
    if (tu_check_status(dpt_context_create(&ctx, &opt), DPT_OK,
                        "cpu_devices = 2 with DPTRAIN_CPU_DEVICES=abc", __FILE__, __LINE__) == 0) {
      ASSERT_OK(dpt_device_count(ctx, &count));
      assert_int_equal(count, 2);
      dpt_context_destroy(ctx);
    } else {
      ++f->failures;
    }
  }
  if (had)
    test_setenv("DPTRAIN_CPU_DEVICES", saved_copy);
  else
    test_unsetenv("DPTRAIN_CPU_DEVICES");
  finish_table(f);
}

/* A 1-byte arena cannot hold a replica; a small arena cannot hold a huge slice but stays usable. */
static void test_out_of_memory(void **state) {
  fixture *f = (fixture *)*state;
  dpt_context_options opt;
  dpt_context *tiny = NULL, *small = NULL;
  dpt_trainer *trainer = NULL;
  dpt_device_info info;
  dpt_step_result result;
  uint64_t in_use = 0, before = 0, after = 0;
  const size_t huge_batch = 20000;
  float *inputs;
  int32_t *labels;
  size_t i;

  dpt_context_options_init(&opt);
  opt.cpu_devices = DEVICES;
  opt.cpu_memory_limit = 1;
  ASSERT_OK(dpt_context_create(&tiny, &opt));
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_OK(dpt_device_get_info(tiny, 0, &info));
  assert_int_equal(info.memory_limit, 1);
  assert_int_equal(info.total_memory, 1);
  ROW(DPT_ERROR_OUT_OF_MEMORY, dpt_trainer_create(&f->o.trainer, tiny, f->model, NULL, NULL));
  dpt_context_destroy(tiny);

  /* Measure what a trainer needs, then cap the arena a little above it. */
  ASSERT_OK(dpt_device_get_info(f->ctx, 0, &info));
  in_use = info.memory_in_use;
  opt.cpu_memory_limit = in_use + 64 * 1024;
  ASSERT_OK(dpt_context_create(&small, &opt));
  ASSERT_OK(dpt_trainer_create(&trainer, small, f->model, NULL, NULL));
  ASSERT_OK(dpt_trainer_parameter_checksum(trainer, &before));

  inputs = (float *)malloc(huge_batch * IN * sizeof *inputs);
  labels = (int32_t *)malloc(huge_batch * sizeof *labels);
  assert_non_null(inputs);
  assert_non_null(labels);
  for (i = 0; i < huge_batch * IN; ++i) inputs[i] = f->in[i % OUT_FLOATS];
  for (i = 0; i < huge_batch; ++i) labels[i] = (int32_t)(i % CLASSES);
  /* A 10000-sample slice (640 KB of inputs alone) does not fit 64 KB above the replica. */
  EXPECT_STATUS(DPT_ERROR_OUT_OF_MEMORY,
                dpt_trainer_step(trainer, inputs, huge_batch * IN, labels, huge_batch, NULL));
  ASSERT_OK(dpt_trainer_parameter_checksum(trainer, &after));
  assert_true(after == before);
  /* ... and the trainer stays usable. */
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_step(trainer, inputs, BATCH_IN, labels, BATCH, &result));
  assert_int_equal(result.samples, BATCH);
  assert_int_equal(result.applied, 1);
  assert_int_equal(result.optimizer_steps, 1);
  ASSERT_OK(dpt_trainer_parameter_checksum(trainer, &after));
  assert_true(after != before);
  free(inputs);
  free(labels);
  dpt_trainer_destroy(trainer);
  dpt_context_destroy(small);
  finish_table(f);
}

/* ---- models ---------------------------------------------------------------------------------- */

static void test_model_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_model *m = f->model; /* 1x4x4 -> dense 3: output 3 x 1 x 1 */
  dpt_model *e = f->empty; /* 1x4x4 */
  size_t n = 0;

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_create(NULL, 1, 4, 4));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, 0, 4, 4));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, 1, 0, 4));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, 1, 4, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, 1, 16384, 16385)); /* 2^28 + 16384 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, SIZE_MAX, SIZE_MAX, SIZE_MAX));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, HALF_SIZE, 2, 1)); /* product wraps to 0 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create(&f->o.model, HALF_SIZE + 1, 2, 1)); /* wraps to 2 */

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_create_builtin(NULL, "mlp"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_create_builtin(&f->o.model, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create_builtin(&f->o.model, "resnet"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create_builtin(&f->o.model, ""));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create_builtin(&f->o.model, "mlp "));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_dense(NULL, 3));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_dense(m, 0));
  ROW(WANT_TOO_BIG, dpt_model_add_dense(m, SIZE_MAX));
  ROW(WANT_TOO_BIG, dpt_model_add_dense(m, HALF_SIZE)); /* 3 * units + units overflows */

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_conv2d(NULL, 2, 3, 1, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 0, 3, 1, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 2, 0, 1, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 2, 3, 0, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 2, 5, 1, 0)); /* 5 > 4 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 2, 7, 1, 1)); /* 7 > 4 + 2 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(m, 2, 3, 1, 0)); /* on a 3 x 1 x 1 output */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_conv2d(e, 2, SIZE_MAX, 1, 0));
  ROW(WANT_TOO_BIG, dpt_model_add_conv2d(e, 2, 3, 1, HALF_SIZE)); /* 4 + 2 * padding wraps to 4 */
  ROW(WANT_TOO_BIG, dpt_model_add_conv2d(e, 2, 3, 1, SIZE_MAX / 2));
  ROW(WANT_TOO_BIG, dpt_model_add_conv2d(e, SIZE_MAX, 3, 1, 0));
  ROW(WANT_TOO_BIG, dpt_model_add_conv2d(e, HALF_SIZE, 3, 1, 0));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_pool(NULL, DPT_POOL_MAX, 2, 2));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, (dpt_pool_kind)99, 2, 2));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, (dpt_pool_kind)-1, 2, 2));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, DPT_POOL_AVG, 0, 2));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, DPT_POOL_AVG, 2, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, DPT_POOL_AVG, 5, 1)); /* window > 4 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(e, DPT_POOL_MAX, SIZE_MAX, 1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_pool(m, DPT_POOL_MAX, 2, 2)); /* on a 3 x 1 x 1 output */

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_activation(NULL, DPT_ACTIVATION_RELU));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_activation(e, (dpt_activation)99));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_activation(e, (dpt_activation)-1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add_activation(e, (dpt_activation)5)); /* GELU_TANH + 1 */

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_flatten(NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add_dropout(NULL, 0.5f));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, 1.0f));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, 1.5f));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, -0.1f));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, -FLT_MIN));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, NAN));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, INFINITY));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_add_dropout(e, -INFINITY));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_input_size(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_input_size(m, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_output_size(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_output_size(m, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_parameter_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_parameter_count(m, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_layer_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_layer_count(m, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_describe(NULL, NULL, 0, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_describe(m, NULL, 16, &f->o.size)); /* NULL buffer, capacity 16 */
  finish_table(f);

  /* Still usable, with the right values. */
  ASSERT_OK(dpt_model_input_size(m, &n));
  assert_int_equal(n, IN);
  ASSERT_OK(dpt_model_output_size(m, &n));
  assert_int_equal(n, CLASSES);
  ASSERT_OK(dpt_model_parameter_count(m, &n));
  assert_int_equal(n, PARAMS);
  ASSERT_OK(dpt_model_add_dropout(m, 0.0f));
  ASSERT_OK(dpt_model_add_dense(m, 2));
  ASSERT_OK(dpt_model_layer_count(m, &n));
  assert_int_equal(n, 3);
  ASSERT_OK(dpt_model_parameter_count(m, &n));
  assert_int_equal(n, PARAMS + 3 * 2 + 2);
  ASSERT_OK(dpt_model_output_size(m, &n));
  assert_int_equal(n, 2);
  /* The boundaries are allowed: 2^28 floats, a kernel that fits the padded input, rate just below 1. */
  {
    dpt_model *big = NULL;
    ASSERT_OK(dpt_model_create(&big, 1, 16384, 16384));
    ASSERT_OK(dpt_model_input_size(big, &n));
    assert_int_equal(n, (size_t)1 << 28);
    dpt_model_destroy(big);
  }
  ASSERT_OK(dpt_model_add_conv2d(e, 2, 6, 1, 1)); /* 6 == 4 + 2: 2 x 1 x 1 */
  ASSERT_OK(dpt_model_add_dropout(e, 0.99f));
  ASSERT_OK(dpt_model_add_flatten(e));
  ASSERT_OK(dpt_model_layer_count(e, &n));
  assert_int_equal(n, 3);
  ASSERT_OK(dpt_model_output_size(e, &n));
  assert_int_equal(n, 2);
  ASSERT_OK(dpt_model_parameter_count(e, &n));
  assert_int_equal(n, 2 * 1 * 6 * 6 + 2);
}

static void test_model_builtins(void **state) {
  static const struct {
    const char *name;
    size_t parameters, layers;
  } rows[] = {{"mlp", 784 * 256 + 256 + 256 * 10 + 10, 4},
              {"lenet", 20 * 9 + 20 + 50 * 20 * 25 + 50 + 800 * 128 + 128 + 128 * 10 + 10, 10}};
  size_t i, n;
  (void)state;
  for (i = 0; i < 2; ++i) {
    dpt_model *model = NULL;
    ASSERT_OK(dpt_model_create_builtin(&model, rows[i].name));
    ASSERT_OK(dpt_model_input_size(model, &n));
    assert_int_equal(n, 784);
    ASSERT_OK(dpt_model_output_size(model, &n));
    assert_int_equal(n, 10);
    ASSERT_OK(dpt_model_parameter_count(model, &n));
    assert_int_equal(n, rows[i].parameters);
    ASSERT_OK(dpt_model_layer_count(model, &n));
    assert_int_equal(n, rows[i].layers);
    dpt_model_destroy(model);
  }
}

static void test_model_describe(void **state) {
  fixture *f = (fixture *)*state;
  char buffer[256];
  size_t needed = 0, again = 0;

  /* Size query: capacity 0, buffer NULL. */
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_describe(f->model, NULL, 0, &needed));
  assert_true(needed > 1 && needed < sizeof buffer - 8);

  /* One byte short: too small, needed reported again, nothing written past the capacity. */
  memset(buffer, 'Z', sizeof buffer);
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_describe(f->model, buffer, needed - 1, &again));
  assert_int_equal(again, needed);
  assert_int_equal(buffer[needed - 1], 'Z');
  /* Too small without a needed pointer is still an error, not a crash. */
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_describe(f->model, buffer, 1, NULL));

  /* Exactly the needed capacity. */
  memset(buffer, 'Z', sizeof buffer);
  again = 0;
  ASSERT_OK(dpt_model_describe(f->model, buffer, needed, &again));
  assert_int_equal(again, needed);
  assert_int_equal(strlen(buffer), needed - 1);
  assert_int_equal(buffer[needed], 'Z');
  assert_null(strchr(buffer, '\n'));
  assert_true(strncmp(buffer, "1x4x4", 5) == 0);
  assert_non_null(strstr(buffer, "dense:3"));
  /* needed may be NULL. */
  ASSERT_OK(dpt_model_describe(f->model, buffer, sizeof buffer, NULL));
  assert_int_equal(strlen(buffer), needed - 1);
}

/* The graph calls of 0.2 on the fixture's models: tensors 0 (1x4x4) and 1 (3) of f->model, 0 of f->empty. */
static void test_graph_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_model *m = f->model;
  dpt_model *e = f->empty;
  size_t *out = &f->o.size;
  size_t n = 0, t = 0;
  static const size_t pair[2] = {0, 0}, bad_pair[2] = {0, 7}, mixed[2] = {0, 1}, four[5] = {0, 0, 0, 0, 0};
  char long_name[202];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_output(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_output(m, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_set_output(NULL, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_set_output(m, 2));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_set_output(e, 1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_set_output(m, SIZE_MAX));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tensor_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tensor_count(m, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tensor_shape(NULL, 0, f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tensor_shape(m, 0, f->o.dims, DPT_MODEL_MAX_RANK, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tensor_shape(m, 0, NULL, 1, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tensor_shape(m, 2, f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_model_tensor_shape(m, SIZE_MAX, f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size));

  /* The builders: a NULL model, a tensor that does not exist, bad names, bad attributes. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_conv2d(NULL, 0, 2, 3, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 2, 2, 3, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, SIZE_MAX, 2, 3, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 1, 2, 1, 1, 0, 1, NULL, out)); /* a 3-vector */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, -1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, INT_MIN, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 0, 3, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 5, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 0, 0, 1, NULL, out));
  ROW(WANT_TOO_BIG, dpt_model_conv2d(m, 0, SIZE_MAX, 3, 1, 0, 1, NULL, out));
  ROW(WANT_TOO_BIG, dpt_model_conv2d(m, 0, 2, 3, 1, HALF_SIZE, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, "", out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, "0", out)); /* taken */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, "5", out)); /* digits, not 1 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, "conv 1", out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, "conv/1", out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_conv2d(m, 0, 2, 3, 1, 0, 1, long_name, out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_dense(NULL, 0, 3, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_dense(m, 2, 3, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_dense(m, 1, 0, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_dense(m, 1, 3, 2, NULL, out));
  ROW(WANT_TOO_BIG, dpt_model_dense(m, 1, SIZE_MAX, 1, NULL, out));
  ROW(WANT_TOO_BIG, dpt_model_dense(m, 1, HALF_SIZE, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_dense(m, 1, 3, 1, "", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_batch_norm(NULL, 0, 1e-5f, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 2, 1e-5f, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, 0.0f, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, -1e-5f, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, NAN, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, INFINITY, 0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, 1e-5f, -0.1f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, 1e-5f, 1.5f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, 1e-5f, NAN, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_batch_norm(m, 0, 1e-5f, 0.1f, "0", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_layer_norm(NULL, 0, 1e-5f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_layer_norm(m, 2, 1e-5f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_layer_norm(m, 0, 0.0f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_layer_norm(m, 0, NAN, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_layer_norm(m, 0, -INFINITY, NULL, out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_activation(NULL, 0, DPT_ACTIVATION_GELU, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_activation(m, 2, DPT_ACTIVATION_GELU, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_activation(m, 0, (dpt_activation)5, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_activation(m, 0, (dpt_activation)-1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_activation(m, 0, DPT_ACTIVATION_RELU, "a b", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_pool(NULL, 0, DPT_POOL_MAX, 2, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 2, DPT_POOL_MAX, 2, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 0, (dpt_pool_kind)2, 2, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 0, DPT_POOL_AVG, 0, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 0, DPT_POOL_AVG, 2, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 0, DPT_POOL_AVG, 5, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 0, DPT_POOL_MAX, SIZE_MAX, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_pool(m, 1, DPT_POOL_MAX, 1, 1, NULL, out)); /* a 3-vector */

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_global_avg_pool(NULL, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_global_avg_pool(m, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_global_avg_pool(m, 1, NULL, out)); /* a 3-vector */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_global_avg_pool(m, 0, "", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_flatten(NULL, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_flatten(m, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_flatten(m, 0, "0", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_dropout(NULL, 0, 0.5f, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_dropout(m, 2, 0.5f, NULL, out));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_dropout(m, 0, 1.0f, NULL, out));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_dropout(m, 0, -0.1f, NULL, out));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_dropout(m, 0, NAN, NULL, out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_add(NULL, 0, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add(m, 0, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add(m, SIZE_MAX, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add(m, 0, 1, NULL, out)); /* 1x4x4 + 3 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_add(m, 0, 0, "1 ", out));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_concat(NULL, pair, 2, NULL, out));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_concat(m, NULL, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, pair, 0, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, pair, 1, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, four, 5, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, pair, SIZE_MAX, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, bad_pair, 2, NULL, out));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, mixed, 2, NULL, out)); /* rank 3 and rank 1 */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_concat(m, pair, 2, "", out));

  /* Named tensors: the fixture's model has 0.weight [3, 16] and 0.bias [3], no buffers. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_named_tensor_count(NULL, DPT_TENSOR_PARAMETER, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_named_tensor_count(m, DPT_TENSOR_PARAMETER, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_named_tensor_count(m, (dpt_tensor_kind)2, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_named_tensor_count(m, (dpt_tensor_kind)-1, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER,
      dpt_model_named_tensor(NULL, DPT_TENSOR_PARAMETER, 0, f->o.text, sizeof f->o.text, &f->o.size,
                             &f->o.size2, f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_model_named_tensor(m, (dpt_tensor_kind)2, 0, f->o.text, sizeof f->o.text, &f->o.size, &f->o.size2,
                             f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 2, f->o.text, sizeof f->o.text, &f->o.size, &f->o.size2,
                             f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, SIZE_MAX, f->o.text, sizeof f->o.text, &f->o.size,
                             &f->o.size2, f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_model_named_tensor(m, DPT_TENSOR_BUFFER, 0, f->o.text, sizeof f->o.text, &f->o.size, &f->o.size2,
                             f->o.dims, DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_NULL_POINTER,
      dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 0, NULL, 16, &f->o.size, &f->o.size2, f->o.dims,
                             DPT_MODEL_MAX_RANK, &f->o.size3));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 0, f->o.text, sizeof f->o.text,
                                                     &f->o.size, &f->o.size2, NULL, 2, &f->o.size3));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_buffer_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_buffer_count(m, NULL));

  /* JSON. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_to_json(NULL, f->o.text, sizeof f->o.text, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_to_json(m, NULL, 16, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_from_json(NULL, "{}"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_from_json(&f->o.model, NULL));
  ROW(DPT_ERROR_FORMAT, dpt_model_from_json(&f->o.model, ""));
  ROW(DPT_ERROR_FORMAT, dpt_model_from_json(&f->o.model, "{"));
  ROW(DPT_ERROR_FORMAT, dpt_model_from_json(&f->o.model, "{\"format\": \"dptrain.model\", \"version\": 1}"));

  /* Buffers of the trainer, as its parameters: the fixture's model has none. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_buffers(NULL, f->o.floats, 0));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_buffers(f->trainer, NULL, 0));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_buffers(f->trainer, f->o.floats, 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_buffers(f->trainer, f->o.floats, SIZE_MAX));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_set_buffers(NULL, f->params, 0));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_set_buffers(f->trainer, NULL, 0));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_buffers(f->trainer, f->params, 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_buffers(f->trainer, f->params, SIZE_MAX));
  finish_table(f);

  /* Still usable, with the right values. */
  ASSERT_OK(dpt_model_output(m, &n));
  assert_int_equal(n, 1);
  ASSERT_OK(dpt_model_tensor_count(m, &n));
  assert_int_equal(n, 2);
  ASSERT_OK(dpt_model_buffer_count(m, &n));
  assert_int_equal(n, 0);
  ASSERT_OK(dpt_model_named_tensor_count(m, DPT_TENSOR_BUFFER, &n));
  assert_int_equal(n, 0);
  ASSERT_OK(dpt_model_named_tensor_count(m, DPT_TENSOR_PARAMETER, &n));
  assert_int_equal(n, 2);
  ASSERT_OK(dpt_model_named_tensor(m, DPT_TENSOR_PARAMETER, 1, f->o.text, sizeof f->o.text, &n, &t, f->o.dims,
                                   DPT_MODEL_MAX_RANK, &f->o.size3));
  assert_string_equal(f->o.text, "0.bias");
  assert_int_equal(n, sizeof "0.bias");
  assert_int_equal(t, IN * CLASSES);
  assert_int_equal(f->o.size3, 1);
  assert_int_equal(f->o.dims[0], CLASSES);
  ASSERT_OK(dpt_trainer_get_buffers(f->trainer, f->o.floats, 0));
  ASSERT_OK(dpt_trainer_set_buffers(f->trainer, f->params, 0));
  long_name[200] = '\0'; /* 200 bytes: the longest name */
  ASSERT_OK(dpt_model_conv2d(e, 0, 2, 3, 1, 0, 0, long_name, &t));
  assert_int_equal(t, 1);
  ASSERT_OK(dpt_model_batch_norm(e, t, 1e-5f, 1.0f, "1", &t)); /* its own index; momentum 1 */
  ASSERT_OK(dpt_model_concat(e, pair, 2, NULL, &t));           /* 1x4x4 twice */
  ASSERT_OK(dpt_model_tensor_shape(e, t, f->o.dims, DPT_MODEL_MAX_RANK, &n));
  assert_int_equal(n, 3);
  assert_int_equal(f->o.dims[0], 2);
  ASSERT_OK(dpt_model_set_output(e, 2));
  ASSERT_OK(dpt_model_output(e, &n));
  assert_int_equal(n, 2);
  ASSERT_OK(dpt_model_buffer_count(e, &n));
  assert_int_equal(n, 4);
  ASSERT_OK(dpt_model_layer_count(e, &f->empty_layers));
}

/* The size queries of the graph calls: BUFFER_TOO_SMALL reports the sizes and writes nothing else. */
static void test_graph_size_queries(void **state) {
  fixture *f = (fixture *)*state;
  char text[8] = "zzzzzzz";
  size_t dims[2] = {77, 77}, rank = 0, needed = 0, offset = 99;
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_tensor_shape(f->model, 0, dims, 2, &rank));
  assert_int_equal(rank, 3);
  assert_int_equal(dims[0], 77);
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_tensor_shape(f->model, 0, NULL, 0, &rank));
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL,
                dpt_model_named_tensor(f->model, DPT_TENSOR_PARAMETER, 0, text, sizeof "0.weight" - 1,
                                       &needed, &offset, dims, 2, &rank));
  assert_int_equal(needed, sizeof "0.weight");
  assert_int_equal(rank, 2);
  assert_string_equal(text, "zzzzzzz");
  assert_int_equal(offset, 99);
  assert_int_equal(dims[0], 77);
  rank = 0;
  EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL,
                dpt_model_named_tensor(f->model, DPT_TENSOR_PARAMETER, 1, text, sizeof text, NULL, &offset,
                                       dims, 0, &rank));
  assert_int_equal(rank, 1);
  assert_string_equal(text, "zzzzzzz");
  {
    char json[2048];
    size_t again = 0;
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_to_json(f->model, NULL, 0, &needed));
    assert_true(needed > 16 && needed < sizeof json);
    memset(json, 'Z', sizeof json);
    EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_model_to_json(f->model, json, needed - 1, &again));
    assert_int_equal(again, needed);
    assert_int_equal(json[0], 'Z');
    ASSERT_OK(dpt_model_to_json(f->model, json, needed, NULL));
    assert_int_equal(strlen(json) + 1, needed);
    assert_int_equal(json[needed], 'Z');
  }
}

/* ---- one model, two threads: builders are exclusive, queries shared --------------------------- */

typedef struct model_reader {
  const dpt_model *model;
  int index;         /* which of the two readers */
  int stop;          /* set by the main thread (atomic) */
  long calls, busy;  /* written by the reader, read after the join */
  dpt_status failed; /* the first failure other than BUSY */
} model_reader;

static void *read_model(void *arg) {
  model_reader *r = (model_reader *)arg;
  static char buffers[2][16384];
  char *buffer = buffers[r->index];
  while (!__atomic_load_n(&r->stop, __ATOMIC_SEQ_CST)) {
    const dpt_status s = dpt_model_to_json(r->model, buffer, sizeof buffers[0], NULL);
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
    if (s == DPT_ERROR_BUSY)
      ++r->busy;
    else if (s != DPT_OK && r->failed == DPT_OK)
      r->failed = s;
  }
  return NULL;
}

enum { BUSY_PROBES = 16 };

/* Builder calls that fail with *want when the model is free, so that a probe never changes it. */
static dpt_status busy_probe(dpt_model *m, int k, int *want) {
  static const size_t ids[2] = {999, 999};
  size_t out = 0;
  *want = DPT_ERROR_INVALID_ARGUMENT;
  switch (k) {
    case 0:
      return dpt_model_set_output(m, 999);
    case 1:
      return dpt_model_conv2d(m, 999, 1, 1, 1, 0, 0, NULL, &out);
    case 2:
      return dpt_model_dense(m, 999, 1, 1, NULL, &out);
    case 3:
      return dpt_model_batch_norm(m, 999, 1e-5f, 0.1f, NULL, &out);
    case 4:
      return dpt_model_layer_norm(m, 999, 1e-5f, NULL, &out);
    case 5:
      return dpt_model_activation(m, 999, DPT_ACTIVATION_GELU, NULL, &out);
    case 6:
      return dpt_model_pool(m, 999, DPT_POOL_MAX, 2, 2, NULL, &out);
    case 7:
      return dpt_model_global_avg_pool(m, 999, NULL, &out);
    case 8:
      return dpt_model_flatten(m, 999, NULL, &out);
    case 9:
      *want = DPT_ERROR_OUT_OF_RANGE;
      return dpt_model_dropout(m, 0, 2.0f, NULL, &out);
    case 10:
      return dpt_model_add(m, 999, 0, NULL, &out);
    case 11:
      return dpt_model_concat(m, ids, 2, NULL, &out);
    case 12:
      return dpt_model_add_dense(m, 0);
    case 13:
      return dpt_model_add_conv2d(m, 0, 1, 1, 0);
    case 14:
      return dpt_model_add_activation(m, (dpt_activation)99);
    default:
      *want = DPT_ERROR_OUT_OF_RANGE;
      return dpt_model_add_dropout(m, 2.0f);
  }
}

static void test_model_busy(void **state) {
  dpt_model *m = NULL;
  model_reader readers[2];
  pthread_t threads[2];
  int refused[BUSY_PROBES], seen = 0, k;
  long attempt;
  size_t layers = 0, n = 0;
  (void)state;
  ASSERT_OK(dpt_model_create_builtin(&m, "resnet18"));
  ASSERT_OK(dpt_model_layer_count(m, &layers));
  memset(readers, 0, sizeof readers);
  memset(refused, 0, sizeof refused);

  /* Two readers at once: queries never refuse each other. */
  for (k = 0; k < 2; ++k) {
    readers[k].model = m;
    readers[k].index = k;
    assert_int_equal(pthread_create(&threads[k], NULL, read_model, &readers[k]), 0);
  }
  while (__atomic_load_n(&readers[0].calls, __ATOMIC_SEQ_CST) < 200 ||
         __atomic_load_n(&readers[1].calls, __ATOMIC_SEQ_CST) < 200)
    sched_yield();
  for (k = 0; k < 2; ++k) {
    __atomic_store_n(&readers[k].stop, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_join(threads[k], NULL), 0);
    assert_int_equal(readers[k].busy, 0);
    ASSERT_OK(readers[k].failed);
  }

  /* A reader and the builders: each builder is refused with BUSY while the reader is in a call, and
   * changes nothing; otherwise it fails on its bad argument. */
  memset(readers, 0, sizeof readers);
  readers[0].model = m;
  assert_int_equal(pthread_create(&threads[0], NULL, read_model, &readers[0]), 0);
  while (__atomic_load_n(&readers[0].calls, __ATOMIC_SEQ_CST) < 1) sched_yield();
  for (attempt = 0; attempt < 1000000 && seen < BUSY_PROBES; ++attempt) {
    for (k = 0; k < BUSY_PROBES; ++k) {
      int want = 0;
      const dpt_status s = busy_probe(m, k, &want);
      if (s == DPT_ERROR_BUSY) {
        if (strstr(dpt_last_error_message(), "another thread") == NULL)
          fail_msg("probe %d: BUSY without its message: %s", k, dpt_last_error_message());
        seen += refused[k]++ == 0;
      } else if ((int)s != want) {
        __atomic_store_n(&readers[0].stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(threads[0], NULL);
        fail_msg("probe %d returned %s: %s", k, dpt_status_string(s), dpt_last_error_message());
      }
    }
  }
  __atomic_store_n(&readers[0].stop, 1, __ATOMIC_SEQ_CST);
  assert_int_equal(pthread_join(threads[0], NULL), 0);
  ASSERT_OK(readers[0].failed);
  for (k = 0; k < BUSY_PROBES; ++k)
    if (refused[k] == 0) fail_msg("builder probe %d was never refused while the model was read", k);
  ASSERT_OK(dpt_model_layer_count(m, &n));
  assert_int_equal(n, layers);
  /* Free again: a builder works. */
  ASSERT_OK(dpt_model_flatten(m, 0, "input.flat", &n));
  dpt_model_destroy(m);
}

/* ---- datasets -------------------------------------------------------------------------------- */

static void test_dataset_misuse(void **state) {
  fixture *f = (fixture *)*state;
  const dpt_dataset *d = f->data;
  const float *x = f->in;
  const int32_t *y = f->lab;
  const size_t all = (size_t)SAMPLES * IN;
  int32_t neg[SAMPLES], high[SAMPLES];
  float inputs[3 * IN];
  int32_t labels[3];
  size_t i, n = 0, c = 0, h = 0, w = 0;
  memcpy(neg, f->lab, sizeof neg);
  memcpy(high, f->lab, sizeof high);
  neg[5] = -1;
  high[7] = CLASSES;

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create(NULL, x, all, y, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create(&f->o.dataset, NULL, all, y, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create(&f->o.dataset, x, all, NULL, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_create(&f->o.dataset, x, all - 1, y, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_create(&f->o.dataset, x, all + 1, y, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_create(&f->o.dataset, x, 0, y, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create(&f->o.dataset, x, 0, y, SAMPLES, 0, 4, 4, CLASSES));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create(&f->o.dataset, x, 0, y, SAMPLES, 1, 0, 4, CLASSES));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create(&f->o.dataset, x, 0, y, SAMPLES, 1, 4, 0, CLASSES));
  /* classes 0: a bad value, or equally every label is out of [0, 0). */
  ROW(WANT_CLASSES, dpt_dataset_create(&f->o.dataset, x, all, y, SAMPLES, 1, 4, 4, 0));
  /* An empty dataset cannot be trained or evaluated on: refused (a judgement; see the report). */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create(&f->o.dataset, x, 0, y, 0, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_create(&f->o.dataset, x, all, neg, SAMPLES, 1, 4, 4, CLASSES));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_create(&f->o.dataset, x, all, high, SAMPLES, 1, 4, 4, CLASSES));
  /* samples * channels * height * width wraps to 0 (and to 2): must not be taken for an empty sample. */
  ROW(WANT_OVERFLOW, dpt_dataset_create(&f->o.dataset, x, 0, y, 2, HALF_SIZE, 1, 1, CLASSES));
  ROW(WANT_OVERFLOW, dpt_dataset_create(&f->o.dataset, x, 0, y, 1, HALF_SIZE, 2, 1, CLASSES));
  ROW(WANT_OVERFLOW, dpt_dataset_create(&f->o.dataset, x, 2, y, 1, HALF_SIZE + 1, 2, 1, CLASSES));
  ROW(WANT_OVERFLOW, dpt_dataset_create(&f->o.dataset, x, 1, y, 1, SIZE_MAX, SIZE_MAX, 1, CLASSES));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_subset(NULL, d, 0, 2));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_subset(&f->o.dataset, NULL, 0, 2));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, SAMPLES, 1));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, 0, SAMPLES + 1));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, 5, 4));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, SIZE_MAX, 2)); /* start + count wraps */
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, 1, SIZE_MAX));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_subset(&f->o.dataset, d, SIZE_MAX, SIZE_MAX));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_sample_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_sample_count(d, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_class_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_class_count(d, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_shape(NULL, &f->o.size, &f->o.size2, &f->o.size3));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_shape(NULL, NULL, NULL, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_batch(NULL, 0, 2, f->o.floats, 2 * IN, f->o.labels, 2));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_batch(d, 0, 2, NULL, 2 * IN, f->o.labels, 2));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_batch(d, 0, 2, f->o.floats, 2 * IN, NULL, 2));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_batch(d, 0, 2, f->o.floats, 2 * IN - 1, f->o.labels, 2));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_batch(d, 0, 2, f->o.floats, 2 * IN + 1, f->o.labels, 2));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_batch(d, 0, 2, f->o.floats, 2 * IN, f->o.labels, 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_batch(d, 0, 2, f->o.floats, 2 * IN, f->o.labels, 3));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_copy_batch(d, 7, 2, f->o.floats, 2 * IN, f->o.labels, 2));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_copy_batch(d, SAMPLES, 1, f->o.floats, IN, f->o.labels, 1));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_copy_batch(d, SIZE_MAX, 2, f->o.floats, 2 * IN, f->o.labels, 2));
  /* count * 16 wraps to 16. */
  ROW(WANT_OVERFLOW,
      dpt_dataset_copy_batch(d, 0, (SIZE_MAX / IN) + 2, f->o.floats, IN, f->o.labels, (SIZE_MAX / IN) + 2));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(NULL, "/nonexistent/a", "/nonexistent/b"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(&f->o.dataset, NULL, "/nonexistent/b"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(&f->o.dataset, "/nonexistent/a", NULL));
  ROW(DPT_ERROR_IO, dpt_dataset_load_idx(&f->o.dataset, "/nonexistent/a", "/nonexistent/b"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_fashion_mnist(NULL, "/nonexistent/dir", DPT_DATASET_TEST));
  /* Arguments are checked before any file is touched. */
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_dataset_load_fashion_mnist(&f->o.dataset, "/nonexistent/dir", (dpt_dataset_part)99));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_dataset_load_fashion_mnist(&f->o.dataset, "/nonexistent/dir", (dpt_dataset_part)-1));
  ROW(DPT_ERROR_IO, dpt_dataset_load_fashion_mnist(&f->o.dataset, "/nonexistent/dir", DPT_DATASET_TRAIN));
  finish_table(f);

  /* Still usable, with the right values. */
  ASSERT_OK(dpt_dataset_sample_count(d, &n));
  assert_int_equal(n, SAMPLES);
  ASSERT_OK(dpt_dataset_class_count(d, &n));
  assert_int_equal(n, CLASSES);
  ASSERT_OK(dpt_dataset_shape(d, NULL, NULL, NULL)); /* any output may be NULL */
  ASSERT_OK(dpt_dataset_shape(d, &c, NULL, &w));
  ASSERT_OK(dpt_dataset_shape(d, NULL, &h, NULL));
  assert_int_equal(c, 1);
  assert_int_equal(h, 4);
  assert_int_equal(w, 4);
  ASSERT_OK(dpt_dataset_copy_batch(d, 5, 3, inputs, 3 * IN, labels, 3));
  assert_memory_equal(inputs, f->in + 5 * IN, sizeof inputs);
  for (i = 0; i < 3; ++i) assert_int_equal(labels[i], f->lab[5 + i]);
}

/* ---- trainers -------------------------------------------------------------------------------- */

static void test_trainer_create_misuse(void **state) {
  fixture *f = (fixture *)*state;
  const float w_nan[2] = {NAN, 1.0f};
  const float w_inf[2] = {1.0f, INFINITY};
  const option_row trainer_rows[] = {
      {"struct_size 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, struct_size, 0)}},
      {"struct_size 1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, struct_size, 1)}},
      {"struct_size 7", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, struct_size, sizeof(size_t) - 1)}},
      {"devices {0, 2}",
       DPT_ERROR_DEVICE_NOT_FOUND,
       {SET_PTR(TOPT, devices, dev_0_2), SET_INT(TOPT, device_count, 2)}},
      {"devices {SIZE_MAX}",
       DPT_ERROR_DEVICE_NOT_FOUND,
       {SET_PTR(TOPT, devices, dev_huge), SET_INT(TOPT, device_count, 1)}},
      {"devices {0, 0}",
       DPT_ERROR_INVALID_ARGUMENT,
       {SET_PTR(TOPT, devices, dev_0_0), SET_INT(TOPT, device_count, 2)}},
      {"devices {1, 0, 1}",
       DPT_ERROR_INVALID_ARGUMENT,
       {SET_PTR(TOPT, devices, dev_1_0_1), SET_INT(TOPT, device_count, 3)}},
      /* devices == NULL means "all" only with device_count 0; NULL with a count is a NULL buffer. */
      {"devices NULL, device_count 2", DPT_ERROR_NULL_POINTER, {SET_INT(TOPT, device_count, 2)}},
      /* ... and a list with no entries was meant to name devices: refused, not read as "all". */
      {"devices {0, 1}, device_count 0", DPT_ERROR_INVALID_ARGUMENT, {SET_PTR(TOPT, devices, dev_0_1)}},
      /* Unknown gpu_flags bits are refused on CPU trainers too (the known ones have no effect there). */
      {"gpu_flags 4 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, gpu_flags, 4)}},
      {"gpu_flags 0x80000000", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, gpu_flags, 0x80000000u)}},
      {"batch_norm mode 2 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, batch_norm, 2)}},
      {"precision 3 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, precision, 3)}},
      {"precision -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, precision, -1)}},
      {"allreduce_dtype 3 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, allreduce_dtype, 3)}},
      {"allreduce_dtype -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, allreduce_dtype, -1)}},
      {"activation_dtype 3 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, activation_dtype, 3)}},
      {"activation_dtype -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, activation_dtype, -1)}},
      {"shard 4 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, shard, 4)}},
      {"shard -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, shard, -1)}},
      {"shard_scope 2 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, shard_scope, 2)}},
      {"shard_scope -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, shard_scope, -1)}},
      {"pipeline_schedule 2 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, pipeline_schedule, 2)}},
      {"pipeline_scope 2 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, pipeline_scope, 2)}},
      {"pipeline_scope -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, pipeline_scope, -1)}},
      {"pipeline_balance 3 (unknown)", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, pipeline_balance, 3)}},
      {"pipeline_balance -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, pipeline_balance, -1)}},
      /* A pipeline needs one device per stage, the even split, no sharding but the optimizer's, known cut
       * points. */
      {"pipeline_stages 3 on 2 devices",
       DPT_ERROR_UNSUPPORTED,
       {SET_INT(TOPT, pipeline_stages, 3), SET_PTR(TOPT, devices, dev_0_1), SET_INT(TOPT, device_count, 2)}},
      {"pipeline, shard gradients",
       DPT_ERROR_UNSUPPORTED,
       {PIPELINE_2, SET_INT(TOPT, shard, DPT_SHARD_GRADIENTS)}},
      {"pipeline, shard parameters",
       DPT_ERROR_UNSUPPORTED,
       {PIPELINE_2, SET_INT(TOPT, shard, DPT_SHARD_PARAMETERS)}},
      {"pipeline, split auto",
       DPT_ERROR_INVALID_ARGUMENT,
       {PIPELINE_2, SET_INT(TOPT, split, DPT_SPLIT_AUTO)}},
      {"pipeline, micro_batches 1025",
       DPT_ERROR_OUT_OF_RANGE,
       {PIPELINE_2, SET_INT(TOPT, micro_batches, 1025)}},
      {"pipeline, pipeline_cuts \"nope\"",
       DPT_ERROR_INVALID_ARGUMENT,
       {PIPELINE_2, SET_PTR(TOPT, pipeline_cuts, "nope")}},
      {"pipeline, two cuts for two stages",
       DPT_ERROR_INVALID_ARGUMENT,
       {PIPELINE_2, SET_PTR(TOPT, pipeline_cuts, "1,2")}},
      {"pipeline, pipeline_copies 2 in the process scope",
       DPT_ERROR_INVALID_ARGUMENT,
       {PIPELINE_2, SET_INT(TOPT, pipeline_copies, 2)}},
      {"pipeline, named cuts and the time balance",
       DPT_ERROR_INVALID_ARGUMENT,
       {SET_INT(TOPT, pipeline_stages, 2), SET_PTR(TOPT, pipeline_cuts, "1"),
        SET_INT(TOPT, pipeline_balance, DPT_PIPELINE_BALANCE_TIME)}},
      /* The initial loss scale is a power of two from 1 to 2^64, checked whatever the precision. */
      {"initial_loss_scale 3", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, initial_loss_scale, 3.0)}},
      {"initial_loss_scale 0.5", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, initial_loss_scale, 0.5)}},
      {"initial_loss_scale 0", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, initial_loss_scale, 0.0)}},
      {"initial_loss_scale 2^65", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, initial_loss_scale, 0x1p65)}},
      {"initial_loss_scale NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, initial_loss_scale, NAN)}},
      {"fp16, initial_loss_scale inf",
       DPT_ERROR_INVALID_ARGUMENT,
       {SET_INT(TOPT, precision, DPT_PRECISION_FP16), SET_FLT(TOPT, initial_loss_scale, INFINITY)}},
      {"split 99", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, split, 99)}},
      {"split -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, split, -1)}},
      {"allreduce 99", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, allreduce, 99)}},
      {"init 99", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, init, 99)}},
      {"accumulation_steps 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, accumulation_steps, 0)}},
      {"nonfinite 7", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, nonfinite, 7)}},
      {"communicator 5", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(TOPT, communicator, 5)}},
      {"timeout_seconds -1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, timeout_seconds, -1.0)}},
      {"timeout_seconds NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, timeout_seconds, NAN)}},
      {"timeout_seconds inf", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(TOPT, timeout_seconds, INFINITY)}},
      {"normal init, init_std -1", DPT_ERROR_INVALID_ARGUMENT, {NORMAL_INIT, SET_FLT(TOPT, init_std, -1.0)}},
      {"normal init, init_std NaN", DPT_ERROR_INVALID_ARGUMENT, {NORMAL_INIT, SET_FLT(TOPT, init_std, NAN)}},
      {"normal init, init_std inf",
       DPT_ERROR_INVALID_ARGUMENT,
       {NORMAL_INIT, SET_FLT(TOPT, init_std, INFINITY)}},
      /* A required pointer that is NULL: the most specific code (the header's "bad weights" is 1000s too). */
      {"weighted, split_weights NULL", DPT_ERROR_NULL_POINTER, {WEIGHTED(NULL)}},
      {"weighted, weights {0, 1}", DPT_ERROR_INVALID_ARGUMENT, {WEIGHTED(w_zero)}},
      {"weighted, weights {0, 0}", DPT_ERROR_INVALID_ARGUMENT, {WEIGHTED(w_zeros)}},
      {"weighted, weights {-1, 2}", DPT_ERROR_INVALID_ARGUMENT, {WEIGHTED(w_negative)}},
      {"weighted, weights {NaN, 1}", DPT_ERROR_INVALID_ARGUMENT, {WEIGHTED(w_nan)}},
      {"weighted, weights {1, inf}", DPT_ERROR_INVALID_ARGUMENT, {WEIGHTED(w_inf)}},
  };
  const option_row optimizer_rows[] = {
      {"struct_size 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, struct_size, 0)}},
      {"struct_size 1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, struct_size, 1)}},
      {"struct_size 7", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, struct_size, sizeof(size_t) - 1)}},
      {"kind 99", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, kind, 99)}},
      {"kind -1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, kind, -1)}},
      {"learning_rate -0.1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, learning_rate, -0.1)}},
      {"learning_rate NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, learning_rate, NAN)}},
      {"learning_rate inf", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, learning_rate, INFINITY)}},
      {"momentum 1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, momentum, 1.0)}},
      {"momentum 1.5", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, momentum, 1.5)}},
      {"momentum -0.1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, momentum, -0.1)}},
      {"momentum NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, momentum, NAN)}},
      {"nesterov without momentum", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, nesterov, 1)}},
      {"weight_decay -0.1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, weight_decay, -0.1)}},
      {"weight_decay NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, weight_decay, NAN)}},
      {"adamw beta1 1", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, beta1, 1.0)}},
      {"adamw beta1 -0.1", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, beta1, -0.1)}},
      {"adamw beta1 NaN", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, beta1, NAN)}},
      {"adamw beta2 1", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, beta2, 1.0)}},
      {"adamw beta2 -0.5", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, beta2, -0.5)}},
      {"adamw epsilon -1e-8", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, epsilon, -1e-8)}},
      {"adamw epsilon NaN", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, epsilon, NAN)}},
      {"adamw learning_rate -1", DPT_ERROR_INVALID_ARGUMENT, {ADAMW, SET_FLT(OOPT, learning_rate, -1.0)}},
      {"schedule 99", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(OOPT, schedule, 99)}},
      {"step schedule, step_size 0",
       DPT_ERROR_INVALID_ARGUMENT,
       {STEP_SCHEDULE, SET_INT(OOPT, step_size, 0)}},
      {"step schedule, gamma NaN",
       DPT_ERROR_INVALID_ARGUMENT,
       {STEP_SCHEDULE, SET_INT(OOPT, step_size, 10), SET_FLT(OOPT, gamma, NAN)}},
      {"step schedule, gamma -0.5",
       DPT_ERROR_INVALID_ARGUMENT,
       {STEP_SCHEDULE, SET_INT(OOPT, step_size, 10), SET_FLT(OOPT, gamma, -0.5)}},
      {"cosine, total 0 == warmup 0", DPT_ERROR_INVALID_ARGUMENT, {COSINE, SET_INT(OOPT, total_steps, 0)}},
      {"cosine, total 10 == warmup 10",
       DPT_ERROR_INVALID_ARGUMENT,
       {COSINE, SET_INT(OOPT, warmup_steps, 10), SET_INT(OOPT, total_steps, 10)}},
      {"cosine, total 5 < warmup 10",
       DPT_ERROR_INVALID_ARGUMENT,
       {COSINE, SET_INT(OOPT, warmup_steps, 10), SET_INT(OOPT, total_steps, 5)}},
      {"cosine, min_learning_rate -0.1",
       DPT_ERROR_INVALID_ARGUMENT,
       {COSINE, SET_INT(OOPT, total_steps, 100), SET_FLT(OOPT, min_learning_rate, -0.1)}},
      {"cosine, min_learning_rate NaN",
       DPT_ERROR_INVALID_ARGUMENT,
       {COSINE, SET_INT(OOPT, total_steps, 100), SET_FLT(OOPT, min_learning_rate, NAN)}},
      {"clip_norm -1", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, clip_norm, -1.0)}},
      {"clip_norm NaN", DPT_ERROR_INVALID_ARGUMENT, {SET_FLT(OOPT, clip_norm, NAN)}},
  };
  dpt_trainer *t = NULL;
  size_t n = 0;
  size_t counts[DEVICES];

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_create(NULL, f->ctx, f->model, NULL, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_create(&f->o.trainer, NULL, f->model, NULL, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_create(&f->o.trainer, f->ctx, NULL, NULL, NULL));
  run_trainer_option_rows(f, trainer_rows, sizeof trainer_rows / sizeof trainer_rows[0], 0);
  run_trainer_option_rows(f, optimizer_rows, sizeof optimizer_rows / sizeof optimizer_rows[0], 1);
  finish_table(f);

  /* The same context and model still make trainers: defaults, and a valid weighted split. */
  ASSERT_OK(dpt_trainer_create(&t, f->ctx, f->model, NULL, NULL));
  ASSERT_OK(dpt_trainer_device_count(t, &n));
  assert_int_equal(n, DEVICES);
  ASSERT_OK(dpt_trainer_parameter_count(t, &n));
  assert_int_equal(n, PARAMS);
  dpt_trainer_destroy(t);
  {
    static const float weights[] = {1.0f, 3.0f};
    dpt_trainer_options topt;
    dpt_trainer_options_init(&topt);
    topt.devices = dev_0_1;
    topt.device_count = 2;
    topt.split = DPT_SPLIT_WEIGHTED;
    topt.split_weights = weights;
    ASSERT_OK(dpt_trainer_create(&t, f->ctx, f->model, &topt, NULL));
    ASSERT_OK(dpt_trainer_split_sizes(t, 8, counts, DEVICES));
    assert_int_equal(counts[0], 2);
    assert_int_equal(counts[1], 6);
    ASSERT_OK(dpt_trainer_split_sizes(t, 2, counts, DEVICES)); /* quotas 0.5, 1.5: the tie goes to 0 */
    assert_int_equal(counts[0], 1);
    assert_int_equal(counts[1], 1);
    dpt_trainer_destroy(t);
    /* The cuts a pipeline chose, as pipeline_cuts takes them: 1x4x4 -> dense 32 -> relu -> dense 3 by
     * parameters (544 + 99) begins its second stage at the ReLU, node 1; a trainer given that name reports
     * it back; "" without a pipeline. */
    {
      dpt_model *m = NULL;
      char cuts[16], again[16];
      size_t needed = 0;
      ASSERT_OK(dpt_model_create(&m, 1, 4, 4));
      ASSERT_OK(dpt_model_add_dense(m, 32));
      ASSERT_OK(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
      ASSERT_OK(dpt_model_add_dense(m, CLASSES));
      dpt_trainer_options_init(&topt);
      topt.devices = dev_0_1;
      topt.device_count = 2;
      topt.pipeline_stages = 2;
      topt.pipeline_balance = DPT_PIPELINE_BALANCE_PARAMETERS;
      ASSERT_OK(dpt_trainer_create(&t, f->ctx, m, &topt, NULL));
      EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_trainer_pipeline_cuts(t, NULL, 0, &needed));
      assert_int_equal(needed, 2);
      memset(cuts, 'Z', sizeof cuts);
      EXPECT_STATUS(DPT_ERROR_BUFFER_TOO_SMALL, dpt_trainer_pipeline_cuts(t, cuts, 1, NULL));
      assert_int_equal(cuts[0], 'Z');
      ASSERT_OK(dpt_trainer_pipeline_cuts(t, cuts, needed, NULL));
      assert_string_equal(cuts, "1");
      dpt_trainer_destroy(t);
      topt.pipeline_balance = DPT_PIPELINE_BALANCE_WORK;
      topt.pipeline_cuts = cuts;
      ASSERT_OK(dpt_trainer_create(&t, f->ctx, m, &topt, NULL));
      ASSERT_OK(dpt_trainer_pipeline_cuts(t, again, sizeof again, &needed));
      assert_string_equal(again, "1");
      assert_int_equal(needed, 2);
      dpt_trainer_destroy(t);
      ASSERT_OK(dpt_trainer_pipeline_cuts(f->trainer, again, 1, &needed));
      assert_string_equal(again, "");
      assert_int_equal(needed, 1);
      dpt_model_destroy(m);
    }
    /* Known gpu_flags have no effect on CPU devices: the trainer trains as without them. */
    dpt_trainer_options_init(&topt);
    topt.gpu_flags = DPT_GPU_ALLOW_TF32 | DPT_GPU_DETERMINISTIC;
    ASSERT_OK(dpt_trainer_create(&t, f->ctx, f->model, &topt, NULL));
    dpt_trainer_destroy(t);
  }
}

/* Expected gradient norm of the first step from all-zero parameters (softmax outputs 1/3 each). */
static double zero_start_grad_norm(const float *x, const int32_t *y, size_t batch) {
  double sum = 0.0;
  size_t k, j, i;
  for (k = 0; k < CLASSES; ++k) {
    double gb = 0.0;
    for (j = 0; j < IN; ++j) {
      double gw = 0.0;
      for (i = 0; i < batch; ++i) gw += x[i * IN + j] * (1.0 / 3.0 - (y[i] == (int32_t)k ? 1.0 : 0.0));
      gw /= (double)batch;
      sum += gw * gw;
    }
    for (i = 0; i < batch; ++i) gb += 1.0 / 3.0 - (y[i] == (int32_t)k ? 1.0 : 0.0);
    gb /= (double)batch;
    sum += gb * gb;
  }
  return sqrt(sum);
}

static void test_trainer_step_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_trainer *t = f->trainer;
  const float *x = f->in;
  const int32_t *y = f->lab;
  dpt_step_result r;
  float zeros[PARAMS], after[PARAMS], replica[PARAMS];
  double expected_norm, squares = 0.0;
  uint64_t checksum = 0;
  size_t i;

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step(NULL, x, BATCH_IN, y, BATCH, &f->o.step));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step(t, NULL, BATCH_IN, y, BATCH, &f->o.step));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step(t, x, BATCH_IN, NULL, BATCH, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step(t, x, BATCH_IN - 1, y, BATCH, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step(t, x, BATCH_IN + 1, y, BATCH, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step(t, x, 0, y, BATCH, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step(t, x, SIZE_MAX, y, BATCH, &f->o.step));
  /* An empty batch has no mean loss: a bad argument. */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_step(t, x, 0, y, 0, &f->o.step));
  /* batch * 16 wraps to 16. */
  ROW(WANT_OVERFLOW, dpt_trainer_step(t, x, IN, y, SIZE_MAX / IN + 2, &f->o.step));
  ROW(WANT_OVERFLOW, dpt_trainer_step(t, x, 0, y, HALF_SIZE, &f->o.step));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_step(t, x, BATCH_IN, f->lab_neg, BATCH, &f->o.step));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_step(t, x, BATCH_IN, f->lab_high, BATCH, &f->o.step));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_step(t, x, BATCH_IN, f->lab_max, BATCH, &f->o.step));
  {
    dpt_step_result small;
    memset(&small, 0xA5, sizeof small);
    small.struct_size = 0;
    ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_step(t, x, BATCH_IN, y, BATCH, &small));
    assert_int_equal(small.struct_size, 0);
    assert_int_equal(small.samples, UINT64_C(0xA5A5A5A5A5A5A5A5));
  }
  finish_table(f);

  /* Still trains, with the right values: from zero parameters the logits are 0, the loss is ln 3, and
   * one SGD step (lr 0.1) moves the parameters by 0.1 * gradient. */
  memset(zeros, 0, sizeof zeros);
  ASSERT_OK(dpt_trainer_set_parameters(t, zeros, PARAMS));
  memset(&r, 0xA5, sizeof r);
  r.struct_size = sizeof r;
  ASSERT_OK(dpt_trainer_step(t, x, BATCH_IN, y, BATCH, &r));
  expected_norm = zero_start_grad_norm(x, y, BATCH);
  assert_true(fabs(r.loss - log(3.0)) < 1e-6);
  assert_int_equal(r.samples, BATCH);
  assert_int_equal(r.applied, 1);
  assert_int_equal(r.optimizer_steps, 1); /* the failed steps did not count */
  assert_true(fabs(r.learning_rate - 0.1) < 1e-7);
  assert_true(fabs(r.grad_norm - expected_norm) < 1e-5 * expected_norm);
  ASSERT_OK(dpt_trainer_get_parameters(t, after, PARAMS));
  for (i = 0; i < PARAMS; ++i) squares += (double)after[i] * after[i];
  assert_true(fabs(sqrt(squares) - 0.1 * expected_norm) < 1e-5 * expected_norm);
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, 1, replica, PARAMS));
  assert_memory_equal(after, replica, sizeof after);
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &checksum));
  assert_true(checksum == tu_fnv1a64(after, sizeof after));
  f->checksum = checksum;
}

/* A result with a smaller struct_size: the library writes only that many bytes. */
static void test_step_result_partial_struct(void **state) {
  fixture *f = (fixture *)*state;
  dpt_step_result r;
  unsigned char before[sizeof r];
  const size_t size = offsetof(dpt_step_result, samples); /* loss and accuracy only */
  dpt_status status;
  memset(&r, 0xA5, sizeof r);
  r.struct_size = size;
  memcpy(before, &r, sizeof r);
  status = dpt_trainer_step(f->trainer, f->in, BATCH_IN, f->lab, BATCH, &r);
  if (status != DPT_OK && status != DPT_ERROR_INVALID_ARGUMENT) {
    print_error("dpt_trainer_step with result struct_size %zu returned %s\n", size,
                dpt_status_string(status));
    fail();
  }
  assert_memory_equal((unsigned char *)&r + size, before + size, sizeof r - size);
  if (status == DPT_OK) assert_true(r.loss > 0.0 && r.loss < 10.0);
}

static void test_trainer_evaluate_predict_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_trainer *t = f->trainer;
  const float *x = f->in;
  const int32_t *y = f->lab;
  float logits[BATCH_LOGITS];
  float *lo = f->o.floats;
  dpt_eval_result r;

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate(NULL, x, BATCH_IN, y, BATCH, &f->o.eval));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate(t, NULL, BATCH_IN, y, BATCH, &f->o.eval));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate(t, x, BATCH_IN, NULL, BATCH, &f->o.eval));
  /* Unlike dpt_trainer_step's, this result is not documented as optional. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate(t, x, BATCH_IN, y, BATCH, NULL));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_evaluate(t, x, BATCH_IN - 1, y, BATCH, &f->o.eval));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_evaluate(t, x, BATCH_IN + IN, y, BATCH, &f->o.eval));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_evaluate(t, x, 0, y, 0, &f->o.eval));
  ROW(WANT_OVERFLOW, dpt_trainer_evaluate(t, x, IN, y, SIZE_MAX / IN + 2, &f->o.eval));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_evaluate(t, x, BATCH_IN, f->lab_neg, BATCH, &f->o.eval));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_evaluate(t, x, BATCH_IN, f->lab_high, BATCH, &f->o.eval));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_evaluate(t, x, BATCH_IN, f->lab_max, BATCH, &f->o.eval));
  {
    dpt_eval_result zero;
    memset(&zero, 0xA5, sizeof zero);
    zero.struct_size = 0;
    ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_evaluate(t, x, BATCH_IN, y, BATCH, &zero));
    assert_int_equal(zero.samples, UINT64_C(0xA5A5A5A5A5A5A5A5));
    ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_evaluate_dataset(t, f->data, 0, &zero));
  }

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate_dataset(NULL, f->data, 4, &f->o.eval));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate_dataset(t, NULL, 4, &f->o.eval));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate_dataset(t, f->data, 4, NULL));
  ROW(WANT_SHAPE, dpt_trainer_evaluate_dataset(t, f->bad_shape, 4, &f->o.eval));
  ROW(WANT_CLASSES, dpt_trainer_evaluate_dataset(t, f->bad_classes, 4, &f->o.eval));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_recompute_batch_norm(NULL, f->data, 4, 0));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_recompute_batch_norm(t, NULL, 4, 0));
  ROW(WANT_SHAPE, dpt_trainer_recompute_batch_norm(t, f->bad_shape, 4, 0));
  ROW(WANT_CLASSES, dpt_trainer_recompute_batch_norm(t, f->bad_classes, 4, 0));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_predict(NULL, x, BATCH_IN, BATCH, lo, BATCH_LOGITS));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_predict(t, NULL, BATCH_IN, BATCH, lo, BATCH_LOGITS));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_predict(t, x, BATCH_IN, BATCH, NULL, BATCH_LOGITS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict(t, x, BATCH_IN - 1, BATCH, lo, BATCH_LOGITS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict(t, x, BATCH_IN + 1, BATCH, lo, BATCH_LOGITS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict(t, x, BATCH_IN, BATCH, lo, BATCH_LOGITS - 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict(t, x, BATCH_IN, BATCH, lo, BATCH_LOGITS + 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict(t, x, BATCH_IN, BATCH, lo, SIZE_MAX));
  /* sample_count * 16 wraps to 16 and sample_count * 3 wraps to 3 * ... : never accepted. */
  ROW(WANT_OVERFLOW, dpt_trainer_predict(t, x, IN, SIZE_MAX / IN + 2, lo, (SIZE_MAX / IN + 2) * CLASSES));
  finish_table(f);

  /* Still usable, with values that do not depend on the parameter layout: with every parameter equal to
   * c, every logit of sample i is c * (sum_j x_ij + 1), so all classes tie and the loss is ln 3. */
  {
    const float c = 0.25f;
    float same[PARAMS];
    size_t i, k, j;
    for (i = 0; i < PARAMS; ++i) same[i] = c;
    ASSERT_OK(dpt_trainer_set_parameters(t, same, PARAMS));
    ASSERT_OK(dpt_trainer_parameter_checksum(t, &f->checksum));
    memset(logits, 0xA5, sizeof logits);
    ASSERT_OK(dpt_trainer_predict(t, x, BATCH_IN, BATCH, logits, BATCH_LOGITS));
    for (i = 0; i < BATCH; ++i) {
      double expected = 1.0;
      for (j = 0; j < IN; ++j) expected += x[i * IN + j];
      expected *= c;
      for (k = 0; k < CLASSES; ++k) {
        if (fabs(logits[i * CLASSES + k] - expected) > 1e-5) {
          print_error("logit[%zu][%zu] = %g, expected %g\n", i, k, (double)logits[i * CLASSES + k], expected);
          fail();
        }
      }
    }
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    ASSERT_OK(dpt_trainer_evaluate(t, x, BATCH_IN, y, BATCH, &r));
    assert_int_equal(r.samples, BATCH);
    assert_true(fabs(r.loss - log(3.0)) < 1e-6);
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    ASSERT_OK(dpt_trainer_evaluate_dataset(t, f->data, 3, &r)); /* batches 3 + 3 + 2 */
    assert_int_equal(r.samples, SAMPLES);
    assert_true(fabs(r.loss - log(3.0)) < 1e-6);
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    ASSERT_OK(dpt_trainer_evaluate_dataset(t, f->data, SIZE_MAX, &r)); /* one batch, no huge allocation */
    assert_int_equal(r.samples, SAMPLES);
    assert_true(fabs(r.loss - log(3.0)) < 1e-6);
    /* A model without batch norm: nothing to recompute, the parameters as they were (also with a batch larger
     * than the dataset, and more samples than it holds). */
    ASSERT_OK(dpt_trainer_recompute_batch_norm(t, f->data, SIZE_MAX, SIZE_MAX));
    {
      uint64_t after = 0;
      ASSERT_OK(dpt_trainer_parameter_checksum(t, &after));
      assert_true(after == f->checksum);
    }
  }
}

static void test_trainer_fit_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_trainer *t = f->trainer;
  const dpt_fit_options *ok = &f->fit_options;
  const option_row fit_rows[] = {
      {"struct_size 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(FOPT, struct_size, 0)}},
      {"struct_size 1", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(FOPT, struct_size, 1)}},
      {"struct_size 7", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(FOPT, struct_size, sizeof(size_t) - 1)}},
      {"epochs 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(FOPT, epochs, 0)}},
      {"batch_size 0", DPT_ERROR_INVALID_ARGUMENT, {SET_INT(FOPT, batch_size, 0)}},
  };
  dpt_fit_result result;
  dpt_step_result step;
  dpt_status status;
  size_t i;

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_fit(NULL, f->data, NULL, ok, &f->o.fit));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_fit(t, NULL, NULL, ok, &f->o.fit));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_fit(t, NULL, f->data, ok, &f->o.fit));
  ROW(WANT_SHAPE, dpt_trainer_fit(t, f->bad_shape, NULL, ok, &f->o.fit));
  ROW(WANT_SHAPE, dpt_trainer_fit(t, f->data, f->bad_shape, ok, &f->o.fit)); /* checked before training */
  ROW(WANT_CLASSES, dpt_trainer_fit(t, f->bad_classes, NULL, ok, &f->o.fit));
  ROW(WANT_CLASSES, dpt_trainer_fit(t, f->data, f->bad_classes, ok, &f->o.fit));
  {
    dpt_fit_result zero;
    memset(&zero, 0xA5, sizeof zero);
    zero.struct_size = 0;
    ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_fit(t, f->data, NULL, ok, &zero));
    assert_int_equal(zero.epochs_completed, (size_t)0xA5A5A5A5A5A5A5A5ull);
  }
  for (i = 0; i < sizeof fit_rows / sizeof fit_rows[0]; ++i) {
    dpt_fit_options options = *ok;
    char what[128];
    apply_fields(&options, fit_rows[i].sets);
    snprintf(what, sizeof what, "dpt_trainer_fit with options: %s", fit_rows[i].name);
    row_begin(f);
    row_end(f, fit_rows[i].want, dpt_trainer_fit(t, f->data, NULL, &options, &f->o.fit), what, __LINE__);
  }
  finish_table(f);

  /* Still trains: 8 samples in batches of 4 = 2 optimizer steps, the first ones of this trainer. */
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_fit(t, f->data, f->data, ok, &result));
  assert_int_equal(result.epochs_completed, 1);
  assert_int_equal(result.stopped, 0);
  assert_int_equal(result.optimizer_steps, 2);
  assert_int_equal(result.has_test, 1);
  assert_true(result.train_loss > 0.0 && result.test_loss > 0.0);

  /* Only struct_size bytes of the options are read: a batch_size of 2 past struct_size is not seen, so
   * the default batch (256) takes the whole dataset in one step. (Refusing the short struct is
   * acceptable; reading past it is not.) */
  {
    dpt_fit_options options = *ok;
    options.struct_size = offsetof(dpt_fit_options, batch_size);
    options.batch_size = 2;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    status = dpt_trainer_fit(t, f->data, NULL, &options, &result);
    if (status == DPT_OK) {
      assert_int_equal(result.optimizer_steps, 3);
    } else if (status != DPT_ERROR_INVALID_ARGUMENT) {
      print_error("fit with a short options struct returned %s: %s\n", dpt_status_string(status),
                  dpt_last_error_message());
      fail();
    }
  }
  memset(&step, 0, sizeof step);
  step.struct_size = sizeof step;
  ASSERT_OK(dpt_trainer_step(t, f->in, BATCH_IN, f->lab, BATCH, &step));
  assert_int_equal(step.optimizer_steps, status == DPT_OK ? 4 : 3);
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &f->checksum));
}

static void test_trainer_parameters_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_trainer *t = f->trainer;
  float *p = f->o.floats;
  const float *v = f->params;
  float got[PARAMS];
  size_t n = 0;
  size_t counts[DEVICES];
  uint64_t checksum = 0;

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_parameter_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_parameter_count(t, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_parameters(NULL, p, PARAMS));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_parameters(t, NULL, PARAMS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_parameters(t, p, PARAMS - 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_parameters(t, p, PARAMS + 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_parameters(t, p, 0));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_parameters(t, p, SIZE_MAX));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_replica_parameters(NULL, 0, p, PARAMS));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_get_replica_parameters(t, 0, NULL, PARAMS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_replica_parameters(t, 1, p, PARAMS - 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_get_replica_parameters(t, 1, p, PARAMS + 1));
  /* A replica index (0 .. device count - 1), not a device of the context: out of range. */
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_get_replica_parameters(t, DEVICES, p, PARAMS));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_get_replica_parameters(t, SIZE_MAX, p, PARAMS));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_set_parameters(NULL, v, PARAMS));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_set_parameters(t, NULL, PARAMS));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_parameters(t, v, PARAMS - 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_parameters(t, v, PARAMS + 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_set_parameters(t, v, 0));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_parameter_checksum(NULL, &f->o.u64));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_parameter_checksum(t, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_device_count(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_device_count(t, NULL));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_split_sizes(NULL, 8, f->o.counts, DEVICES));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_split_sizes(t, 8, NULL, DEVICES));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_split_sizes(t, 8, f->o.counts, DEVICES - 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_split_sizes(t, 8, f->o.counts, DEVICES + 1));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_split_sizes(t, 8, f->o.counts, 0));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_pipeline_cuts(NULL, NULL, 0, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_pipeline_cuts(t, NULL, 16, &f->o.size)); /* NULL, capacity 16 */

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_memory(NULL, 0, &f->o.memory));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_memory(t, 0, NULL));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_replica_memory(t, DEVICES, &f->o.memory));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_replica_memory(t, SIZE_MAX, &f->o.memory));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_times(NULL, 0, &f->o.times));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_times(t, 0, NULL));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_replica_times(t, DEVICES, &f->o.times));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_totals(NULL, 0, &f->o.times));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_replica_totals(t, 0, NULL));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_replica_totals(t, DEVICES, &f->o.times));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_trace_start(NULL, 10));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_trace_start(t, 0));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_trace_start(t, SIZE_MAX));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_trace_write(NULL, "trace.json"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_trace_write(t, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_trace_write(t, ""));
  ROW(DPT_ERROR_INVALID_STATE, dpt_trainer_trace_write(t, "never-started.json")); /* no recording runs */
  finish_table(f);
  {
    dpt_replica_memory small; /* struct_size smaller than the first layout: refused, nothing written */
    memset(&small, 0xA5, sizeof small);
    small.struct_size = sizeof(size_t);
    assert_int_equal(dpt_trainer_replica_memory(t, 0, &small), DPT_ERROR_INVALID_ARGUMENT);
    assert_true(small.parameters == 0xA5A5A5A5A5A5A5A5ULL);
  }

  /* Still usable, with the right values. */
  {
    dpt_replica_memory m;
    m.struct_size = sizeof m;
    ASSERT_OK(dpt_trainer_replica_memory(t, DEVICES - 1, &m));
    assert_int_equal(m.struct_size, sizeof m);
    assert_int_equal(m.parameters, PARAMS * sizeof(float));
    assert_int_equal(m.gradients, PARAMS * sizeof(float));
    assert_int_equal(m.total, m.parameters + m.gradients + m.optimizer_state + m.buffers + m.activations);
  }
  ASSERT_OK(dpt_trainer_parameter_count(t, &n));
  assert_int_equal(n, PARAMS);
  ASSERT_OK(dpt_trainer_device_count(t, &n));
  assert_int_equal(n, DEVICES);
  ASSERT_OK(dpt_trainer_set_parameters(t, v, PARAMS));
  ASSERT_OK(dpt_trainer_get_parameters(t, got, PARAMS));
  assert_memory_equal(got, v, sizeof got);
  memset(got, 0, sizeof got);
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, DEVICES - 1, got, PARAMS));
  assert_memory_equal(got, v, sizeof got);
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &checksum));
  {
    /* FNV-1a over the little-endian float32 bytes. */
    const uint32_t one = 1;
    unsigned char bytes[sizeof got];
    size_t i;
    memcpy(bytes, v, sizeof bytes);
    if (*(const unsigned char *)&one != 1) {
      for (i = 0; i < sizeof bytes; i += 4) {
        unsigned char b0 = bytes[i], b1 = bytes[i + 1];
        bytes[i] = bytes[i + 3];
        bytes[i + 1] = bytes[i + 2];
        bytes[i + 2] = b1;
        bytes[i + 3] = b0;
      }
    }
    assert_true(checksum == tu_fnv1a64(bytes, sizeof bytes));
  }
  f->checksum = checksum;
  ASSERT_OK(dpt_trainer_split_sizes(t, 5, counts, DEVICES));
  assert_int_equal(counts[0], 3);
  assert_int_equal(counts[1], 2);
  ASSERT_OK(dpt_trainer_split_sizes(t, SIZE_MAX, counts, DEVICES));
  assert_true(counts[0] == SIZE_MAX / 2 + 1 && counts[1] == SIZE_MAX / 2);
}

/* ---- safetensors: dpt_trainer_save_safetensors / dpt_trainer_load_safetensors ---------------- */

/* The fixture model's tensors: "0.weight" [3, 16] and "0.bias" [3]. */
#define ST_WEIGHT(shape, offsets) \
  "\"0.weight\":{\"dtype\":\"F32\",\"shape\":" shape ",\"data_offsets\":" offsets "}"
#define ST_BIAS(dtype) "\"0.bias\":{\"dtype\":\"" dtype "\",\"shape\":[3],\"data_offsets\":[192,204]}"

/* Writes a safetensors file: the header (padded with spaces to a multiple of 8), then bytes bytes of data.
 * keep: how many bytes of the file to keep (SIZE_MAX: all). */
static void write_safetensors(const char *file, const char *header, const void *data, size_t bytes,
                              size_t keep) {
  unsigned char image[1024];
  size_t length = strlen(header), padded = (length + 7) / 8 * 8, size = 8 + padded + bytes, i;
  FILE *out;
  assert_true(size <= sizeof image);
  for (i = 0; i < 8; ++i) image[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  memset(image + 8, ' ', padded);
  memcpy(image + 8, header, length);
  memcpy(image + 8 + padded, data, bytes);
  out = fopen(file, "wb");
  assert_non_null(out);
  if (keep < size) size = keep;
  assert_int_equal(fwrite(image, 1, size, out), size);
  assert_int_equal(fclose(out), 0);
}

/* Writes @p size bytes of @p data to @p path (a fixture file). */
static void write_bytes(const char *path, const void *data, size_t size) {
  FILE *out = fopen(path, "wb");
  assert_non_null(out);
  assert_int_equal(fwrite(data, 1, size, out), size);
  assert_int_equal(fclose(out), 0);
}

/* The token calls of 0.2: text and token datasets, token models and their builders, token steps. A local
 * token model (tokens [4] -> token_embedding 5x2 -> linear 5: logits [4, 5]) and trainer serve them. */
static void test_token_misuse(void **state) {
  fixture *f = (fixture *)*state;
  enum { T = 4, V = 5, N = 2 };
  const int32_t tokens[N * T] = {0, 1, 2, 3, 4, 3, 2, 1};
  const int32_t targets[N * T] = {1, 2, 3, 4, 3, 2, 1, -1};
  int32_t bad_token[N * T], bad_target[N * T], out_tokens[N * T], out_targets[N * T];
  char text[96], empty[96], binary[96], missing[96], small[96];
  float logits[N * T * V];
  dpt_model *m = NULL;
  dpt_trainer *tt = NULL;
  dpt_dataset *td = NULL;
  dpt_input_type type = DPT_INPUT_FLOAT32;
  size_t out = 0, wte = 0, qkv = 0;
  static const char kText[] = "Many a small thing has been made large by the right kind of advertising.\n";
  const unsigned char kBinary[] = {'a', 'b', 0xff, 'c'};
  memcpy(bad_token, tokens, sizeof tokens);
  memcpy(bad_target, targets, sizeof targets);
  bad_token[5] = V;
  bad_target[2] = -2;
  snprintf(text, sizeof text, "/tmp/dptrain-misuse-text-%ld.txt", (long)getpid());
  snprintf(empty, sizeof empty, "/tmp/dptrain-misuse-empty-%ld.txt", (long)getpid());
  snprintf(binary, sizeof binary, "/tmp/dptrain-misuse-binary-%ld.txt", (long)getpid());
  snprintf(small, sizeof small, "/tmp/dptrain-misuse-small-%ld.txt", (long)getpid());
  snprintf(missing, sizeof missing, "/tmp/dptrain-misuse-missing-%ld/x.txt", (long)getpid());
  write_bytes(text, kText, sizeof kText - 1);
  write_bytes(empty, "", 0);
  write_bytes(binary, kBinary, sizeof kBinary);
  write_bytes(small, "abcdefgh", 8);

  assert_int_equal(dpt_model_create_tokens(&m, T), DPT_OK);
  assert_int_equal(dpt_model_token_embedding(m, 0, V, 2, "wte", &wte), DPT_OK);
  assert_int_equal(dpt_model_linear(m, wte, V, 1, "head", &out), DPT_OK);
  assert_int_equal(dpt_trainer_create(&tt, f->ctx, m, NULL, NULL), DPT_OK);
  assert_int_equal(dpt_model_linear(m, wte, 6, 1, "qkv", &qkv), DPT_OK); /* [T, 6]: attention's input */
  assert_int_equal(dpt_dataset_create_tokens(&td, tokens, N * T, targets, N * T, N, T, V), DPT_OK);

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_text(NULL, NULL, text, 8, 0.1));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_load_text(&f->o.dataset, NULL, NULL, 8, 0.1));
  ROW(DPT_ERROR_IO, dpt_dataset_load_text(&f->o.dataset, NULL, missing, 8, 0.1));
  ROW(DPT_ERROR_FORMAT, dpt_dataset_load_text(&f->o.dataset, NULL, empty, 8, 0.1));
  ROW(DPT_ERROR_FORMAT, dpt_dataset_load_text(&f->o.dataset, NULL, binary, 8, 0.1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_load_text(&f->o.dataset, NULL, text, 0, 0.1));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_dataset_load_text(&f->o.dataset, NULL, text, ((size_t)1 << 20) + 1, 0.1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_load_text(&f->o.dataset, NULL, text, 8, 0.0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_load_text(&f->o.dataset, NULL, text, 8, 1.0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_load_text(&f->o.dataset, NULL, text, 8, NAN));
  /* A context longer than a part of the text: no window fits. */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_load_text(&f->o.dataset, NULL, small, 8, 0.5));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create_tokens(NULL, tokens, N * T, targets, N * T, N, T, V));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create_tokens(&f->o.dataset, NULL, N * T, targets, N * T, N, T, V));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_create_tokens(&f->o.dataset, tokens, N * T, NULL, N * T, N, T, V));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create_tokens(&f->o.dataset, tokens, 0, targets, 0, 0, T, V));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_create_tokens(&f->o.dataset, tokens, 0, targets, N, N, 0, V));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_dataset_create_tokens(&f->o.dataset, tokens, N * T, targets, N * T, N, T, 0));
  ROW(DPT_ERROR_SIZE_MISMATCH,
      dpt_dataset_create_tokens(&f->o.dataset, tokens, N * T - 1, targets, N * T, N, T, V));
  ROW(DPT_ERROR_SIZE_MISMATCH,
      dpt_dataset_create_tokens(&f->o.dataset, tokens, N * T, targets, N * T - 1, N, T, V));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_dataset_create_tokens(&f->o.dataset, bad_token, N * T, targets, N * T, N, T, V));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_dataset_create_tokens(&f->o.dataset, tokens, N * T, bad_target, N * T, N, T, V));
  ROW(WANT_OVERFLOW, dpt_dataset_create_tokens(&f->o.dataset, tokens, 0, targets, 2, 2, HALF_SIZE, V));

  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_input_type(NULL, &type));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_input_type(td, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_targets_per_sample(NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_targets_per_sample(td, NULL));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_tokens(NULL, 0, 1, out_tokens, T, out_targets, T));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_tokens(td, 0, 1, NULL, T, out_targets, T));
  ROW(DPT_ERROR_NULL_POINTER, dpt_dataset_copy_tokens(td, 0, 1, out_tokens, T, NULL, T));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_copy_tokens(td, 0, 0, out_tokens, 0, out_targets, 0));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_dataset_copy_tokens(td, 1, 2, out_tokens, 2 * T, out_targets, 2 * T));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_tokens(td, 0, 1, out_tokens, T - 1, out_targets, T));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_dataset_copy_tokens(td, 0, 1, out_tokens, T, out_targets, T + 1));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_dataset_copy_tokens(f->data, 0, 1, (int32_t *)f->o.floats, IN, f->o.labels, 1));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_dataset_copy_batch(td, 0, 1, f->o.floats, T, f->o.labels, T));

  ROW(DPT_ERROR_NULL_POINTER, dpt_model_create_tokens(NULL, T));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create_tokens(&f->o.model, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_create_tokens(&f->o.model, ((size_t)1 << 28) + 1));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_input_type(NULL, &type));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_input_type(f->model, NULL));
  /* The graph builders of 0.2 on the fixture's float model (unchanged by a refusal). */
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_token_embedding(NULL, 0, V, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_token_embedding(f->empty, 0, V, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_token_embedding(m, 1, V, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_token_embedding(m, 0, 0, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_model_token_embedding(m, 0, ((size_t)1 << 24) + 1, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_token_embedding(m, 0, V, 0, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_token_embedding(m, 0, V, 2, "wte", &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_linear(NULL, 0, 3, 1, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_linear(f->empty, 9, 3, 1, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_linear(f->empty, 0, 0, 1, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_linear(f->empty, 0, 3, 2, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_linear(m, 0, 3, 1, NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_position_embedding(NULL, 0, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_position_embedding(f->empty, 0, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_position_embedding(m, 0, NULL, &f->o.size));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_causal_self_attention(NULL, 0, 1, 0.0f, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_causal_self_attention(f->empty, 0, 1, 0.0f, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_causal_self_attention(m, wte, 0, 0.0f, NULL, &f->o.size));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_causal_self_attention(m, out, 2, 0.0f, NULL, &f->o.size));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_causal_self_attention(m, qkv, 1, 1.0f, NULL, &f->o.size));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_causal_self_attention(m, qkv, 1, -0.5f, NULL, &f->o.size));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_model_causal_self_attention(m, qkv, 1, NAN, NULL, &f->o.size));
  /* Tying (head.weight and wte.weight are 5x2, qkv.weight 6x2). */
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tie(NULL, "head.weight", "wte.weight"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tie(m, NULL, "wte.weight"));
  ROW(DPT_ERROR_NULL_POINTER, dpt_model_tie(m, "head.weight", NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "head.weight", "nowhere.weight"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "head", "wte.weight"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "", ""));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "head.bias", "wte.weight"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "qkv.weight", "wte.weight"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "wte.weight", "head.weight"));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(f->model, "head.weight", "wte.weight"));
  {
    size_t before = 0, after = 0;
    assert_int_equal(dpt_model_parameter_count(m, &before), DPT_OK);
    assert_int_equal(dpt_model_tie(m, "head.weight", "wte.weight"), DPT_OK);
    assert_int_equal(dpt_model_parameter_count(m, &after), DPT_OK);
    assert_int_equal(after, before - V * 2);
  }
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_model_tie(m, "head.weight", "wte.weight"));

  /* Token calls on the float trainer, float calls on the token trainer. */
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_trainer_step_tokens(f->trainer, tokens, N * T, targets, N * T, N, &f->o.step));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_trainer_evaluate_tokens(f->trainer, tokens, N * T, targets, N * T, N, &f->o.eval));
  ROW(DPT_ERROR_INVALID_ARGUMENT,
      dpt_trainer_predict_tokens(f->trainer, tokens, N * T, N, f->o.floats, N * 3));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_step(tt, f->in, N * T, f->lab, N, &f->o.step));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_predict(tt, f->in, N * T, N, f->o.floats, N * T * V));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_fit(f->trainer, td, NULL, &f->fit_options, &f->o.fit));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_fit(tt, f->data, NULL, &f->fit_options, &f->o.fit));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_evaluate_dataset(tt, f->data, 4, &f->o.eval));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_recompute_batch_norm(f->trainer, td, 4, 0));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_recompute_batch_norm(tt, f->data, 4, 0));
  /* The token trainer's own calls. */
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step_tokens(NULL, tokens, N * T, targets, N * T, N, &f->o.step));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step_tokens(tt, NULL, N * T, targets, N * T, N, &f->o.step));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_step_tokens(tt, tokens, N * T, NULL, N * T, N, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step_tokens(tt, tokens, N * T - 1, targets, N * T, N, &f->o.step));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_step_tokens(tt, tokens, N * T, targets, N, N, &f->o.step));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_step_tokens(tt, tokens, 0, targets, 0, 0, &f->o.step));
  ROW(WANT_OVERFLOW, dpt_trainer_step_tokens(tt, tokens, T, targets, T, SIZE_MAX / T + 2, &f->o.step));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_step_tokens(tt, bad_token, N * T, targets, N * T, N, &f->o.step));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_step_tokens(tt, tokens, N * T, bad_target, N * T, N, &f->o.step));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_evaluate_tokens(tt, tokens, N * T, targets, N * T, N, NULL));
  ROW(DPT_ERROR_SIZE_MISMATCH,
      dpt_trainer_evaluate_tokens(tt, tokens, N * T, targets, N * T + 1, N, &f->o.eval));
  ROW(DPT_ERROR_OUT_OF_RANGE,
      dpt_trainer_evaluate_tokens(tt, bad_token, N * T, targets, N * T, N, &f->o.eval));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_predict_tokens(tt, tokens, N * T, N, NULL, N * T * V));
  ROW(DPT_ERROR_SIZE_MISMATCH, dpt_trainer_predict_tokens(tt, tokens, N * T, N, logits, N * T * V - 1));
  ROW(DPT_ERROR_OUT_OF_RANGE, dpt_trainer_predict_tokens(tt, bad_token, N * T, N, logits, N * T * V));
  finish_table(f);

  /* Still usable: the queries, a copy, a step that counts 7 of the 8 targets, a prediction. */
  {
    dpt_step_result r;
    size_t per = 0;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    assert_int_equal(dpt_dataset_input_type(td, &type), DPT_OK);
    assert_int_equal(type, DPT_INPUT_TOKENS);
    assert_int_equal(dpt_model_input_type(m, &type), DPT_OK);
    assert_int_equal(type, DPT_INPUT_TOKENS);
    assert_int_equal(dpt_dataset_targets_per_sample(td, &per), DPT_OK);
    assert_int_equal(per, T);
    assert_int_equal(dpt_dataset_copy_tokens(td, 1, 1, out_tokens, T, out_targets, T), DPT_OK);
    assert_memory_equal(out_tokens, tokens + T, T * sizeof(int32_t));
    assert_memory_equal(out_targets, targets + T, T * sizeof(int32_t));
    assert_int_equal(dpt_trainer_step_tokens(tt, tokens, N * T, targets, N * T, N, &r), DPT_OK);
    assert_int_equal(r.targets, N * T - 1);
    assert_int_equal(r.samples, N);
    assert_int_equal(dpt_trainer_predict_tokens(tt, tokens, N * T, N, logits, N * T * V), DPT_OK);
    assert_true(isfinite(logits[0]) && isfinite(logits[N * T * V - 1]));
  }
  dpt_dataset_destroy(td);
  dpt_trainer_destroy(tt);
  dpt_model_destroy(m);
  unlink(text);
  unlink(empty);
  unlink(binary);
  unlink(small);
}

static void test_trainer_safetensors_misuse(void **state) {
  fixture *f = (fixture *)*state;
  dpt_trainer *t = f->trainer;
  char base[64], file[96], good[96], fifo[96], directory[96], cut[96], shape[96], no_bias[96], extra[96],
      integer[96], nan_file[96], garbage[96], checkpoint[96], nowhere[96];
  float data[PARAMS + 1], got[PARAMS];
  uint64_t checksum = 0;
  FILE *out;
  snprintf(base, sizeof base, "/tmp/dptrain-misuse-st-%ld", (long)getpid());
#define ST_PATH(buffer, suffix) snprintf(buffer, sizeof buffer, "%s%s", base, suffix)
  ST_PATH(file, ".safetensors");
  ST_PATH(good, "-good.safetensors");
  ST_PATH(fifo, ".fifo");
  ST_PATH(directory, ".dir");
  ST_PATH(cut, "-cut.safetensors");
  ST_PATH(shape, "-shape.safetensors");
  ST_PATH(no_bias, "-no-bias.safetensors");
  ST_PATH(extra, "-extra.safetensors");
  ST_PATH(integer, "-integer.safetensors");
  ST_PATH(nan_file, "-nan.safetensors");
  ST_PATH(garbage, "-garbage.safetensors");
  ST_PATH(checkpoint, ".ckpt");
  ST_PATH(nowhere, ".missing/x.safetensors");
#undef ST_PATH
  memcpy(data, f->params, sizeof data);
  unlink(fifo);
  rmdir(directory);
#if TEST_HAVE_FIFO
  assert_int_equal(mkfifo(fifo, 0600), 0);
#endif
  assert_int_equal(test_mkdir(directory), 0);
  write_safetensors(good, "{" ST_WEIGHT("[3,16]", "[0,192]") "," ST_BIAS("F32") "}", data, 204, SIZE_MAX);
  write_safetensors(cut, "{" ST_WEIGHT("[3,16]", "[0,192]") "," ST_BIAS("F32") "}", data, 204, 150);
  write_safetensors(shape, "{" ST_WEIGHT("[16,3]", "[0,192]") "," ST_BIAS("F32") "}", data, 204, SIZE_MAX);
  write_safetensors(no_bias, "{" ST_WEIGHT("[3,16]", "[0,192]") "}", data, 192, SIZE_MAX);
  write_safetensors(extra,
                    "{" ST_WEIGHT("[3,16]", "[0,192]") "," ST_BIAS("F32") ","
                    "\"1.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[204,208]}}",
                    data, 208, SIZE_MAX);
  write_safetensors(integer, "{" ST_WEIGHT("[3,16]", "[0,192]") "," ST_BIAS("I32") "}", data, 204, SIZE_MAX);
  data[5] = NAN;
  write_safetensors(nan_file, "{" ST_WEIGHT("[3,16]", "[0,192]") "," ST_BIAS("F32") "}", data, 204, SIZE_MAX);
  data[5] = f->params[5];
  out = fopen(garbage, "wb");
  assert_non_null(out);
  fputs("this is not a safetensors file, nor anything else\n", out);
  assert_int_equal(fclose(out), 0);
  ASSERT_OK(dpt_trainer_save(t, checkpoint));

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_save_safetensors(NULL, file));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_save_safetensors(t, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_save_safetensors(t, ""));
  ROW(DPT_ERROR_IO, dpt_trainer_save_safetensors(t, nowhere));   /* a directory that does not exist */
  ROW(DPT_ERROR_IO, dpt_trainer_save_safetensors(t, directory)); /* cannot rename a file over it */

  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_load_safetensors(NULL, good));
  ROW(DPT_ERROR_NULL_POINTER, dpt_trainer_load_safetensors(t, NULL));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_load_safetensors(t, ""));
  ROW(DPT_ERROR_IO, dpt_trainer_load_safetensors(t, nowhere)); /* missing */
  ROW(DPT_ERROR_IO, dpt_trainer_load_safetensors(t, directory));
#if TEST_HAVE_FIFO
  ROW(DPT_ERROR_IO, dpt_trainer_load_safetensors(t, fifo)); /* refused at once, without blocking */
#endif
  ROW(DPT_ERROR_IO, dpt_trainer_load_safetensors(t, "/dev/null"));
  ROW(DPT_ERROR_FORMAT, dpt_trainer_load_safetensors(t, cut));        /* truncated in the data */
  ROW(DPT_ERROR_FORMAT, dpt_trainer_load_safetensors(t, garbage));    /* a text file */
  ROW(DPT_ERROR_FORMAT, dpt_trainer_load_safetensors(t, checkpoint)); /* dptrain's own checkpoint format */
  ROW(DPT_ERROR_FORMAT, dpt_trainer_load_safetensors(t, nan_file));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_load_safetensors(t, shape)); /* 0.weight [16, 3] */
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_load_safetensors(t, no_bias));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_load_safetensors(t, extra));
  ROW(DPT_ERROR_INVALID_ARGUMENT, dpt_trainer_load_safetensors(t, integer)); /* 0.bias I32 */
  finish_table(f);

  /* Still usable: the valid file sets exactly its values; a saved file loads back. */
  ASSERT_OK(dpt_trainer_load_safetensors(t, good));
  ASSERT_OK(dpt_trainer_get_parameters(t, got, PARAMS));
  assert_memory_equal(got, data, sizeof got);
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, DEVICES - 1, got, PARAMS));
  assert_memory_equal(got, data, sizeof got);
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &checksum));
  ASSERT_OK(dpt_trainer_save_safetensors(t, file));
  ASSERT_OK(dpt_trainer_set_parameters(t, f->params + 1, PARAMS));
  ASSERT_OK(dpt_trainer_load_safetensors(t, file));
  ASSERT_OK(dpt_trainer_parameter_checksum(t, &f->checksum));
  assert_true(f->checksum == checksum);
  unlink(file), unlink(good), unlink(fifo), rmdir(directory), unlink(cut), unlink(shape), unlink(no_bias);
  unlink(extra), unlink(integer), unlink(nan_file), unlink(garbage), unlink(checkpoint);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_and_init_functions),
      cmocka_unit_test(test_world_misuse),
      cmocka_unit_test_setup_teardown(test_context_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_device_info_partial_struct, setup, teardown),
      cmocka_unit_test_setup_teardown(test_structs_of_0_1, setup, teardown),
      cmocka_unit_test_setup_teardown(test_context_environment, setup, teardown),
      cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_model_misuse, setup, teardown),
      cmocka_unit_test(test_model_builtins),
      cmocka_unit_test_setup_teardown(test_model_describe, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_graph_size_queries, setup, teardown),
      cmocka_unit_test_setup_teardown(test_model_busy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dataset_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_create_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_step_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_step_result_partial_struct, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_evaluate_predict_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_fit_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_parameters_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_trainer_safetensors_misuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_token_misuse, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
