/* The --metrics CSV file. */
#include "metrics_csv.h"

#include <math.h>

void metrics_csv_write_header(FILE *out) {
  fputs("epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,learning_rate\n",
        out);
  fflush(out);
}

/** @brief A value, or an empty field when it is missing or not finite. */
static void write_field(FILE *out, int present, double value, int digits) {
  fputc(',', out);
  if (present && isfinite(value)) fprintf(out, "%.*g", digits, value);
}

void metrics_csv_write_row(FILE *out, const epoch_record *record) {
  fprintf(out, "%zu", record->epoch);
  write_field(out, 1, record->train_loss, 10);
  write_field(out, 1, record->train_accuracy, 10);
  write_field(out, record->has_test, record->test_loss, 10);
  write_field(out, record->has_test, record->test_accuracy, 10);
  write_field(out, 1, record->seconds, 10);
  write_field(out, 1, record->images_per_second, 10);
  /* The library keeps learning rates as floats; 7 digits print 0.1f as 0.1. */
  write_field(out, 1, record->learning_rate, 7);
  fputc('\n', out);
  fflush(out);
}
