/**
 * @file progress.h
 * @brief Progress of dpt_trainer_fit(): a live bar on a terminal, plain lines otherwise, one line per
 * epoch, per-epoch metrics collected (and appended to the CSV), and Ctrl-C turned into a clean stop.
 */
#ifndef DPTRAIN_CLI_PROGRESS_H
#define DPTRAIN_CLI_PROGRESS_H

#include <stdio.h>

#include <dptrain/dptrain.h>

#include "epoch_log.h"

/** @brief State of the progress callback. Zero it, then set the fields marked "set by the caller". */
typedef struct progress_state {
  FILE *out;                    /**< Set by the caller: the stream for human-readable progress. */
  int tty;                      /**< Set by the caller: nonzero to redraw a bar in place with '\r'. */
  size_t line_every;            /**< Set by the caller: without a terminal, a line every this many batch
                                     reports (0 = every one); the bar redraws on each. */
  size_t reports;               /**< Batch reports so far in this epoch. */
  FILE *metrics;                /**< Set by the caller: CSV stream with its header written, or NULL. */
  epoch_log log;                /**< Epochs reported so far. */
  int bar_visible;              /**< A bar is drawn on the current line. */
  int failed;                   /**< Recording an epoch ran out of memory (training is stopped). */
  size_t epoch_offset;          /**< Set by the caller: epochs done before this run (after --resume). */
  dpt_trainer *trainer;         /**< Set by the caller with checkpoint_path. */
  const char *checkpoint_path;  /**< Set by the caller: save a checkpoint here after every epoch, or NULL. */
  size_t checkpoint_every;      /**< Set by the caller: also at batch reports of every this many batches (0:
                                     epochs only). */
  size_t report_every;          /**< Set by the caller: batch reports to draw or print come every this many
                                     batches (the others are checkpoints only); 0 = every one. */
  dpt_status checkpoint_status; /**< The first failed save (training is stopped), else DPT_OK. */
  char checkpoint_error[512];   /**< Its message. */
  size_t tokens_per_sample;     /**< Set by the caller: token models' window length (throughput in tokens/s,
                                     losses also in bits per byte), 0 for image models. */
} progress_state;

/** @brief The dpt_progress_fn to pass to dpt_trainer_fit() with a progress_state as user data. */
int progress_callback(const dpt_progress *progress, void *user_data);

/** @brief Ends a bar left on screen (after an interrupted epoch). */
void progress_finish(progress_state *state);

/** @brief Makes the first Ctrl-C stop training at the next report; a second one kills the program. */
void progress_install_interrupt_handler(void);

/** @brief Nonzero after Ctrl-C. */
int progress_interrupted(void);

#endif /* DPTRAIN_CLI_PROGRESS_H */
