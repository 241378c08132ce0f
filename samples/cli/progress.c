/* The progress callback of dpt_trainer_fit(). */
#include "progress.h"

#include <math.h>
#include <signal.h>
#include <string.h>

#include "metrics_csv.h"

/** @brief Characters of the progress bar between its brackets. */
#define BAR_WIDTH 24

static volatile sig_atomic_t g_interrupted = 0;

static void on_interrupt(int signal_number) {
  g_interrupted = 1;
  /* Restore the default action so that a second Ctrl-C ends a run that does not stop quickly. */
  signal(signal_number, SIG_DFL);
}

void progress_install_interrupt_handler(void) {
  signal(SIGINT, on_interrupt);
}

int progress_interrupted(void) {
  return g_interrupted != 0;
}

/** @brief Number of decimal digits of @p value, for aligning "epoch  3/10". */
static int digits_of(size_t value) {
  int digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

/** @brief Samples/s as images/s, or for a token model as tokens/s; *unit says which. */
static double throughput(const progress_state *state, double samples_per_second, const char **unit) {
  *unit = state->tokens_per_sample > 0 ? "tok/s" : "img/s";
  return state->tokens_per_sample > 0 ? samples_per_second * (double)state->tokens_per_sample
                                      : samples_per_second;
}

/** @brief " (1.234 bpb)" for a token model's loss in nats per byte token, "" for an image model. */
static const char *bits_per_byte(const progress_state *state, double loss, char text[32]) {
  text[0] = '\0';
  if (state->tokens_per_sample > 0) snprintf(text, 32, " (%.3f bpb)", loss / log(2.0));
  return text;
}

static void draw_bar(progress_state *state, const dpt_progress *p) {
  const char *unit;
  char bpb[32];
  const double rate = throughput(state, p->samples_per_second, &unit);
  char bar[BAR_WIDTH + 1];
  size_t filled = p->batches > 0 ? p->batch * BAR_WIDTH / p->batches : 0;
  size_t epochs = p->epochs + state->epoch_offset;
  int width = digits_of(epochs);
  if (filled > BAR_WIDTH) filled = BAR_WIDTH;
  memset(bar, '#', filled);
  memset(bar + filled, '.', BAR_WIDTH - filled);
  bar[BAR_WIDTH] = '\0';
  /* "\033[K" clears what a longer previous line left behind. */
  fprintf(state->out, "\repoch %*zu/%zu [%s] %*zu/%zu  %7.0f %s  loss %.4f%s\033[K", width,
          p->epoch + state->epoch_offset, epochs, bar, digits_of(p->batches), p->batch, p->batches, rate,
          unit, p->loss, bits_per_byte(state, p->loss, bpb));
  fflush(state->out);
  state->bar_visible = 1;
}

static void print_batch_line(progress_state *state, const dpt_progress *p) {
  size_t epochs = p->epochs + state->epoch_offset;
  const char *unit;
  char bpb[32];
  const double rate = throughput(state, p->samples_per_second, &unit);
  fprintf(state->out, "epoch %*zu/%zu  batch %*zu/%zu  %7.0f %s  loss %.4f%s\n", digits_of(epochs),
          p->epoch + state->epoch_offset, epochs, digits_of(p->batches), p->batch, p->batches, rate, unit,
          p->loss, bits_per_byte(state, p->loss, bpb));
  fflush(state->out);
}

static epoch_record record_of(const progress_state *state, const dpt_progress *p) {
  epoch_record record;
  record.epoch = p->epoch + state->epoch_offset;
  record.train_loss = p->loss;
  record.train_accuracy = p->accuracy;
  record.has_test = p->has_test;
  record.test_loss = p->has_test ? p->test_loss : 0.0;
  record.test_accuracy = p->has_test ? p->test_accuracy : 0.0;
  record.seconds = p->epoch_seconds;
  record.images_per_second = p->samples_per_second;
  record.learning_rate = p->learning_rate;
  return record;
}

static void print_epoch_line(progress_state *state, const dpt_progress *p, const epoch_record *r) {
  FILE *out = state->out;
  size_t epochs = p->epochs + state->epoch_offset;
  const char *unit;
  char bpb[32];
  const double rate = throughput(state, r->images_per_second, &unit);
  fprintf(out, "epoch %*zu/%zu  train loss %.4f%s  train acc %.4f", digits_of(epochs), r->epoch, epochs,
          r->train_loss, bits_per_byte(state, r->train_loss, bpb), r->train_accuracy);
  if (r->has_test)
    fprintf(out, "  %s loss %.4f%s  %s acc %.4f", state->tokens_per_sample > 0 ? "val" : "test", r->test_loss,
            bits_per_byte(state, r->test_loss, bpb), state->tokens_per_sample > 0 ? "val" : "test",
            r->test_accuracy);
  fprintf(out, "  %.2f s  %.0f %s\n", r->seconds, rate, unit);
  fflush(out);
}

static void clear_bar(progress_state *state) {
  if (!state->bar_visible) return;
  fputs("\r\033[K", state->out);
  state->bar_visible = 0;
}

/* After every epoch, before the next starts, or at a batch report of --checkpoint-every: the trainer is
 * between steps, so the checkpoint is exact. */
static void save_checkpoint(progress_state *state) {
  dpt_status status;
  if (state->checkpoint_path == NULL || state->checkpoint_status != DPT_OK) return;
  status = dpt_trainer_save(state->trainer, state->checkpoint_path);
  if (status == DPT_OK) return;
  state->checkpoint_status = status;
  snprintf(state->checkpoint_error, sizeof state->checkpoint_error, "%s", dpt_last_error_message());
}

static void on_epoch(progress_state *state, const dpt_progress *p) {
  epoch_record record = record_of(state, p);
  clear_bar(state);
  print_epoch_line(state, p, &record);
  if (state->metrics != NULL) metrics_csv_write_row(state->metrics, &record);
  if (!epoch_log_append(&state->log, &record)) state->failed = 1;
  save_checkpoint(state);
}

int progress_callback(const dpt_progress *progress, void *user_data) {
  progress_state *state = (progress_state *)user_data;
  if (progress->kind == DPT_PROGRESS_BATCH && state->checkpoint_every > 0 &&
      progress->batch % state->checkpoint_every == 0)
    save_checkpoint(state);  // between optimizer steps: --checkpoint-every is a multiple of --accumulate
  if (progress->kind == DPT_PROGRESS_EPOCH) {
    state->reports = 0;
    on_epoch(state, progress);
  } else if (state->report_every > 1 && progress->batch % state->report_every != 0) {
    /* a report for the checkpoint only */
  } else if (state->tty) {
    draw_bar(state, progress);
  } else if (state->line_every <= 1 || ++state->reports % state->line_every == 0) {
    print_batch_line(state, progress);
  }
  return g_interrupted || state->failed || state->checkpoint_status != DPT_OK;
}

void progress_finish(progress_state *state) {
  if (!state->bar_visible) return;
  fputc('\n', state->out);
  state->bar_visible = 0;
}
