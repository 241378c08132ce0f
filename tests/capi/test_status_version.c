/*
 * Status codes, status strings and categories, the thread-local error message, and the version.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dptrain/dptrain.h>

#include "test_util.h"

/* Every status value with its pinned number (status.h: "Values are pinned forever"). */
static const struct {
  dpt_status status;
  int pinned;
} all_statuses[] = {
    {DPT_OK, 0},
    {DPT_ERROR_INVALID_ARGUMENT, 1000},
    {DPT_ERROR_NULL_POINTER, 1001},
    {DPT_ERROR_OUT_OF_RANGE, 1002},
    {DPT_ERROR_SIZE_MISMATCH, 1003},
    {DPT_ERROR_INVALID_STATE, 1004},
    {DPT_ERROR_BUFFER_TOO_SMALL, 1005},
    {DPT_ERROR_NON_FINITE, 1006},
    {DPT_ERROR_BUSY, 1007},
    {DPT_ERROR_UNSUPPORTED, 2000},
    {DPT_ERROR_DEVICE, 3000},
    {DPT_ERROR_OUT_OF_MEMORY, 3001},
    {DPT_ERROR_DEVICE_NOT_FOUND, 3002},
    {DPT_ERROR_COMMUNICATION, 4000},
    {DPT_ERROR_TIMEOUT, 4001},
    {DPT_ERROR_IO, 5000},
    {DPT_ERROR_FORMAT, 5001},
    {DPT_ERROR_INTERNAL, 9000},
};
#define STATUS_COUNT (sizeof all_statuses / sizeof all_statuses[0])

static void test_version_number_matches_macros(void **state) {
  (void)state;
  assert_int_equal(DPT_VERSION_NUMBER,
                   DPT_VERSION_MAJOR * 10000 + DPT_VERSION_MINOR * 100 + DPT_VERSION_PATCH);
  assert_int_equal(dpt_version_number(), DPT_VERSION_NUMBER);
}

static void test_version_string_matches_macros(void **state) {
  char expected[64];
  const char *version = dpt_version_string();
  (void)state;
  assert_non_null(version);
  snprintf(expected, sizeof expected, "%d.%d.%d", DPT_VERSION_MAJOR, DPT_VERSION_MINOR, DPT_VERSION_PATCH);
  assert_string_equal(version, expected);
  /* Static text: the same pointer (or at least the same text) every time. */
  assert_string_equal(dpt_version_string(), expected);
}

static void test_status_values_are_pinned(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < STATUS_COUNT; ++i) assert_int_equal((int)all_statuses[i].status, all_statuses[i].pinned);
}

static void test_status_strings_distinct_and_non_empty(void **state) {
  size_t i, j;
  (void)state;
  for (i = 0; i < STATUS_COUNT; ++i) {
    const char *text = dpt_status_string(all_statuses[i].status);
    if (text == NULL || text[0] == '\0' || strchr(text, '\n') != NULL) {
      print_error("dpt_status_string(%d) = %s%s%s\n", all_statuses[i].pinned, text ? "\"" : "",
                  text ? text : "NULL", text ? "\"" : "");
      fail();
    }
    for (j = 0; j < i; ++j) {
      const char *other = dpt_status_string(all_statuses[j].status);
      if (strcmp(text, other) == 0) {
        print_error("dpt_status_string(%d) and dpt_status_string(%d) are both \"%s\"\n",
                    all_statuses[i].pinned, all_statuses[j].pinned, text);
        fail();
      }
    }
  }
  /* status.h gives this one as its example. */
  assert_string_equal(dpt_status_string(DPT_ERROR_INVALID_ARGUMENT), "invalid argument");
}

static void test_status_string_of_unknown_value(void **state) {
  static const int unknown[] = {-1, 1, 999, 1006, 1999, 2001, 6000, 8999, 9001, 99999, INT32_MAX, INT32_MIN};
  const char *ok_text = dpt_status_string(DPT_OK);
  size_t i;
  (void)state;
  for (i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
    const char *text = dpt_status_string((dpt_status)unknown[i]);
    if (text == NULL) {
      print_error("dpt_status_string(%d) returned NULL\n", unknown[i]);
      fail();
    }
    /* An unknown code must not read as a success or be blank. */
    if (text[0] == '\0' || strcmp(text, ok_text) == 0) {
      print_error("dpt_status_string(%d) = \"%s\"\n", unknown[i], text);
      fail();
    }
  }
}

static void test_status_category(void **state) {
  static const struct {
    int status;
    int category;
  } cases[] = {{-5, 0},      {-1, 0},      {0, 0},       {1000, 1000}, {1001, 1000}, {1003, 1000},
               {1005, 1000}, {1999, 1000}, {2000, 2000}, {3001, 3000}, {3002, 3000}, {4001, 4000},
               {5000, 5000}, {5001, 5000}, {9000, 9000}, {9999, 9000}};
  size_t i;
  (void)state;
  for (i = 0; i < STATUS_COUNT; ++i) {
    assert_int_equal(dpt_status_category(all_statuses[i].status), all_statuses[i].pinned / 1000 * 1000);
  }
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    int got = dpt_status_category((dpt_status)cases[i].status);
    if (got != cases[i].category) {
      print_error("dpt_status_category(%d) = %d, expected %d\n", cases[i].status, got, cases[i].category);
      fail();
    }
  }
}

/* ---- the thread-local error message ---------------------------------------------------------- */

typedef struct thread_report {
  int fresh_was_empty;        /* dpt_last_error_message() was "" before any call on this thread. */
  int fresh_was_null;         /* ... or it was NULL. */
  dpt_status status;          /* status of the failing call made by the thread. */
  char message[512];          /* the message right after that call. */
  char message_later[512];    /* the message after waiting for the other thread. */
  pthread_barrier_t *barrier; /* NULL: no waiting. */
  int which;                  /* 0: NULL pointer error, 1: I/O error. */
} thread_report;

static dpt_status make_error(int which) {
  if (which == 0) return dpt_model_create(NULL, 1, 4, 4);
  {
    dpt_dataset *dataset = NULL;
    return dpt_dataset_load_idx(&dataset, "/nonexistent/dptrain-thread-test-images",
                                "/nonexistent/dptrain-thread-test-labels");
  }
}

static void copy_message(char *to, size_t capacity) {
  const char *message = dpt_last_error_message();
  snprintf(to, capacity, "%s", message ? message : "(NULL)");
}

/* Fails with DPT_ERROR_OUT_OF_RANGE: a dropout rate of 2. */
static dpt_status add_bad_dropout(void) {
  dpt_model *model = NULL;
  dpt_status status = dpt_model_create(&model, 1, 4, 4);
  if (status == DPT_OK) status = dpt_model_add_dropout(model, 2.0f);
  dpt_model_destroy(model);
  return status;
}

static void *thread_main(void *argument) {
  thread_report *report = (thread_report *)argument;
  const char *fresh = dpt_last_error_message();
  report->fresh_was_null = fresh == NULL;
  report->fresh_was_empty = fresh != NULL && fresh[0] == '\0';
  report->status = make_error(report->which);
  copy_message(report->message, sizeof report->message);
  if (report->barrier != NULL) {
    pthread_barrier_wait(report->barrier); /* both threads have failed */
    pthread_barrier_wait(report->barrier); /* both threads have read their messages */
  }
  copy_message(report->message_later, sizeof report->message_later);
  return NULL;
}

static void test_last_error_message_is_empty_on_a_fresh_thread(void **state) {
  pthread_t thread;
  thread_report report;
  (void)state;
  memset(&report, 0, sizeof report);
  report.which = 0;
  assert_int_equal(pthread_create(&thread, NULL, thread_main, &report), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_false(report.fresh_was_null);
  assert_true(report.fresh_was_empty);
  assert_int_equal(report.status, DPT_ERROR_NULL_POINTER);
  assert_true(report.message[0] != '\0');
  assert_null(strchr(report.message, '\n'));
}

static void test_last_error_message_is_thread_local(void **state) {
  pthread_t threads[2];
  thread_report reports[2];
  pthread_barrier_t barrier;
  char main_message[512];
  int i;
  (void)state;

  /* The main thread fails first with a third kind of error; its message must survive the threads. */
  EXPECT_STATUS(DPT_ERROR_OUT_OF_RANGE, add_bad_dropout());
  copy_message(main_message, sizeof main_message);

  assert_int_equal(pthread_barrier_init(&barrier, NULL, 2), 0);
  for (i = 0; i < 2; ++i) {
    memset(&reports[i], 0, sizeof reports[i]);
    reports[i].which = i;
    reports[i].barrier = &barrier;
    assert_int_equal(pthread_create(&threads[i], NULL, thread_main, &reports[i]), 0);
  }
  for (i = 0; i < 2; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  pthread_barrier_destroy(&barrier);

  assert_int_equal(reports[0].status, DPT_ERROR_NULL_POINTER);
  assert_int_equal(reports[1].status, DPT_ERROR_IO);
  for (i = 0; i < 2; ++i) {
    assert_true(reports[i].fresh_was_empty);
    assert_true(reports[i].message[0] != '\0');
    /* The other thread's failure, made meanwhile, did not replace this thread's message. */
    assert_string_equal(reports[i].message_later, reports[i].message);
  }
  /* Different errors give different messages, so the checks above can tell the threads apart. */
  assert_string_not_equal(reports[0].message, reports[1].message);
  assert_string_equal(dpt_last_error_message(), main_message);
}

static void test_success_leaves_last_error_message_unchanged(void **state) {
  dpt_model *model = NULL;
  size_t size = 0;
  char before[512];
  (void)state;
  EXPECT_STATUS(DPT_ERROR_NULL_POINTER, dpt_model_create(NULL, 1, 4, 4));
  copy_message(before, sizeof before);
  assert_true(before[0] != '\0');

  ASSERT_OK(dpt_model_create(&model, 1, 4, 4));
  ASSERT_OK(dpt_model_add_dense(model, 3));
  ASSERT_OK(dpt_model_input_size(model, &size));
  assert_int_equal(size, 16);
  (void)dpt_status_string(DPT_ERROR_IO);
  (void)dpt_version_number();
  dpt_model_destroy(model);
  assert_string_equal(dpt_last_error_message(), before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_number_matches_macros),
      cmocka_unit_test(test_version_string_matches_macros),
      cmocka_unit_test(test_status_values_are_pinned),
      cmocka_unit_test(test_status_strings_distinct_and_non_empty),
      cmocka_unit_test(test_status_string_of_unknown_value),
      cmocka_unit_test(test_status_category),
      cmocka_unit_test(test_last_error_message_is_empty_on_a_fresh_thread),
      cmocka_unit_test(test_last_error_message_is_thread_local),
      cmocka_unit_test(test_success_leaves_last_error_message_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
