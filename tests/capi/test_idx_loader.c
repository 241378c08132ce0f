/*
 * The IDX loader on small generated files, plain and gzip-compressed, valid and damaged, plus the
 * Fashion-MNIST directory loader and the in-memory dataset calls (create, subset, copy_batch).
 *
 * Files are written to a mkdtemp() directory; gzip versions are made with the `gzip` program (the test
 * links only dptrain), and the gzip rows are skipped when it is missing; stored (level 0) gzip members
 * are built by hand, so that the checks of complete streams run everywhere. Files that are not regular
 * files (FIFOs, directories, devices) are loaded in a child process with a deadline.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dptrain/dptrain.h>

#include "test_util.h"

#define IMAGE_MAGIC 0x00000803u
#define LABEL_MAGIC 0x00000801u

enum { N = 5, ROWS = 3, COLS = 4, PIXELS = N * ROWS * COLS, CLASSES = 7 };

static char dir[64];  /* the temp directory */
static int have_gzip; /* `gzip` works */
static unsigned char pixels[PIXELS];
static const unsigned char labels[N] = {2, 0, 6, 1, 2}; /* 7 classes */

/* Distinct address a library could never hand out. */
static long sentinel_object;
#define SENTINEL_DATASET ((dpt_dataset *)(void *)&sentinel_object)

/* ---- files ----------------------------------------------------------------------------------- */

static void path_of(char *out, size_t capacity, const char *name) {
  snprintf(out, capacity, "%s/%s", dir, name);
}

static void put_u32(unsigned char *to, uint32_t v) {
  to[0] = (unsigned char)(v >> 24);
  to[1] = (unsigned char)(v >> 16);
  to[2] = (unsigned char)(v >> 8);
  to[3] = (unsigned char)v;
}

/* An image file: magic, count, rows, cols, then `data_size` bytes of data. Returns the length. */
static size_t build_images(unsigned char *buffer, uint32_t magic, uint32_t count, uint32_t rows,
                           uint32_t cols, const unsigned char *data, size_t data_size) {
  put_u32(buffer, magic);
  put_u32(buffer + 4, count);
  put_u32(buffer + 8, rows);
  put_u32(buffer + 12, cols);
  if (data_size) memcpy(buffer + 16, data, data_size);
  return 16 + data_size;
}

static size_t build_labels(unsigned char *buffer, uint32_t magic, uint32_t count, const unsigned char *data,
                           size_t data_size) {
  put_u32(buffer, magic);
  put_u32(buffer + 4, count);
  if (data_size) memcpy(buffer + 8, data, data_size);
  return 8 + data_size;
}

/* Writes @p size bytes to dir/name; @p path receives the full path. */
static void write_file(char *path, size_t capacity, const char *name, const void *bytes, size_t size) {
  FILE *file;
  path_of(path, capacity, name);
  file = fopen(path, "wb");
  assert_non_null(file);
  if (size) assert_int_equal(fwrite(bytes, 1, size, file), size);
  assert_int_equal(fclose(file), 0);
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *read_file(const char *path, size_t *size) {
  FILE *file = fopen(path, "rb");
  unsigned char *data;
  long length;
  assert_non_null(file);
  assert_int_equal(fseek(file, 0, SEEK_END), 0);
  length = ftell(file);
  assert_true(length >= 0);
  assert_int_equal(fseek(file, 0, SEEK_SET), 0);
  data = (unsigned char *)malloc((size_t)length + 1);
  assert_non_null(data);
  assert_int_equal(fread(data, 1, (size_t)length, file), (size_t)length);
  fclose(file);
  *size = (size_t)length;
  return data;
}

/* gzip -kfn dir/name -> dir/name.gz; @p gz_path receives its path. */
static void gzip_file(char *gz_path, size_t capacity, const char *name) {
  char command[512];
  snprintf(command, sizeof command, "gzip -kfn '%s/%s'", dir, name);
  assert_int_equal(system(command), 0);
  snprintf(gz_path, capacity, "%s/%s.gz", dir, name);
}

/* The valid 5-sample files: dir/images, dir/labels (and .gz when gzip works). */
static void write_valid_files(char *images, char *labels_path, size_t capacity) {
  unsigned char buffer[16 + PIXELS];
  size_t size = build_images(buffer, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS);
  write_file(images, capacity, "images", buffer, size);
  size = build_labels(buffer, LABEL_MAGIC, N, labels, N);
  write_file(labels_path, capacity, "labels", buffer, size);
}

static int group_setup(void **state) {
  size_t i;
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/dptrain_idx_XXXXXX");
  if (mkdtemp(dir) == NULL) {
    print_error("mkdtemp failed: %s\n", strerror(errno));
    return -1;
  }
  have_gzip = system("gzip --version >/dev/null 2>&1") == 0;
  for (i = 0; i < PIXELS; ++i) pixels[i] = (unsigned char)((i * 53 + 7) % 256);
  pixels[0] = 0;
  pixels[PIXELS - 1] = 255;
  pixels[17] = 128;
  return 0;
}

static int group_teardown(void **state) {
  char command[128];
  (void)state;
  if (dir[0] != '\0' && strncmp(dir, "/tmp/dptrain_idx_", 17) == 0) {
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) print_error("could not remove %s\n", dir);
  }
  return 0;
}

/* ---- checks ---------------------------------------------------------------------------------- */

/*
 * Non-fatal: loads @p images / @p labels_path expecting @p want; checks the message and that the out
 * pointer is untouched on failure. Returns the number of problems.
 */
static int check_load(const char *images, const char *labels_path, int want, const char *what) {
  dpt_dataset *dataset = SENTINEL_DATASET;
  dpt_status status = dpt_dataset_load_idx(&dataset, images, labels_path);
  int problems = tu_check_status(status, want, what, __FILE__, __LINE__);
  if (status != DPT_OK && dataset != SENTINEL_DATASET) {
    print_error("%s: failed but wrote *out\n", what);
    ++problems;
  }
  if (status == DPT_OK) dpt_dataset_destroy(dataset);
  return problems;
}

#define EXPECT_LOAD(images, labels_path, want)                                                              \
  do {                                                                                                      \
    if (check_load((images), (labels_path), (want), "dpt_dataset_load_idx(" #images ", " #labels_path ")")) \
      fail();                                                                                               \
  } while (0)

/* check_load, and on failure the message must contain @p must_contain. Returns the number of problems. */
static int check_load_says(const char *images, const char *labels_path, int want, const char *must_contain,
                           const char *what) {
  int problems = check_load(images, labels_path, want, what);
  if (problems == 0 && want != DPT_OK && strstr(dpt_last_error_message(), must_contain) == NULL) {
    print_error("%s: the message \"%s\" does not say \"%s\"\n", what, dpt_last_error_message(), must_contain);
    ++problems;
  }
  return problems;
}

/* Copies every sample out of @p dataset. */
static void copy_all(const dpt_dataset *dataset, float *inputs, int32_t *out_labels) {
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 0, N, inputs, PIXELS, out_labels, N));
}

/* Checks a loaded dataset against `pixels` and `labels`. */
static void check_valid_dataset(const dpt_dataset *dataset) {
  size_t count = 0, c = 0, h = 0, w = 0, classes = 0, i;
  float inputs[PIXELS];
  int32_t got_labels[N];
  float two[2 * ROWS * COLS];
  int32_t two_labels[2];
  ASSERT_OK(dpt_dataset_sample_count(dataset, &count));
  assert_int_equal(count, N);
  ASSERT_OK(dpt_dataset_shape(dataset, &c, &h, &w));
  assert_int_equal(c, 1);
  assert_int_equal(h, ROWS);
  assert_int_equal(w, COLS);
  ASSERT_OK(dpt_dataset_class_count(dataset, &classes));
  assert_int_equal(classes, CLASSES);
  copy_all(dataset, inputs, got_labels);
  for (i = 0; i < PIXELS; ++i) {
    float expected = (float)pixels[i] / 255.0f;
    if (inputs[i] != expected) {
      print_error("pixel %zu: %.9g, expected %u / 255 = %.9g\n", i, (double)inputs[i], pixels[i],
                  (double)expected);
      fail();
    }
  }
  assert_true(inputs[0] == 0.0f && inputs[PIXELS - 1] == 1.0f);
  for (i = 0; i < N; ++i) assert_int_equal(got_labels[i], labels[i]);
  /* A batch from the middle. */
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 3, 2, two, 2 * ROWS * COLS, two_labels, 2));
  assert_memory_equal(two, inputs + 3 * ROWS * COLS, sizeof two);
  assert_int_equal(two_labels[0], labels[3]);
  assert_int_equal(two_labels[1], labels[4]);
}

/* ---- valid files ----------------------------------------------------------------------------- */

static void test_valid_plain(void **state) {
  char images[256], labels_path[256];
  dpt_dataset *dataset = NULL;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  ASSERT_OK(dpt_dataset_load_idx(&dataset, images, labels_path));
  check_valid_dataset(dataset);
  dpt_dataset_destroy(dataset);
}

static void test_gzip_and_plain_identical(void **state) {
  char images[256], labels_path[256], images_gz[256], labels_gz[256];
  const char *pairs[3][2];
  float plain_inputs[PIXELS], inputs[PIXELS];
  int32_t plain_labels[N], got_labels[N];
  dpt_dataset *dataset = NULL;
  size_t i;
  (void)state;
  if (!have_gzip) skip();
  write_valid_files(images, labels_path, sizeof images);
  gzip_file(images_gz, sizeof images_gz, "images");
  gzip_file(labels_gz, sizeof labels_gz, "labels");

  ASSERT_OK(dpt_dataset_load_idx(&dataset, images, labels_path));
  copy_all(dataset, plain_inputs, plain_labels);
  dpt_dataset_destroy(dataset);

  pairs[0][0] = images_gz, pairs[0][1] = labels_gz;
  pairs[1][0] = images_gz, pairs[1][1] = labels_path; /* mixed */
  pairs[2][0] = images, pairs[2][1] = labels_gz;
  for (i = 0; i < 3; ++i) {
    dataset = NULL;
    ASSERT_OK(dpt_dataset_load_idx(&dataset, pairs[i][0], pairs[i][1]));
    check_valid_dataset(dataset);
    copy_all(dataset, inputs, got_labels);
    assert_memory_equal(inputs, plain_inputs, sizeof inputs);
    assert_memory_equal(got_labels, plain_labels, sizeof got_labels);
    dpt_dataset_destroy(dataset);
  }
}

/* Every u8 label is valid: 255 gives 256 classes. */
static void test_largest_label(void **state) {
  unsigned char buffer[64];
  const unsigned char two_labels[2] = {255, 0};
  char images[256], labels_path[256];
  dpt_dataset *dataset = NULL;
  size_t classes = 0;
  int32_t got[2];
  float inputs[2 * ROWS * COLS];
  (void)state;
  write_file(images, sizeof images, "two-images", buffer,
             build_images(buffer, IMAGE_MAGIC, 2, ROWS, COLS, pixels, 2 * ROWS * COLS));
  write_file(labels_path, sizeof labels_path, "two-labels", buffer,
             build_labels(buffer, LABEL_MAGIC, 2, two_labels, 2));
  ASSERT_OK(dpt_dataset_load_idx(&dataset, images, labels_path));
  ASSERT_OK(dpt_dataset_class_count(dataset, &classes));
  assert_int_equal(classes, 256);
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 0, 2, inputs, 2 * ROWS * COLS, got, 2));
  assert_int_equal(got[0], 255);
  assert_int_equal(got[1], 0);
  dpt_dataset_destroy(dataset);
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_missing_files(void **state) {
  char images[256], labels_path[256], missing[256];
  dpt_dataset *dataset = SENTINEL_DATASET;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  path_of(missing, sizeof missing, "no-such-file-idx");

  EXPECT_LOAD(missing, labels_path, DPT_ERROR_IO);
  /* The message names the file that could not be opened. */
  assert_non_null(strstr(dpt_last_error_message(), "no-such-file-idx"));
  EXPECT_LOAD(images, missing, DPT_ERROR_IO);
  assert_non_null(strstr(dpt_last_error_message(), "no-such-file-idx"));
  EXPECT_LOAD(missing, missing, DPT_ERROR_IO);
  /* A directory cannot be read as a file. */
  EXPECT_LOAD(dir, labels_path, DPT_ERROR_IO);
  EXPECT_LOAD(images, dir, DPT_ERROR_IO);
  EXPECT_LOAD("", labels_path, DPT_ERROR_IO);

  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(NULL, images, labels_path));
  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(&dataset, NULL, labels_path));
  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_dataset_load_idx(&dataset, images, NULL));
  assert_ptr_equal(dataset, SENTINEL_DATASET);
}

static void test_wrong_magic(void **state) {
  static const uint32_t bad_image_magics[] = {0x12345678u, 0x00000801u, 0x00000903u, 0x00000D03u, 0x00000802u,
                                              0x00000804u, 0x03080000u, 0x00010803u, 0u};
  static const uint32_t bad_label_magics[] = {0x12345678u, 0x00000803u, 0x00000901u, 0x01080000u, 0u};
  char images[256], labels_path[256], path[256];
  unsigned char buffer[16 + PIXELS];
  size_t i;
  int problems = 0;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);

  EXPECT_LOAD(images, images, DPT_ERROR_FORMAT);           /* an image file as labels */
  EXPECT_LOAD(labels_path, labels_path, DPT_ERROR_FORMAT); /* a label file as images */
  EXPECT_LOAD(labels_path, images, DPT_ERROR_FORMAT);      /* swapped */

  for (i = 0; i < sizeof bad_image_magics / sizeof bad_image_magics[0]; ++i) {
    char what[96];
    write_file(path, sizeof path, "bad-magic-images", buffer,
               build_images(buffer, bad_image_magics[i], N, ROWS, COLS, pixels, PIXELS));
    snprintf(what, sizeof what, "images with magic 0x%08x", (unsigned)bad_image_magics[i]);
    problems += check_load(path, labels_path, DPT_ERROR_FORMAT, what);
  }
  for (i = 0; i < sizeof bad_label_magics / sizeof bad_label_magics[0]; ++i) {
    char what[96];
    write_file(path, sizeof path, "bad-magic-labels", buffer,
               build_labels(buffer, bad_label_magics[i], N, labels, N));
    snprintf(what, sizeof what, "labels with magic 0x%08x", (unsigned)bad_label_magics[i]);
    problems += check_load(images, path, DPT_ERROR_FORMAT, what);
  }
  assert_int_equal(problems, 0);
}

/*
 * Every proper prefix of a valid file (header cut anywhere, data cut anywhere, empty file) fails with
 * DPT_ERROR_FORMAT (or DPT_ERROR_IO) and never crashes. @p gz: cut the gzip-compressed file instead.
 */
static int check_all_truncations(int images_side, int gz) {
  char images[256], labels_path[256], cut_path[256], source[256];
  unsigned char *full;
  size_t full_size, length;
  int problems = 0;
  write_valid_files(images, labels_path, sizeof images);
  if (gz) {
    gzip_file(source, sizeof source, images_side ? "images" : "labels");
  } else {
    snprintf(source, sizeof source, "%s", images_side ? images : labels_path);
  }
  full = read_file(source, &full_size);
  for (length = 0; length < full_size; ++length) {
    char what[128];
    write_file(cut_path, sizeof cut_path, gz ? "cut.gz" : "cut", full, length);
    snprintf(what, sizeof what, "%s%s file cut to %zu of %zu bytes", gz ? "gzip " : "",
             images_side ? "image" : "label", length, full_size);
    if (images_side)
      problems += check_load(cut_path, labels_path, WANT_FORMAT_OR_IO, what);
    else
      problems += check_load(images, cut_path, WANT_FORMAT_OR_IO, what);
  }
  free(full);
  return problems;
}

static void test_truncated_plain(void **state) {
  (void)state;
  assert_int_equal(check_all_truncations(1, 0) + check_all_truncations(0, 0), 0);
}

static void test_truncated_gzip(void **state) {
  (void)state;
  if (!have_gzip) skip();
  assert_int_equal(check_all_truncations(1, 1) + check_all_truncations(0, 1), 0);
}

/*
 * Every single-byte corruption of a gzip file after its 10-byte header (deflate data, CRC-32, length)
 * is detected: the data then decodes differently, too long or too short, or fails its checksum.
 */
static void test_corrupt_gzip(void **state) {
  char images[256], labels_path[256], gz[256], bad[256];
  unsigned char *full;
  size_t size, i;
  int problems = 0;
  (void)state;
  if (!have_gzip) skip();
  write_valid_files(images, labels_path, sizeof images);
  gzip_file(gz, sizeof gz, "images");
  full = read_file(gz, &size);
  for (i = 10; i < size; ++i) {
    char what[96];
    full[i] ^= 0x55;
    write_file(bad, sizeof bad, "flipped.gz", full, size);
    full[i] ^= 0x55;
    snprintf(what, sizeof what, "gzip image file with byte %zu of %zu flipped", i, size);
    problems += check_load(bad, labels_path, WANT_FORMAT_OR_IO, what);
  }
  free(full);
  assert_int_equal(problems, 0);
}

static void test_trailing_bytes(void **state) {
  char images[256], labels_path[256], path[256], gz[256];
  unsigned char buffer[16 + PIXELS + 1000];
  size_t size;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  memset(buffer, 0, sizeof buffer);

  size = build_images(buffer, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS);
  write_file(path, sizeof path, "long-images", buffer, size + 1);
  EXPECT_LOAD(path, labels_path, DPT_ERROR_FORMAT);
  write_file(path, sizeof path, "long-images", buffer, size + 1000);
  EXPECT_LOAD(path, labels_path, DPT_ERROR_FORMAT);
  if (have_gzip) {
    write_file(path, sizeof path, "long-images", buffer, size + 1);
    gzip_file(gz, sizeof gz, "long-images");
    EXPECT_LOAD(gz, labels_path, DPT_ERROR_FORMAT);
  }
  size = build_labels(buffer, LABEL_MAGIC, N, labels, N);
  write_file(path, sizeof path, "long-labels", buffer, size + 1);
  EXPECT_LOAD(images, path, DPT_ERROR_FORMAT);
  if (have_gzip) {
    gzip_file(gz, sizeof gz, "long-labels");
    EXPECT_LOAD(images, gz, DPT_ERROR_FORMAT);
  }
}

static void test_count_mismatch(void **state) {
  char images[256], labels_path[256], path[256];
  unsigned char buffer[16 + PIXELS];
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  write_file(path, sizeof path, "four-labels", buffer,
             build_labels(buffer, LABEL_MAGIC, N - 1, labels, N - 1));
  EXPECT_LOAD(images, path, DPT_ERROR_FORMAT);
  write_file(path, sizeof path, "four-images", buffer,
             build_images(buffer, IMAGE_MAGIC, N - 1, ROWS, COLS, pixels, (N - 1) * ROWS * COLS));
  EXPECT_LOAD(path, labels_path, DPT_ERROR_FORMAT);
}

/*
 * Runs one load in a child process whose address space is capped at its current size + 1 GiB and
 * which is killed after @p seconds_limit, so that trying to allocate what an absurd header claims, or
 * blocking on a file that never delivers, shows up as a wrong status (or a kill) instead of swapping or
 * hanging the test. The child must return @p want, with a one-line message containing @p must_contain
 * (unless NULL), within 2 s. With @p labels_path NULL, @p images is a directory given to
 * dpt_dataset_load_fashion_mnist() (the test part). Returns the number of problems.
 */
static int check_load_in_child(const char *images, const char *labels_path, dpt_status want,
                               const char *must_contain, unsigned seconds_limit, const char *what) {
  int fds[2];
  pid_t pid;
  int wait_status = 0;
  struct {
    int status;
    char message[256];
  } report;
  struct timespec start, end;
  double seconds;
  ssize_t got;

  memset(&report, 0, sizeof report);
  assert_int_equal(pipe(fds), 0);
  clock_gettime(CLOCK_MONOTONIC, &start);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dpt_dataset *dataset = NULL;
    FILE *statm = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    close(fds[0]);
    if (statm != NULL) {
      if (fscanf(statm, "%lu", &pages) == 1) {
        struct rlimit limit;
        limit.rlim_cur = limit.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)1 << 30);
        setrlimit(RLIMIT_AS, &limit);
      }
      fclose(statm);
    }
    alarm(seconds_limit);
    report.status = labels_path != NULL
                        ? (int)dpt_dataset_load_idx(&dataset, images, labels_path)
                        : (int)dpt_dataset_load_fashion_mnist(&dataset, images, DPT_DATASET_TEST);
    snprintf(report.message, sizeof report.message, "%s", dpt_last_error_message());
    if (write(fds[1], &report, sizeof report) != (ssize_t)sizeof report) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  got = read(fds[0], &report, sizeof report);
  close(fds[0]);
  assert_int_equal(waitpid(pid, &wait_status, 0), pid);
  clock_gettime(CLOCK_MONOTONIC, &end);
  seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  if (WIFSIGNALED(wait_status)) {
    print_error("%s: the loader was killed by signal %d%s\n", what, WTERMSIG(wait_status),
                WTERMSIG(wait_status) == SIGALRM ? " (it did not return in time: a hang)" : "");
    return 1;
  }
  if (got != (ssize_t)sizeof report) {
    print_error("%s: no report from the child\n", what);
    return 1;
  }
  if (report.status != (int)want) {
    print_error("%s: returned %d (%s), expected %d (%s); message: \"%s\"\n", what, report.status,
                dpt_status_string((dpt_status)report.status), (int)want, dpt_status_string(want),
                report.message);
    return 1;
  }
  if (report.message[0] == '\0' || strchr(report.message, '\n') != NULL) {
    print_error("%s: bad message \"%s\"\n", what, report.message);
    return 1;
  }
  if (must_contain != NULL && strstr(report.message, must_contain) == NULL) {
    print_error("%s: the message \"%s\" does not say \"%s\"\n", what, report.message, must_contain);
    return 1;
  }
  if (seconds > 2.0) {
    print_error("%s: took %.1f s to refuse it\n", what, seconds);
    return 1;
  }
  return 0;
}

static int check_load_capped(const char *images, const char *labels_path, const char *what) {
  return check_load_in_child(images, labels_path, DPT_ERROR_FORMAT, NULL, 10, what);
}

static void test_absurd_dimensions(void **state) {
  static const struct {
    const char *name;
    uint32_t count, rows, cols;
    size_t data; /* pixel bytes actually present */
  } rows[] = {
      {"count 0xFFFFFFFF", 0xFFFFFFFFu, ROWS, COLS, PIXELS},
      {"rows 0", N, 0, COLS, 0},
      {"cols 0", N, ROWS, 0, 0},
      {"cols 100000", N, ROWS, 100000, PIXELS},
      {"65536 x 65536 x 65536", 65536, 65536, 65536, PIXELS},
      {"all 0xFFFFFFFF (product overflows 64 bits)", 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, PIXELS},
      /* 2^16 * 2^24 * 2^24 = 2^64 wraps to 0: no pixel data at all "matches". */
      {"65536 x 2^24 x 2^24 (product wraps to 0)", 65536, 1u << 24, 1u << 24, 0},
  };
  static unsigned char zero_labels[65536];
  unsigned char buffer[16 + PIXELS];
  char images[256], labels_path[256], path[256], lpath[256];
  size_t i;
  int problems = 0;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
    char what[128];
    size_t label_count = rows[i].count <= 65536 ? rows[i].count : N;
    unsigned char *label_buffer = (unsigned char *)malloc(8 + 65536);
    assert_non_null(label_buffer);
    write_file(
        path, sizeof path, "absurd-images", buffer,
        build_images(buffer, IMAGE_MAGIC, rows[i].count, rows[i].rows, rows[i].cols, pixels, rows[i].data));
    /* The label file claims the same count (so that only the image dimensions are wrong), holding as
     * many labels as it claims where that is small. */
    write_file(lpath, sizeof lpath, "absurd-labels", label_buffer,
               build_labels(label_buffer, LABEL_MAGIC, rows[i].count, zero_labels, label_count));
    free(label_buffer);
    snprintf(what, sizeof what, "images with %s", rows[i].name);
    problems += check_load_capped(path, lpath, what);
  }
  assert_int_equal(problems, 0);
}

/* ---- files that are not regular files -------------------------------------------------------- */

/*
 * A FIFO (whose open() blocks until a writer comes, so a loader that opens it plainly hangs), a directory,
 * /dev/zero (endless zeros) and /dev/null are refused with DPT_ERROR_IO naming what they are, within 2 s,
 * as the images, as the labels, behind a symlink, and through the Fashion-MNIST directory loader. Each
 * load runs in a child killed after 5 s, so a hang fails the test instead of stopping it.
 */
static void test_not_regular_files(void **state) {
  char images[256], labels_path[256], fifo[256], link_path[256], fashion[256], inside[320];
  dpt_dataset *dataset = NULL;
  int problems = 0;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  path_of(fifo, sizeof fifo, "fifo");
  unlink(fifo);
  assert_int_equal(mkfifo(fifo, 0600), 0);

  problems += check_load_in_child(fifo, labels_path, DPT_ERROR_IO, "is not a regular file (a FIFO)", 5,
                                  "a FIFO as the images");
  problems += check_load_in_child(images, fifo, DPT_ERROR_IO, "is not a regular file (a FIFO)", 5,
                                  "a FIFO as the labels");
  problems += check_load_in_child(dir, labels_path, DPT_ERROR_IO, "is not a regular file (a directory)", 5,
                                  "a directory as the images");
  problems += check_load_in_child(images, dir, DPT_ERROR_IO, "is not a regular file (a directory)", 5,
                                  "a directory as the labels");
  problems += check_load_in_child("/dev/zero", labels_path, DPT_ERROR_IO, "(a character device)", 5,
                                  "/dev/zero as the images");
  problems += check_load_in_child(images, "/dev/zero", DPT_ERROR_IO, "(a character device)", 5,
                                  "/dev/zero as the labels");
  problems += check_load_in_child("/dev/null", labels_path, DPT_ERROR_IO, "(a character device)", 5,
                                  "/dev/null as the images");

  /* A symlink is followed: to a FIFO it is refused, to a regular file it loads. */
  path_of(link_path, sizeof link_path, "link-to-fifo");
  unlink(link_path);
  assert_int_equal(symlink(fifo, link_path), 0);
  problems += check_load_in_child(link_path, labels_path, DPT_ERROR_IO, "(a FIFO)", 5, "a symlink to a FIFO");
  path_of(link_path, sizeof link_path, "link-to-images");
  unlink(link_path);
  assert_int_equal(symlink(images, link_path), 0);
  ASSERT_OK(dpt_dataset_load_idx(&dataset, link_path, labels_path));
  check_valid_dataset(dataset);
  dpt_dataset_destroy(dataset);

  /* A Fashion-MNIST directory whose t10k image file is a FIFO. */
  path_of(fashion, sizeof fashion, "fashion-fifo");
  assert_int_equal(mkdir(fashion, 0700), 0);
  snprintf(inside, sizeof inside, "%s/t10k-images-idx3-ubyte.gz", fashion);
  assert_int_equal(mkfifo(inside, 0600), 0);
  snprintf(inside, sizeof inside, "%s/t10k-labels-idx1-ubyte.gz", fashion);
  assert_int_equal(symlink(labels_path, inside), 0);
  problems +=
      check_load_in_child(fashion, NULL, DPT_ERROR_IO, "t10k-images-idx3-ubyte.gz' is not a regular file", 5,
                          "a Fashion-MNIST directory holding a FIFO");
  assert_int_equal(problems, 0);
}

/* ---- gzip streams must be complete ----------------------------------------------------------- */

/* CRC-32 as gzip uses it (reflected polynomial 0xEDB88320). */
static uint32_t gzip_crc32(const unsigned char *data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  size_t i;
  int k;
  for (i = 0; i < size; ++i) {
    crc ^= data[i];
    for (k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

static void put_le32(unsigned char *to, uint32_t v) {
  to[0] = (unsigned char)v;
  to[1] = (unsigned char)(v >> 8);
  to[2] = (unsigned char)(v >> 16);
  to[3] = (unsigned char)(v >> 24);
}

/* Where a stored member's data start: the 10-byte gzip header, then the 5-byte stored-block header. */
#define STORED_DATA_OFFSET 15
/* The size of a stored member of @p size bytes: header, 5 bytes per block of up to 65535, trailer. */
#define STORED_GZIP_SIZE(size) (10 + 5 * ((size) / 65535 + 1) + (size) + 8)

/*
 * Writes one gzip member holding @p size bytes in stored (level 0) deflate blocks of up to 65535 bytes,
 * so that the data appear verbatim in the file and a flipped byte changes the data and nothing else
 * (with one block, data byte i is at STORED_DATA_OFFSET + i). Without @p trailer the 8-byte CRC-32 /
 * length trailer is left off. Returns the member's length.
 */
static size_t stored_gzip(unsigned char *out, const unsigned char *data, size_t size, int trailer) {
  static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  size_t at = sizeof header, done = 0;
  memcpy(out, header, sizeof header);
  do {
    size_t block = size - done < 65535 ? size - done : 65535;
    out[at] = done + block == size ? 0x01 : 0x00; /* stored; the last block is final */
    out[at + 1] = (unsigned char)block;
    out[at + 2] = (unsigned char)(block >> 8);
    out[at + 3] = (unsigned char)~block;
    out[at + 4] = (unsigned char)(~block >> 8);
    if (block) memcpy(out + at + 5, data + done, block);
    at += 5 + block;
    done += block;
  } while (done < size);
  if (!trailer) return at;
  put_le32(out + at, gzip_crc32(data, size));
  put_le32(out + at + 4, (uint32_t)size);
  return at + 8;
}

/* Loads @p member (the images when @p images_side, else the labels) written to a file, expecting @p want. */
static int check_member(const unsigned char *member, size_t size, int images_side, int want,
                        const char *must_contain, const char *what) {
  char images[256], labels_path[256], path[256];
  write_valid_files(images, labels_path, sizeof images);
  write_file(path, sizeof path, "member.gz", member, size);
  return images_side ? check_load_says(path, labels_path, want, must_contain, what)
                     : check_load_says(images, path, want, must_contain, what);
}

enum { BIG = 300, BIG_SIDE = 28, BIG_PIXELS = BIG * BIG_SIDE * BIG_SIDE };

/*
 * A 235 KB image file (300 images of 28x28 with pseudo-random pixels) in a malloc'd buffer of
 * 16 + BIG_PIXELS bytes; its label file is written to dir/big-labels (@p labels_path receives the path).
 */
static unsigned char *big_files(char *labels_path, size_t capacity) {
  unsigned char *big = (unsigned char *)malloc(16 + BIG_PIXELS);
  unsigned char big_labels[8 + BIG];
  size_t i;
  assert_non_null(big);
  build_images(big, IMAGE_MAGIC, BIG, BIG_SIDE, BIG_SIDE, NULL, 0);
  for (i = 0; i < BIG_PIXELS; ++i) big[16 + i] = (unsigned char)((i * 2654435761u) >> 13);
  for (i = 0; i < BIG; ++i) big_labels[8 + i] = (unsigned char)(i % 10);
  write_file(labels_path, capacity, "big-labels", big_labels,
             build_labels(big_labels, LABEL_MAGIC, BIG, big_labels + 8, BIG));
  return big;
}

/* Where data byte @p i of a stored member written by stored_gzip() lies in the member. */
static size_t stored_offset(size_t i) {
  return 10 + 5 * (i / 65535 + 1) + i;
}

/*
 * The gzip trailer (CRC-32 and length) cut short by 1 to 8 bytes: DPT_ERROR_FORMAT saying "truncated",
 * although every data byte is there. For the small image and label files, made by gzip(1) and by hand
 * (stored), and for a 235 KB image file (zlib's gzread, which the loader used to read through, reported
 * the small files' cuts but returned this one's data without an error).
 */
static void test_gzip_trailer_cut(void **state) {
  unsigned char plain[16 + PIXELS], member[STORED_GZIP_SIZE(16 + PIXELS)];
  unsigned char *big, *big_member, *full;
  char images[256], labels_path[256], big_images[256], big_labels_path[256], gz[256], path[256];
  int side, problems = 0;
  size_t cut, size, member_size, full_size;
  dpt_dataset *dataset = NULL;
  (void)state;
  for (side = 0; side < 2; ++side) {
    size = side ? build_images(plain, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS)
                : build_labels(plain, LABEL_MAGIC, N, labels, N);
    member_size = stored_gzip(member, plain, size, 1);
    problems += check_member(member, member_size, side, DPT_OK, NULL, "a complete stored member");
    for (cut = 1; cut <= 8; ++cut) {
      char what[128];
      snprintf(what, sizeof what, "stored gzip %s file without the last %zu trailer bytes",
               side ? "image" : "label", cut);
      problems += check_member(member, member_size - cut, side, DPT_ERROR_FORMAT, "truncated", what);
    }
    if (have_gzip) {
      write_valid_files(images, labels_path, sizeof images);
      gzip_file(gz, sizeof gz, side ? "images" : "labels");
      full = read_file(gz, &full_size);
      for (cut = 1; cut <= 8; ++cut) {
        char what[128];
        snprintf(what, sizeof what, "gzip(1) %s file without the last %zu trailer bytes",
                 side ? "image" : "label", cut);
        problems += check_member(full, full_size - cut, side, DPT_ERROR_FORMAT, "truncated", what);
      }
      free(full);
    }
  }

  /* 300 images of 28x28 with pseudo-random pixels, stored in 4 blocks and compressed by gzip(1). */
  big = big_files(big_labels_path, sizeof big_labels_path);
  size = 16 + BIG_PIXELS;
  big_member = (unsigned char *)malloc(STORED_GZIP_SIZE(16 + BIG_PIXELS));
  assert_non_null(big_member);
  member_size = stored_gzip(big_member, big, size, 1);
  write_file(path, sizeof path, "big-stored.gz", big_member, member_size);
  ASSERT_OK(dpt_dataset_load_idx(&dataset, path, big_labels_path));
  dpt_dataset_destroy(dataset);
  for (cut = 1; cut <= 8; ++cut) {
    char what[128];
    write_file(path, sizeof path, "big-stored-cut.gz", big_member, member_size - cut);
    snprintf(what, sizeof what, "a stored 235 KB image file without the last %zu trailer bytes", cut);
    problems += check_load_says(path, big_labels_path, DPT_ERROR_FORMAT, "truncated", what);
  }
  free(big_member);
  if (have_gzip) {
    write_file(big_images, sizeof big_images, "big-images", big, size);
    gzip_file(gz, sizeof gz, "big-images");
    ASSERT_OK(dpt_dataset_load_idx(&dataset, gz, big_labels_path));
    dpt_dataset_destroy(dataset);
    full = read_file(gz, &full_size);
    for (cut = 1; cut <= 8; ++cut) {
      char what[128];
      write_file(path, sizeof path, "big-cut.gz", full, full_size - cut);
      snprintf(what, sizeof what, "a gzip(1) 235 KB image file without the last %zu trailer bytes", cut);
      problems += check_load_says(path, big_labels_path, DPT_ERROR_FORMAT, "truncated", what);
    }
    free(full);
  }
  free(big);
  assert_int_equal(problems, 0);
}

/*
 * A stored (level 0) gzip member with one data byte flipped: with its trailer the CRC-32 catches it; with
 * the trailer removed nothing could, so the stream must be refused as truncated instead of loading
 * different pixels or labels. Every pixel and every label byte of the small files, one at a time, and 8
 * bytes across the 4 blocks of a 235 KB one (whose flips gzread let through without the trailer).
 */
static void test_stored_gzip_flipped_byte(void **state) {
  static const size_t big_flips[] = {16, 1000, 65534, 65535, 70000, 131070, 200000, 16 + BIG_PIXELS - 1};
  unsigned char plain[16 + PIXELS], member[STORED_GZIP_SIZE(16 + PIXELS)], *big, *big_member;
  char images[256], labels_path[256], path[256], big_labels_path[256];
  dpt_dataset *dataset = NULL;
  int side, problems = 0;
  size_t i, size, member_size, header;
  (void)state;
  /* The builder is right: a complete stored member loads the same samples as the plain file. */
  write_valid_files(images, labels_path, sizeof images);
  size = build_images(plain, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS);
  write_file(path, sizeof path, "stored-images.gz", member, stored_gzip(member, plain, size, 1));
  ASSERT_OK(dpt_dataset_load_idx(&dataset, path, labels_path));
  check_valid_dataset(dataset);
  dpt_dataset_destroy(dataset);

  for (side = 0; side < 2; ++side) {
    size = side ? build_images(plain, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS)
                : build_labels(plain, LABEL_MAGIC, N, labels, N);
    header = side ? 16 : 8;
    member_size = stored_gzip(member, plain, size, 1);
    for (i = header; i < size; ++i) {
      char what[128];
      member[STORED_DATA_OFFSET + i] ^= 0x04; /* labels stay below 256 classes, pixels change */
      snprintf(what, sizeof what, "stored gzip %s file, data byte %zu flipped", side ? "image" : "label", i);
      problems += check_member(member, member_size, side, DPT_ERROR_FORMAT, "CRC-32", what);
      snprintf(what, sizeof what, "stored gzip %s file, data byte %zu flipped, no trailer",
               side ? "image" : "label", i);
      problems += check_member(member, member_size - 8, side, DPT_ERROR_FORMAT, "truncated", what);
      member[STORED_DATA_OFFSET + i] ^= 0x04;
    }
  }

  /* The 235 KB image file in 4 stored blocks: bytes of the first, the middle and the last block. */
  big = big_files(big_labels_path, sizeof big_labels_path);
  big_member = (unsigned char *)malloc(STORED_GZIP_SIZE(16 + BIG_PIXELS));
  assert_non_null(big_member);
  member_size = stored_gzip(big_member, big, 16 + BIG_PIXELS, 1);
  for (i = 0; i < sizeof big_flips / sizeof big_flips[0]; ++i) {
    char what[128];
    big_member[stored_offset(big_flips[i])] ^= 0x04;
    write_file(path, sizeof path, "big-flipped.gz", big_member, member_size);
    snprintf(what, sizeof what, "a stored 235 KB image file, data byte %zu flipped", big_flips[i]);
    problems += check_load_says(path, big_labels_path, DPT_ERROR_FORMAT, "CRC-32", what);
    write_file(path, sizeof path, "big-flipped.gz", big_member, member_size - 8);
    snprintf(what, sizeof what, "a stored 235 KB image file, data byte %zu flipped, no trailer",
             big_flips[i]);
    problems += check_load_says(path, big_labels_path, DPT_ERROR_FORMAT, "truncated", what);
    big_member[stored_offset(big_flips[i])] ^= 0x04;
  }
  free(big_member);
  free(big);
  assert_int_equal(problems, 0);
}

/*
 * Concatenated gzip members are supported, as RFC 1952 allows and gzip -d reads them: the data are the
 * concatenation of the members', and every member must be complete and pass its own CRC-32 and length
 * check. Bytes after the last member that are not a complete gzip member are refused.
 */
static void test_gzip_members(void **state) {
  enum { CAPACITY = 4 * STORED_GZIP_SIZE(16 + PIXELS) };
  static const unsigned char zeros[4] = {0, 0, 0, 0};
  unsigned char plain[16 + PIXELS], file[CAPACITY];
  char images[256], labels_path[256], path[256];
  dpt_dataset *dataset = NULL;
  size_t size, first, second, cut;
  int problems = 0;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  size = build_images(plain, IMAGE_MAGIC, N, ROWS, COLS, pixels, PIXELS);

  /* Three members: the first 10 bytes (inside the header), nothing, the rest. */
  first = stored_gzip(file, plain, 10, 1);
  first += stored_gzip(file + first, plain, 0, 1);
  second = stored_gzip(file + first, plain + 10, size - 10, 1);
  write_file(path, sizeof path, "members.gz", file, first + second);
  ASSERT_OK(dpt_dataset_load_idx(&dataset, path, labels_path));
  check_valid_dataset(dataset);
  dpt_dataset_destroy(dataset);

  for (cut = 1; cut <= 8; ++cut) {
    char what[96];
    snprintf(what, sizeof what, "two members, the last one's trailer cut by %zu bytes", cut);
    problems += check_member(file, first + second - cut, 1, DPT_ERROR_FORMAT, "truncated", what);
  }
  file[first + STORED_DATA_OFFSET + 20] ^= 0x01; /* a pixel of the last member */
  problems += check_member(file, first + second, 1, DPT_ERROR_FORMAT, "CRC-32", "the last member corrupt");
  file[first + STORED_DATA_OFFSET + 20] ^= 0x01;

  /* The first member without its trailer: the next member's header is read as the trailer. */
  first = stored_gzip(file, plain, 10, 0);
  second = stored_gzip(file + first, plain + 10, size - 10, 1);
  problems +=
      check_member(file, first + second, 1, DPT_ERROR_FORMAT, "'", "the first member without trailer");

  /* One complete member, then bytes that are not a gzip member. */
  first = stored_gzip(file, plain, size, 1);
  memcpy(file + first, zeros, sizeof zeros);
  problems += check_member(file, first + 4, 1, DPT_ERROR_FORMAT, "after its gzip stream",
                           "4 zero bytes after the member");
  memcpy(file + first, "junk", 4);
  problems +=
      check_member(file, first + 4, 1, DPT_ERROR_FORMAT, "after its gzip stream", "'junk' after the member");
  file[first] = 0x1f;
  problems += check_member(file, first + 1, 1, DPT_ERROR_FORMAT, "truncated", "one byte of a second member");
  memcpy(file + first, file, 10);
  problems +=
      check_member(file, first + 10, 1, DPT_ERROR_FORMAT, "truncated", "a second member's header alone");
  assert_int_equal(problems, 0);
}

/* The real Fashion-MNIST files (Debian's dataset-fashion-mnist) load completely: 60000 + 10000 28x28 samples.
 */
static void test_real_fashion_mnist_files(void **state) {
  const char *real = DPT_FASHION_MNIST_DEFAULT_DIR;
  char probe[256];
  struct stat st;
  dpt_dataset *train = NULL, *test = NULL;
  size_t count = 0, classes = 0;
  (void)state;
  snprintf(probe, sizeof probe, "%s/t10k-images-idx3-ubyte.gz", real);
  if (stat(probe, &st) != 0) skip();
  ASSERT_OK(dpt_dataset_load_fashion_mnist(&test, real, DPT_DATASET_TEST));
  ASSERT_OK(dpt_dataset_sample_count(test, &count));
  assert_int_equal(count, 10000);
  ASSERT_OK(dpt_dataset_class_count(test, &classes));
  assert_int_equal(classes, 10);
  ASSERT_OK(dpt_dataset_load_fashion_mnist(&train, real, DPT_DATASET_TRAIN));
  ASSERT_OK(dpt_dataset_sample_count(train, &count));
  assert_int_equal(count, 60000);
  dpt_dataset_destroy(train);
  dpt_dataset_destroy(test);
}

/* ---- Fashion-MNIST directory ----------------------------------------------------------------- */

static void test_fashion_mnist_missing_directory(void **state) {
  const char *missing = "/nonexistent/dptrain-fashion-test-dir";
  const char *saved = getenv("DPTRAIN_DATA_DIR");
  char saved_copy[512] = "";
  int had = saved != NULL;
  dpt_dataset *dataset = SENTINEL_DATASET;
  (void)state;
  if (had) snprintf(saved_copy, sizeof saved_copy, "%s", saved);

  EXPECT_STATUS(DPT_ERROR_IO, dpt_dataset_load_fashion_mnist(&dataset, missing, DPT_DATASET_TRAIN));
  assert_non_null(strstr(dpt_last_error_message(), missing));
  EXPECT_STATUS(DPT_ERROR_IO, dpt_dataset_load_fashion_mnist(&dataset, missing, DPT_DATASET_TEST));
  assert_non_null(strstr(dpt_last_error_message(), missing));
  assert_ptr_equal(dataset, SENTINEL_DATASET);

  /* directory NULL: DPTRAIN_DATA_DIR. */
  assert_int_equal(setenv("DPTRAIN_DATA_DIR", "/nonexistent/dptrain-env-data-dir", 1), 0);
  EXPECT_STATUS(DPT_ERROR_IO, dpt_dataset_load_fashion_mnist(&dataset, NULL, DPT_DATASET_TEST));
  assert_non_null(strstr(dpt_last_error_message(), "/nonexistent/dptrain-env-data-dir"));
  assert_ptr_equal(dataset, SENTINEL_DATASET);
  if (had)
    setenv("DPTRAIN_DATA_DIR", saved_copy, 1);
  else
    unsetenv("DPTRAIN_DATA_DIR");
}

/* A directory holding only the t10k files: the test part loads, the train part names its file. */
static void test_fashion_mnist_directory(void **state) {
  enum { FN = 3, SIDE = 28 };
  static unsigned char image_data[FN * SIDE * SIDE];
  static const unsigned char fashion_labels[FN] = {9, 0, 4};
  unsigned char *buffer = (unsigned char *)malloc(16 + sizeof image_data);
  char fashion[256], images[256], labels_path[256], gz[256], command[1200];
  dpt_dataset *dataset = NULL;
  size_t count = 0, c = 0, h = 0, w = 0, classes = 0, i;
  float *inputs;
  int32_t got[FN];
  (void)state;
  assert_non_null(buffer);
  path_of(fashion, sizeof fashion, "fashion");
  assert_int_equal(mkdir(fashion, 0700), 0);
  for (i = 0; i < sizeof image_data; ++i) image_data[i] = (unsigned char)(i * 7);

  write_file(images, sizeof images, "fashion/t10k-images-idx3-ubyte", buffer,
             build_images(buffer, IMAGE_MAGIC, FN, SIDE, SIDE, image_data, sizeof image_data));
  write_file(labels_path, sizeof labels_path, "fashion/t10k-labels-idx1-ubyte", buffer,
             build_labels(buffer, LABEL_MAGIC, FN, fashion_labels, FN));
  free(buffer);
  if (have_gzip) {
    gzip_file(gz, sizeof gz, "fashion/t10k-images-idx3-ubyte");
    gzip_file(gz, sizeof gz, "fashion/t10k-labels-idx1-ubyte");
  } else { /* zlib reads plain files too; only the names matter */
    snprintf(command, sizeof command, "cp '%s' '%s.gz' && cp '%s' '%s.gz'", images, images, labels_path,
             labels_path);
    assert_int_equal(system(command), 0);
  }

  ASSERT_OK(dpt_dataset_load_fashion_mnist(&dataset, fashion, DPT_DATASET_TEST));
  ASSERT_OK(dpt_dataset_sample_count(dataset, &count));
  assert_int_equal(count, FN);
  ASSERT_OK(dpt_dataset_shape(dataset, &c, &h, &w));
  assert_int_equal(c, 1);
  assert_int_equal(h, SIDE);
  assert_int_equal(w, SIDE);
  ASSERT_OK(dpt_dataset_class_count(dataset, &classes));
  assert_int_equal(classes, 10);
  inputs = (float *)malloc(sizeof image_data * sizeof *inputs);
  assert_non_null(inputs);
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 0, FN, inputs, sizeof image_data, got, FN));
  for (i = 0; i < sizeof image_data; ++i) assert_true(inputs[i] == (float)image_data[i] / 255.0f);
  for (i = 0; i < FN; ++i) assert_int_equal(got[i], fashion_labels[i]);
  free(inputs);
  dpt_dataset_destroy(dataset);

  dataset = SENTINEL_DATASET;
  EXPECT_STATUS(DPT_ERROR_IO, dpt_dataset_load_fashion_mnist(&dataset, fashion, DPT_DATASET_TRAIN));
  assert_non_null(strstr(dpt_last_error_message(), "train-"));
  assert_ptr_equal(dataset, SENTINEL_DATASET);
}

/* ---- in-memory datasets ---------------------------------------------------------------------- */

static void test_create_subset_copy_round_trip(void **state) {
  enum { S = 6, C = 2, H = 2, W = 3, F = C * H * W, K = 7 };
  float inputs[S * F], original[S * F], got[S * F];
  int32_t in_labels[S] = {4, 0, 1, 2, 3, 4}, original_labels[S], got_labels[S];
  dpt_dataset *dataset = NULL, *subset = NULL, *inner = NULL, *whole = NULL;
  size_t count = 0, c = 0, h = 0, w = 0, classes = 0, i;
  (void)state;
  for (i = 0; i < S * F; ++i) inputs[i] = (float)i * 0.5f - 3.25f;
  memcpy(original, inputs, sizeof inputs);
  memcpy(original_labels, in_labels, sizeof in_labels);

  ASSERT_OK(dpt_dataset_create(&dataset, inputs, S * F, in_labels, S, C, H, W, K));
  /* The arrays were copied: changing them afterwards changes nothing. */
  for (i = 0; i < S * F; ++i) inputs[i] = -1.0f;
  for (i = 0; i < S; ++i) in_labels[i] = 0;

  ASSERT_OK(dpt_dataset_sample_count(dataset, &count));
  assert_int_equal(count, S);
  ASSERT_OK(dpt_dataset_shape(dataset, &c, &h, &w));
  assert_int_equal(c, C);
  assert_int_equal(h, H);
  assert_int_equal(w, W);
  ASSERT_OK(dpt_dataset_class_count(dataset, &classes));
  assert_int_equal(classes, K); /* as given, not max label + 1 */
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 0, S, got, S * F, got_labels, S));
  assert_memory_equal(got, original, sizeof got);
  assert_memory_equal(got_labels, original_labels, sizeof got_labels);
  ASSERT_OK(dpt_dataset_copy_batch(dataset, 1, 2, got, 2 * F, got_labels, 2));
  assert_memory_equal(got, original + F, 2 * F * sizeof(float));
  assert_int_equal(got_labels[0], original_labels[1]);
  assert_int_equal(got_labels[1], original_labels[2]);

  /* subset [2, 5) */
  ASSERT_OK(dpt_dataset_subset(&subset, dataset, 2, 3));
  ASSERT_OK(dpt_dataset_sample_count(subset, &count));
  assert_int_equal(count, 3);
  ASSERT_OK(dpt_dataset_shape(subset, &c, &h, &w));
  assert_true(c == C && h == H && w == W);
  /* A subset keeps the source's classes: the model it feeds has not changed. */
  ASSERT_OK(dpt_dataset_class_count(subset, &classes));
  assert_int_equal(classes, K);
  ASSERT_OK(dpt_dataset_copy_batch(subset, 0, 3, got, 3 * F, got_labels, 3));
  assert_memory_equal(got, original + 2 * F, 3 * F * sizeof(float));
  assert_memory_equal(got_labels, original_labels + 2, 3 * sizeof(int32_t));

  /* subset of the subset: sample 3 of the source */
  ASSERT_OK(dpt_dataset_subset(&inner, subset, 1, 1));
  ASSERT_OK(dpt_dataset_copy_batch(inner, 0, 1, got, F, got_labels, 1));
  assert_memory_equal(got, original + 3 * F, F * sizeof(float));
  assert_int_equal(got_labels[0], original_labels[3]);

  /* The whole range, then the source goes first: subsets hold copies. */
  ASSERT_OK(dpt_dataset_subset(&whole, dataset, 0, S));
  dpt_dataset_destroy(dataset);
  ASSERT_OK(dpt_dataset_copy_batch(whole, 0, S, got, S * F, got_labels, S));
  assert_memory_equal(got, original, sizeof got);
  assert_memory_equal(got_labels, original_labels, sizeof got_labels);
  ASSERT_OK(dpt_dataset_copy_batch(subset, 2, 1, got, F, got_labels, 1));
  assert_memory_equal(got, original + 4 * F, F * sizeof(float));
  dpt_dataset_destroy(whole);
  dpt_dataset_destroy(inner);
  dpt_dataset_destroy(subset);
}

/* An IDX dataset works with subset / copy_batch like any other. */
static void test_idx_subset(void **state) {
  char images[256], labels_path[256];
  dpt_dataset *dataset = NULL, *subset = NULL;
  float all[PIXELS], part[3 * ROWS * COLS];
  int32_t all_labels[N], part_labels[3];
  size_t classes = 0;
  (void)state;
  write_valid_files(images, labels_path, sizeof images);
  ASSERT_OK(dpt_dataset_load_idx(&dataset, images, labels_path));
  copy_all(dataset, all, all_labels);
  ASSERT_OK(dpt_dataset_subset(&subset, dataset, 1, 3));
  dpt_dataset_destroy(dataset);
  ASSERT_OK(dpt_dataset_copy_batch(subset, 0, 3, part, 3 * ROWS * COLS, part_labels, 3));
  assert_memory_equal(part, all + ROWS * COLS, sizeof part);
  assert_memory_equal(part_labels, all_labels + 1, sizeof part_labels);
  ASSERT_OK(dpt_dataset_class_count(subset, &classes));
  assert_int_equal(classes, CLASSES);
  dpt_dataset_destroy(subset);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_plain),
      cmocka_unit_test(test_gzip_and_plain_identical),
      cmocka_unit_test(test_largest_label),
      cmocka_unit_test(test_missing_files),
      cmocka_unit_test(test_wrong_magic),
      cmocka_unit_test(test_truncated_plain),
      cmocka_unit_test(test_truncated_gzip),
      cmocka_unit_test(test_corrupt_gzip),
      cmocka_unit_test(test_trailing_bytes),
      cmocka_unit_test(test_count_mismatch),
      cmocka_unit_test(test_absurd_dimensions),
      cmocka_unit_test(test_not_regular_files),
      cmocka_unit_test(test_gzip_trailer_cut),
      cmocka_unit_test(test_stored_gzip_flipped_byte),
      cmocka_unit_test(test_gzip_members),
      cmocka_unit_test(test_real_fashion_mnist_files),
      cmocka_unit_test(test_fashion_mnist_missing_directory),
      cmocka_unit_test(test_fashion_mnist_directory),
      cmocka_unit_test(test_create_subset_copy_round_trip),
      cmocka_unit_test(test_idx_subset),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
