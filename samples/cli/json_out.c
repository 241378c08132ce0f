/* A minimal streaming JSON writer. */
#include "json_out.h"

#include <inttypes.h>
#include <math.h>

void json_init(json_writer *w, FILE *out) {
  w->out = out;
  w->depth = 0;
  w->has_items[0] = 0;
}

static void write_escaped(FILE *out, const char *text) {
  const unsigned char *p = (const unsigned char *)text;
  fputc('"', out);
  for (; *p != '\0'; ++p) {
    if (*p == '"' || *p == '\\') {
      fputc('\\', out);
      fputc(*p, out);
    } else if (*p < 0x20) {
      fprintf(out, "\\u%04x", *p);
    } else {
      fputc(*p, out);
    }
  }
  fputc('"', out);
}

/** @brief Writes the separator and the key (when given) in front of a new item. */
static void begin_item(json_writer *w, const char *key) {
  if (w->has_items[w->depth]) fputc(',', w->out);
  w->has_items[w->depth] = 1;
  if (key != NULL) {
    write_escaped(w->out, key);
    fputc(':', w->out);
  }
}

static void open_container(json_writer *w, const char *key, char bracket) {
  begin_item(w, key);
  fputc(bracket, w->out);
  if (w->depth + 1 < JSON_MAX_DEPTH) ++w->depth;
  w->has_items[w->depth] = 0;
}

static void close_container(json_writer *w, char bracket) {
  fputc(bracket, w->out);
  if (w->depth > 0) --w->depth;
}

void json_object_begin(json_writer *w, const char *key) {
  open_container(w, key, '{');
}
void json_object_end(json_writer *w) {
  close_container(w, '}');
}
void json_array_begin(json_writer *w, const char *key) {
  open_container(w, key, '[');
}
void json_array_end(json_writer *w) {
  close_container(w, ']');
}

void json_string(json_writer *w, const char *key, const char *value) {
  begin_item(w, key);
  write_escaped(w->out, value);
}

void json_number(json_writer *w, const char *key, double value, int digits) {
  begin_item(w, key);
  if (isfinite(value)) {
    fprintf(w->out, "%.*g", digits, value);
  } else {
    fputs("null", w->out);
  }
}

void json_uint(json_writer *w, const char *key, uint64_t value) {
  begin_item(w, key);
  fprintf(w->out, "%" PRIu64, value);
}

void json_bool(json_writer *w, const char *key, int value) {
  begin_item(w, key);
  fputs(value ? "true" : "false", w->out);
}

void json_null(json_writer *w, const char *key) {
  begin_item(w, key);
  fputs("null", w->out);
}
