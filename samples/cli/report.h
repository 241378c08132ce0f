/**
 * @file report.h
 * @brief The end of a training run: the human-readable summary and the --json result object.
 */
#ifndef DPTRAIN_CLI_REPORT_H
#define DPTRAIN_CLI_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <dptrain/dptrain.h>

#include "args.h"
#include "epoch_log.h"

/** @brief What a finished (or stopped) run produced. */
typedef struct run_summary {
  const train_config *config; /**< The command line. */
  double learning_rate;       /**< Base learning rate used. */
  size_t devices;             /**< Devices of the trainer (in this process). */
  size_t processes;           /**< Processes of the MPI job (1 without MPI). */
  size_t rank;                /**< This process's rank in it. */
  size_t parameters;          /**< Parameters of one replica. */
  size_t train_samples;       /**< Training samples used. */
  size_t test_samples;        /**< Test samples used. */
  uint64_t total_steps;       /**< Optimizer steps the run was planned for. */
  uint64_t warmup;            /**< Warm-up optimizer steps (given, or the recipe's). */
  /** A pipeline: where its stages after the first begin (dpt_trainer_pipeline_cuts; NULL otherwise). */
  char *pipeline_cuts;
  /** A pipeline whose stages are divided among the processes: the copies of it they hold (0 otherwise). */
  size_t pipeline_copies;
  size_t tokens_per_sample;  /**< Token models: the window length (losses per token, bits per byte); 0
                                  for image models. */
  dpt_fit_result fit;        /**< Outcome of dpt_trainer_fit(). */
  uint64_t checksum;         /**< dpt_trainer_parameter_checksum() after training. */
  dpt_replica_memory memory; /**< After training: the replica that holds the most memory. */
  /** After training: each device's times summed over the run's steps (dpt_trainer_replica_totals). */
  dpt_replica_times device_times[DPT_MAX_CPU_DEVICES];
  /** --recompute-bn: the training samples batch norm's statistics were recomputed over (0: not done), and
   *  the test set's loss and accuracy on them (when there is a test set). */
  size_t recomputed_bn_samples;
  struct {
    double loss, accuracy;
  } recomputed;
  double seconds;       /**< Wall time of training and evaluation. */
  const epoch_log *log; /**< Per-epoch metrics. */
} run_summary;

/** @brief Formats @p checksum as 16 lowercase hex digits into @p text (17 bytes). */
void format_checksum(uint64_t checksum, char text[17]);

/** @brief Prints the end-of-run summary block. */
void report_print_summary(FILE *out, const run_summary *summary);

/** @brief Writes the result as one JSON object on one line. */
void report_write_json(FILE *out, const run_summary *summary);

#endif /* DPTRAIN_CLI_REPORT_H */
