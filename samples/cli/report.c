/* The end-of-run summary and the --json result object. */
#include "report.h"

#include <inttypes.h>
#include <math.h>

#include "json_out.h"

/** @brief Significant digits of metrics in the JSON (beyond float32 noise, short enough to read). */
#define METRIC_DIGITS 10
/** @brief Learning rates are float32 in the library: 7 digits print 0.1f as 0.1. */
#define LR_DIGITS 7

void format_checksum(uint64_t checksum, char text[17]) {
  snprintf(text, 17, "%016" PRIx64, checksum);
}

static double mib(uint64_t bytes) {
  return (double)bytes / (1024.0 * 1024.0);
}

void report_print_summary(FILE *out, const run_summary *s) {
  char checksum[17];
  size_t i;
  format_checksum(s->checksum, checksum);
  fprintf(out, "\nsummary%s\n", s->fit.stopped ? " (stopped early)" : "");
  fprintf(out, "  model           %s (%zu parameters)\n", model_label(s->config), s->parameters);
  fprintf(out, "  devices         %zu\n", s->devices);
  fprintf(out, "  epochs          %zu of %zu\n", s->fit.epochs_completed, s->config->epochs);
  /* The fit result describes completed epochs only; a run stopped inside its first epoch has none. */
  if (s->fit.epochs_completed > 0) {
    if (s->tokens_per_sample > 0) {
      /* A byte is a token: nats per token / ln 2 are bits per byte. */
      if (s->fit.has_test)
        fprintf(out, "  val loss        %.4f nats/token, %.4f bits/byte (next-byte accuracy %.4f)\n",
                s->fit.test_loss, s->fit.test_loss / log(2.0), s->fit.test_accuracy);
      fprintf(out, "  train loss      %.4f nats/token, %.4f bits/byte\n", s->fit.train_loss,
              s->fit.train_loss / log(2.0));
      fprintf(out, "  tokens/s        %.0f\n", s->fit.samples_per_second * (double)s->tokens_per_sample);
    } else {
      if (s->fit.has_test) {
        fprintf(out, "  test accuracy   %.4f (loss %.4f)\n", s->fit.test_accuracy, s->fit.test_loss);
      }
      fprintf(out, "  train accuracy  %.4f (loss %.4f)\n", s->fit.train_accuracy, s->fit.train_loss);
      fprintf(out, "  images/s        %.0f\n", s->fit.samples_per_second);
    }
  }
  if (s->recomputed_bn_samples > 0 && s->test_samples > 0)
    fprintf(out, "  recomputed bn   test accuracy %.4f (loss %.4f), statistics of %zu training samples\n",
            s->recomputed.accuracy, s->recomputed.loss, s->recomputed_bn_samples);
  else if (s->recomputed_bn_samples > 0)
    fprintf(out, "  recomputed bn   statistics of %zu training samples\n", s->recomputed_bn_samples);
  if (s->config->precision == DPT_PRECISION_FP16)
    fprintf(out, "  loss scale      %g (%" PRIu64 " overflowing steps skipped)\n", s->fit.loss_scale,
            s->fit.overflow_steps);
  fprintf(out, "  total seconds   %.2f (training %.2f)\n", s->seconds, s->fit.train_seconds);
  if (s->memory.total > 0)
    fprintf(out,
            "  memory/device   %.1f MiB (parameters %.1f, gradients %.1f, optimizer state %.1f, activations "
            "%.1f)\n",
            mib(s->memory.total), mib(s->memory.parameters), mib(s->memory.gradients),
            mib(s->memory.optimizer_state), mib(s->memory.activations));
  for (i = 0; i < s->devices && s->device_times[0].struct_size != 0; ++i) {
    const dpt_replica_times *t = &s->device_times[i];
    fprintf(out, "  device %-8zu compute %.2f s, communication %.2f s, update %.2f s, idle %.2f s", i,
            t->compute_seconds, t->communication_seconds, t->update_seconds, t->idle_seconds);
    if (t->bus_bandwidth > 0) fprintf(out, ", bus %.2f GB/s", t->bus_bandwidth / 1e9);
    fputc('\n', out);
  }
  fprintf(out, "  param_checksum  %s\n", checksum);
  fflush(out);
}

static void write_epochs_detail(json_writer *w, const epoch_log *log) {
  size_t i;
  json_array_begin(w, "epochs_detail");
  for (i = 0; i < log->count; ++i) {
    const epoch_record *r = &log->records[i];
    json_object_begin(w, NULL);
    json_uint(w, "epoch", r->epoch);
    json_number(w, "train_loss", r->train_loss, METRIC_DIGITS);
    json_number(w, "train_accuracy", r->train_accuracy, METRIC_DIGITS);
    if (r->has_test) {
      json_number(w, "test_loss", r->test_loss, METRIC_DIGITS);
      json_number(w, "test_accuracy", r->test_accuracy, METRIC_DIGITS);
    } else {
      json_null(w, "test_loss");
      json_null(w, "test_accuracy");
    }
    json_number(w, "seconds", r->seconds, METRIC_DIGITS);
    json_number(w, "images_per_second", r->images_per_second, METRIC_DIGITS);
    json_number(w, "learning_rate", r->learning_rate, LR_DIGITS);
    json_object_end(w);
  }
  json_array_end(w);
}

/** @brief The settings of the run, as given or defaulted. */
static void write_settings(json_writer *w, const run_summary *s) {
  const train_config *c = s->config;
  size_t i;
  json_string(w, "model", model_label(c));
  json_uint(w, "parameters", s->parameters);
  json_uint(w, "devices", s->devices);
  json_uint(w, "processes", s->processes);
  json_uint(w, "epochs", c->epochs);
  json_uint(w, "batch", c->batch);
  json_number(w, "lr", s->learning_rate, LR_DIGITS);
  json_string(w, "optimizer", optimizer_name(c->optimizer));
  json_number(w, "momentum", c->momentum, LR_DIGITS);
  json_bool(w, "nesterov", c->nesterov);
  json_number(w, "weight_decay", c->weight_decay, LR_DIGITS);
  json_string(w, "schedule", schedule_name(c->schedule));
  json_uint(w, "warmup", s->warmup);
  json_number(w, "beta2", c->beta2, LR_DIGITS);
  json_string(w, "decay_scope", c->decay_scope == DPT_WEIGHT_DECAY_MATRICES ? "matrices" : "all");
  json_number(w, "clip", c->clip, LR_DIGITS);
  json_string(w, "init", init_name(c->init));
  json_number(w, "init_std", c->init_std, LR_DIGITS);
  json_string(w, "split", split_name(c->split));
  if (c->split == DPT_SPLIT_WEIGHTED) {
    json_array_begin(w, "split_weights");
    for (i = 0; i < c->split_weight_count; ++i) json_number(w, NULL, c->split_weights[i], LR_DIGITS);
    json_array_end(w);
  }
  json_string(w, "allreduce", allreduce_name(c->allreduce));
  json_uint(w, "accumulate", c->accumulate);
  json_uint(w, "bucket_kib", c->bucket_kib);
  json_string(w, "batch_norm", batch_norm_name(c->batch_norm));
  json_string(w, "precision", precision_name(c->precision));
  json_string(w, "allreduce_dtype", precision_name(c->allreduce_dtype));
  json_string(w, "activation_dtype", precision_name(c->activation_dtype));
  json_string(w, "shard", shard_name(c->shard));
  json_string(w, "shard_scope", shard_scope_name(c->shard_scope));
  json_bool(w, "prefetch_parameters", c->prefetch_parameters);
  json_uint(w, "pipeline_stages", c->pipeline > 1 ? c->pipeline : 1);
  if (c->pipeline > 1) {
    json_uint(w, "micro_batches", c->micro_batches > 0 ? c->micro_batches : 4 * c->pipeline);
    json_string(w, "pipeline_schedule", pipeline_schedule_name(c->pipeline_schedule));
    json_string(w, "pipeline_scope", pipeline_scope_name(c->pipeline_scope));
    if (s->pipeline_copies > 0) json_uint(w, "pipeline_copies", s->pipeline_copies);
    json_string(w, "pipeline_balance",
                c->pipeline_cuts != NULL ? "named" : pipeline_balance_name(c->pipeline_balance));
    if (s->pipeline_cuts != NULL) json_string(w, "pipeline_cuts", s->pipeline_cuts);
  }
  json_uint(w, "seed", c->seed);
  json_uint(w, "train_samples", s->train_samples);
  json_uint(w, "test_samples", s->test_samples);
  if (s->tokens_per_sample > 0) {
    json_string(w, "text", c->text_path != NULL ? c->text_path : CLI_DEFAULT_TEXT);
    json_uint(w, "tokens_per_sample", s->tokens_per_sample);
  }
}

/** @brief A metric, or null when the run produced none (stopped before the first epoch ended). */
static void write_metric(json_writer *w, const char *key, double value, int present) {
  if (present) {
    json_number(w, key, value, METRIC_DIGITS);
  } else {
    json_null(w, key);
  }
}

static void write_results(json_writer *w, const run_summary *s) {
  /* The fit result describes completed epochs only. */
  int have_epoch = s->fit.epochs_completed > 0;
  int have_test = have_epoch && s->fit.has_test;
  char checksum[17];
  size_t i;
  format_checksum(s->checksum, checksum);
  json_uint(w, "epochs_completed", s->fit.epochs_completed);
  json_bool(w, "stopped", s->fit.stopped);
  write_metric(w, "test_accuracy", s->fit.test_accuracy, have_test);
  write_metric(w, "test_loss", s->fit.test_loss, have_test);
  write_metric(w, "train_loss", s->fit.train_loss, have_epoch);
  write_metric(w, "train_accuracy", s->fit.train_accuracy, have_epoch);
  write_metric(w, "images_per_second", s->fit.samples_per_second, have_epoch);
  if (s->tokens_per_sample > 0) {
    write_metric(w, "tokens_per_second", s->fit.samples_per_second * (double)s->tokens_per_sample,
                 have_epoch);
    write_metric(w, "test_bits_per_byte", s->fit.test_loss / log(2.0), have_test);
    write_metric(w, "train_bits_per_byte", s->fit.train_loss / log(2.0), have_epoch);
  }
  json_uint(w, "recompute_bn_samples", s->recomputed_bn_samples);
  write_metric(w, "recomputed_test_accuracy", s->recomputed.accuracy,
               s->recomputed_bn_samples > 0 && s->test_samples > 0);
  write_metric(w, "recomputed_test_loss", s->recomputed.loss,
               s->recomputed_bn_samples > 0 && s->test_samples > 0);
  json_number(w, "seconds", s->seconds, METRIC_DIGITS);
  json_number(w, "train_seconds", s->fit.train_seconds, METRIC_DIGITS);
  json_uint(w, "optimizer_steps", s->fit.optimizer_steps);
  json_uint(w, "overflow_steps", s->fit.overflow_steps);
  json_number(w, "loss_scale", s->fit.loss_scale, METRIC_DIGITS);
  json_uint(w, "planned_optimizer_steps", s->total_steps);
  json_string(w, "param_checksum", checksum);
  json_object_begin(w, "memory_per_device"); /* the replica that holds the most, in bytes */
  json_uint(w, "parameters", s->memory.parameters);
  json_uint(w, "gradients", s->memory.gradients);
  json_uint(w, "optimizer_state", s->memory.optimizer_state);
  json_uint(w, "buffers", s->memory.buffers);
  json_uint(w, "activations", s->memory.activations);
  json_uint(w, "total", s->memory.total);
  json_object_end(w);
  json_array_begin(w, "device_times"); /* each device's seconds summed over the run's steps */
  for (i = 0; i < s->devices && s->device_times[0].struct_size != 0; ++i) {
    const dpt_replica_times *t = &s->device_times[i];
    json_object_begin(w, NULL);
    json_number(w, "compute_seconds", t->compute_seconds, METRIC_DIGITS);
    json_number(w, "communication_seconds", t->communication_seconds, METRIC_DIGITS);
    json_number(w, "update_seconds", t->update_seconds, METRIC_DIGITS);
    json_number(w, "idle_seconds", t->idle_seconds, METRIC_DIGITS);
    json_number(w, "bus_bandwidth", t->bus_bandwidth, METRIC_DIGITS);
    json_object_end(w);
  }
  json_array_end(w);
}

void report_write_json(FILE *out, const run_summary *s) {
  json_writer w;
  json_init(&w, out);
  json_object_begin(&w, NULL);
  write_settings(&w, s);
  write_results(&w, s);
  write_epochs_detail(&w, s->log);
  json_object_end(&w);
  fputc('\n', out);
  fflush(out);
}
