/**
 * @file metrics_csv.h
 * @brief The --metrics CSV file: a header and one row per epoch, flushed as epochs finish.
 */
#ifndef DPTRAIN_CLI_METRICS_CSV_H
#define DPTRAIN_CLI_METRICS_CSV_H

#include <stdio.h>

#include "epoch_log.h"

/** @brief Writes the header line. */
void metrics_csv_write_header(FILE *out);

/** @brief Writes one row and flushes, so that a long run can be followed while it trains. */
void metrics_csv_write_row(FILE *out, const epoch_record *record);

#endif /* DPTRAIN_CLI_METRICS_CSV_H */
