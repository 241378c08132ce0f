/**
 * @file json_out.h
 * @brief A minimal streaming JSON writer (objects, arrays, strings, numbers) for the --json outputs.
 *
 * Members take a key; array elements pass NULL as the key. Non-finite numbers are written as null,
 * since JSON has no NaN or infinity.
 */
#ifndef DPTRAIN_CLI_JSON_OUT_H
#define DPTRAIN_CLI_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

/** @brief Deepest nesting the writer supports. */
#define JSON_MAX_DEPTH 8

/** @brief Writer state: the stream and, per open container, whether it already has an item. */
typedef struct json_writer {
  FILE *out;
  int depth;
  int has_items[JSON_MAX_DEPTH];
} json_writer;

/** @brief Starts writing one JSON value to @p out. */
void json_init(json_writer *w, FILE *out);

void json_object_begin(json_writer *w, const char *key);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w, const char *key);
void json_array_end(json_writer *w);
void json_string(json_writer *w, const char *key, const char *value);
/** @brief A number with @p digits significant digits (%.*g); null when not finite. */
void json_number(json_writer *w, const char *key, double value, int digits);
void json_uint(json_writer *w, const char *key, uint64_t value);
void json_bool(json_writer *w, const char *key, int value);
void json_null(json_writer *w, const char *key);

#endif /* DPTRAIN_CLI_JSON_OUT_H */
