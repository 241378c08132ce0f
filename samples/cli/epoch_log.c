/* A growable array of per-epoch metrics. */
#include "epoch_log.h"

#include <stdlib.h>

int epoch_log_append(epoch_log *log, const epoch_record *record) {
  if (log->count == log->capacity) {
    size_t capacity = log->capacity > 0 ? log->capacity * 2 : 16;
    epoch_record *grown = (epoch_record *)realloc(log->records, capacity * sizeof *grown);
    if (grown == NULL) return 0;
    log->records = grown;
    log->capacity = capacity;
  }
  log->records[log->count++] = *record;
  return 1;
}

void epoch_log_free(epoch_log *log) {
  free(log->records);
  log->records = NULL;
  log->count = 0;
  log->capacity = 0;
}
