/**
 * @file epoch_log.h
 * @brief The per-epoch metrics of a run, collected from the progress callback.
 */
#ifndef DPTRAIN_CLI_EPOCH_LOG_H
#define DPTRAIN_CLI_EPOCH_LOG_H

#include <stddef.h>

/** @brief Metrics of one epoch. */
typedef struct epoch_record {
  size_t epoch;             /**< 1-based. */
  double train_loss;        /**< Mean training loss over the epoch. */
  double train_accuracy;    /**< Training accuracy over the epoch. */
  int has_test;             /**< 1 when the test set was evaluated. */
  double test_loss;         /**< With has_test. */
  double test_accuracy;     /**< With has_test. */
  double seconds;           /**< Training seconds of the epoch (evaluation excluded). */
  double images_per_second; /**< Training throughput of the epoch. */
  double learning_rate;     /**< Learning rate of the epoch's last update. */
} epoch_record;

/** @brief A growable array of epoch records. */
typedef struct epoch_log {
  epoch_record *records;
  size_t count;
  size_t capacity;
} epoch_log;

/** @brief Appends a copy of @p record; returns 0 when out of memory. */
int epoch_log_append(epoch_log *log, const epoch_record *record);

/** @brief Frees the records (the log itself is caller-owned). */
void epoch_log_free(epoch_log *log);

#endif /* DPTRAIN_CLI_EPOCH_LOG_H */
