/* Checkpoints through the C API: a run stopped after 2 epochs and resumed (in another trainer) matches the
 * uninterrupted run bitwise on the same devices and within the equivalence tolerance on other devices, and so
 * does one saved and stopped in the middle of an epoch;
 * misuse of the checkpoint functions returns the documented statuses; FIFOs, directories and devices are
 * refused without blocking, a 3 GiB file that is no checkpoint is refused from its header (fast, without
 * reading it), and a checkpoint holding NaN or infinite parameters is refused; a save over an existing
 * checkpoint replaces it (the case Windows' rename semantics make worth a test). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#if !defined(_WIN32)
#include <sys/resource.h>
#endif

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

/* Saves at batch 3 of the second epoch and stops there (progress_every 1). */
static int save_mid_epoch(const dpt_progress *p, void *user_data) {
  if (p->kind != DPT_PROGRESS_BATCH || p->epoch != 2 || p->batch != 3) return 0;
  ok(dpt_trainer_save((dpt_trainer *)user_data, path));
  return 1;
}

/* A checkpoint saved from a batch report in the middle of an epoch: loaded into another trainer (or the
 * stopped trainer itself going on), fit() trains the rest of that epoch in the same order, and the result
 * is bitwise the uninterrupted run's. Another batch size goes on from the same sample. */
static void test_mid_epoch_resume(void **state) {
  (void)state;
  dpt_trainer *full = make_trainer(2);
  fit(full, 3);
  size_t n = 0;
  ok(dpt_trainer_parameter_count(full, &n));
  float *expected = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
  parameters(full, expected, n);

  dpt_trainer *stopped = make_trainer(2);
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = 3;
  f.batch_size = 30;
  f.progress_every = 1;
  f.progress = save_mid_epoch;
  f.user_data = stopped;
  dpt_fit_result r = {.struct_size = sizeof r};
  ok(dpt_trainer_fit(stopped, dataset, NULL, &f, &r));
  assert_true(r.stopped);
  assert_int_equal(r.epochs_completed, 1);
  uint64_t epochs = 0, steps = 0;
  ok(dpt_trainer_step_count(stopped, &steps));
  assert_int_equal(steps, 7 + 3);

  /* Another batch size goes on from the same sample: 90 done, the other 110 in batches of 40. */
  dpt_trainer *other = make_trainer(2);
  ok(dpt_trainer_load(other, path));
  dpt_fit_options forty;
  dpt_fit_options_init(&forty);
  forty.batch_size = 40;
  ok(dpt_trainer_fit(other, dataset, NULL, &forty, NULL));
  ok(dpt_trainer_epoch_count(other, &epochs));
  ok(dpt_trainer_step_count(other, &steps));
  assert_int_equal(epochs, 2);
  assert_int_equal(steps, 10 + 3);
  dpt_trainer_destroy(other);

  dpt_trainer *resumed = make_trainer(2);
  ok(dpt_trainer_load(resumed, path));
  ok(dpt_trainer_epoch_count(resumed, &epochs));
  assert_int_equal(epochs, 1);
  fit(resumed, 2); /* the rest of epoch 2, then epoch 3 */
  ok(dpt_trainer_epoch_count(resumed, &epochs));
  assert_int_equal(epochs, 3);
  parameters(resumed, got, n);
  assert_memory_equal(got, expected, n * sizeof(float));
  fit(stopped, 2);
  parameters(stopped, got, n);
  assert_memory_equal(got, expected, n * sizeof(float));
  free(expected), free(got);
  dpt_trainer_destroy(full), dpt_trainer_destroy(stopped), dpt_trainer_destroy(resumed);
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

/* A save over an existing checkpoint replaces it whole (on Windows through MoveFileExW with
 * MOVEFILE_REPLACE_EXISTING: a plain rename refuses an existing target there): a trainer loading the path
 * gets the second state, bit for bit. */
static void test_save_replaces_existing_file(void **state) {
  dpt_trainer *t = make_trainer(2), *loaded = make_trainer(1);
  uint64_t first = 0, second = 0, got = 0;
  (void)state;
  ok(dpt_trainer_save(t, path));
  ok(dpt_trainer_parameter_checksum(t, &first));
  dpt_fit_options f;
  dpt_fit_options_init(&f);
  f.epochs = 1;
  f.batch_size = 32;
  ok(dpt_trainer_fit(t, dataset, NULL, &f, NULL));
  ok(dpt_trainer_parameter_checksum(t, &second));
  assert_true(first != second);
  ok(dpt_trainer_save(t, path));
  ok(dpt_trainer_load(loaded, path));
  ok(dpt_trainer_parameter_checksum(loaded, &got));
  assert_true(got == second);
  dpt_trainer_destroy(loaded);
  dpt_trainer_destroy(t);
}

#if !defined(_WIN32) /* FIFOs, devices, alarm(), sparse files and getrusage are POSIX */

/* ---- a deadline for calls that could hang ----------------------------------------------------- */

static const char *watchdog_what = "";

static void on_watchdog(int signal_number) {
  static const char text[] = "test_checkpoint_api: no return within the deadline (a hang): ";
  (void)signal_number;
  if (write(2, text, sizeof text - 1) < 0 || write(2, watchdog_what, strlen(watchdog_what)) < 0 ||
      write(2, "\n", 1) < 0) {
    /* nothing more to do */
  }
  _exit(1);
}

/* From now on the process ends (failing the test) unless watchdog_stop() comes within @p seconds. */
static void watchdog_start(const char *what, unsigned seconds) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_watchdog;
  sigaction(SIGALRM, &action, NULL);
  watchdog_what = what;
  alarm(seconds);
}

static void watchdog_stop(void) {
  alarm(0);
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The peak resident set of this process so far, in KiB. */
static long peak_rss_kib(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/* A FIFO (whose plain open() blocks until a writer comes), a directory, /dev/zero and /dev/null are
 * refused with DPT_ERROR_IO saying what they are, without blocking (each load under a 10 s deadline);
 * the trainer is unchanged and usable afterwards. */
static void test_load_refuses_non_regular_files(void **state) {
  static const char *const kinds[] = {"(a FIFO)", "(a directory)", "(a character device)",
                                      "(a character device)"};
  char fifo[96], directory[96];
  const char *files[4];
  uint64_t before = 0, after = 0;
  size_t i;
  dpt_trainer *t = make_trainer(1);
  (void)state;
  snprintf(fifo, sizeof fifo, "%s.fifo", path);
  snprintf(directory, sizeof directory, "%s.dir", path);
  unlink(fifo);
  rmdir(directory);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(mkdir(directory, 0700), 0);
  files[0] = fifo, files[1] = directory, files[2] = "/dev/zero", files[3] = "/dev/null";
  ok(dpt_trainer_parameter_checksum(t, &before));
  for (i = 0; i < 4; ++i) {
    dpt_status s;
    watchdog_start(files[i], 10);
    s = dpt_trainer_load(t, files[i]);
    watchdog_stop();
    if (s != DPT_ERROR_IO)
      fail_msg("%s: status %d (%s), expected DPT_ERROR_IO", files[i], s, dpt_last_error_message());
    if (strstr(dpt_last_error_message(), "is not a regular file") == NULL ||
        strstr(dpt_last_error_message(), kinds[i]) == NULL ||
        strstr(dpt_last_error_message(), files[i]) == NULL)
      fail_msg("%s: message \"%s\" does not say it is not a regular file %s", files[i],
               dpt_last_error_message(), kinds[i]);
  }
  ok(dpt_trainer_parameter_checksum(t, &after));
  assert_true(before == after);
  ok(dpt_trainer_save(t, path)); /* usable */
  ok(dpt_trainer_load(t, path));
  unlink(fifo);
  rmdir(directory);
  dpt_trainer_destroy(t);
}

/* A 3 GiB sparse file: zeros, garbage, and a real checkpoint's first bytes followed by zeros. Each load
 * must fail with DPT_ERROR_FORMAT within 2 s and without allocating anything like the file's size (the
 * process's peak RSS grows by less than 64 MiB). Before, the file was read whole first. */
static void test_load_refuses_huge_garbage_fast(void **state) {
  static const char *const names[] = {"zeros", "garbage", "a real header, then zeros"};
  const off_t huge = (off_t)3 << 30;
  unsigned char head[4096];
  char big[96];
  FILE *small;
  size_t head_size, i;
  int fd, variant;
  dpt_trainer *t = make_trainer(1);
  (void)state;
  if (sizeof(off_t) < 8) skip();
  ok(dpt_trainer_save(t, path));
  small = fopen(path, "rb");
  assert_non_null(small);
  head_size = fread(head, 1, sizeof head, small);
  fclose(small);
  assert_true(head_size > 64);
  snprintf(big, sizeof big, "%s.huge", path);
  for (variant = 0; variant < 3; ++variant) {
    long rss_before;
    double start, seconds;
    dpt_status s;
    fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    if (variant == 1) {
      for (i = 0; i < sizeof head; ++i) head[i] = (unsigned char)(i * 131 + 7);
      assert_int_equal(pwrite(fd, head, sizeof head, 0), (ssize_t)sizeof head);
    } else if (variant == 2) {
      small = fopen(path, "rb");
      assert_non_null(small);
      head_size = fread(head, 1, sizeof head, small);
      fclose(small);
      assert_int_equal(pwrite(fd, head, head_size, 0), (ssize_t)head_size);
    }
    if (ftruncate(fd, huge) != 0) {
      close(fd);
      unlink(big);
      skip(); /* a file system without large (sparse) files */
    }
    close(fd);
    rss_before = peak_rss_kib();
    watchdog_start(names[variant], 60);
    start = now_seconds();
    s = dpt_trainer_load(t, big);
    seconds = now_seconds() - start;
    watchdog_stop();
    if (s != DPT_ERROR_FORMAT)
      fail_msg("3 GiB of %s: status %d (%s), expected DPT_ERROR_FORMAT", names[variant], s,
               dpt_last_error_message());
    print_message("# 3 GiB of %s refused in %.4f s, peak RSS +%ld KiB: %s\n", names[variant], seconds,
                  peak_rss_kib() - rss_before, dpt_last_error_message());
    if (seconds > 2.0) fail_msg("3 GiB of %s: took %.1f s to refuse", names[variant], seconds);
    if (peak_rss_kib() - rss_before > 64 * 1024)
      fail_msg("3 GiB of %s: the peak RSS grew by %ld KiB", names[variant], peak_rss_kib() - rss_before);
  }
  unlink(big);
  ok(dpt_trainer_load(t, path)); /* usable */
  dpt_trainer_destroy(t);
}

#endif /* !_WIN32 */

/* A checkpoint whose CRCs are all valid but whose parameters hold a NaN or an infinity (saved from a
 * trainer given such parameters) is refused with DPT_ERROR_FORMAT naming the tensor and the index; the
 * loading trainer is unchanged and goes on training. (Optimizer state: tests/core/test_checkpoint.cpp.) */
static void test_load_refuses_non_finite_parameters(void **state) {
  char bad[96], good[96], says[64];
  dpt_trainer *source = make_trainer(1), *target = make_trainer(2);
  uint64_t before = 0, after = 0, steps_before = 0, steps_after = 0;
  size_t n = 0, c, index[3];
  float *p, *original, value[3];
  (void)state;
  snprintf(bad, sizeof bad, "%s.nan", path);
  snprintf(good, sizeof good, "%s.good", path);
  ok(dpt_trainer_parameter_count(source, &n));
  p = malloc(n * sizeof *p);
  original = malloc(n * sizeof *original);
  assert_non_null(p);
  assert_non_null(original);
  parameters(source, original, n);
  index[0] = n / 2, value[0] = NAN;
  index[1] = 0, value[1] = INFINITY;
  index[2] = n - 1, value[2] = -INFINITY;
  fit(target, 1);
  ok(dpt_trainer_save(target, good));
  ok(dpt_trainer_parameter_checksum(target, &before));
  ok(dpt_trainer_step_count(target, &steps_before));
  for (c = 0; c < 3; ++c) {
    dpt_status s;
    memcpy(p, original, n * sizeof *p);
    p[index[c]] = value[c];
    if (dpt_trainer_set_parameters(source, p, n) != DPT_OK) {
      print_message("# dpt_trainer_set_parameters refuses non-finite values: %s\n", dpt_last_error_message());
      skip();
    }
    ok(dpt_trainer_save(source, bad));
    s = dpt_trainer_load(target, bad);
    if (s != DPT_ERROR_FORMAT)
      fail_msg("parameter %zu = %g: status %d (%s), expected DPT_ERROR_FORMAT", index[c], (double)value[c], s,
               s == DPT_OK ? "loaded" : dpt_last_error_message());
    snprintf(says, sizeof says, "model.parameters[%zu] is %s", index[c],
             isnan(value[c]) ? "NaN"
             : value[c] > 0  ? "+Inf"
                             : "-Inf");
    if (strstr(dpt_last_error_message(), says) == NULL)
      fail_msg("message \"%s\" does not say \"%s\"", dpt_last_error_message(), says);
  }
  ok(dpt_trainer_parameter_checksum(target, &after));
  ok(dpt_trainer_step_count(target, &steps_after));
  assert_true(before == after);
  assert_true(steps_before == steps_after);
  fit(target, 1); /* usable */
  ok(dpt_trainer_load(target, good));
  ok(dpt_trainer_parameter_checksum(target, &after));
  assert_true(before == after);
  unlink(bad);
  unlink(good);
  free(p);
  free(original);
  dpt_trainer_destroy(source);
  dpt_trainer_destroy(target);
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
    cmocka_unit_test(test_mid_epoch_resume),
    cmocka_unit_test(test_misuse),
    cmocka_unit_test(test_save_inside_accumulation_window),
    cmocka_unit_test(test_save_replaces_existing_file),
#if !defined(_WIN32)
    cmocka_unit_test(test_load_refuses_non_regular_files),
    cmocka_unit_test(test_load_refuses_huge_garbage_fast),
#endif
    cmocka_unit_test(test_load_refuses_non_finite_parameters),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
