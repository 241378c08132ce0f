/*
 * `dptrain train`: context -> data -> model -> trainer -> dpt_trainer_fit() -> summary, JSON, plot.
 * Each stage is one function that returns an exit status; the run stops at the first failure and
 * destroy_run() releases whatever was created.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "metrics_csv.h"
#include "model_file.h"
#include "platform.h"
#include "progress.h"
#include "report.h"
#include "svg_plot.h"

/** @brief Progress reports per epoch on a terminal (a bar redrawn in place) and in a log (lines). */
/* Batch reports per epoch: a terminal's bar is redrawn at each, plain output prints every fifth. */
#define REPORTS_PER_EPOCH 20
#define PLAIN_LINE_EVERY 5
/** @brief --trace keeps the first this many events of each device and thread. */
#define CLI_TRACE_EVENTS 65536
/** @brief Device names listed in the run header; more are only counted. */
#define MAX_NAMED_DEVICES 8

/** @brief Everything a training run owns. */
typedef struct train_run {
  train_config config;
  FILE *out; /**< Human-readable output: stdout, or stderr with --json. */
  dpt_context *context;
  dpt_model *model;
  dpt_dataset *train;
  dpt_dataset *test;
  dpt_trainer *trainer;
  FILE *metrics;
  FILE *plot;
  progress_state progress;
  run_summary summary;
  int mpi; /**< The trainer spans the processes of an MPI job. */
  /** --devices cuda:LIST: the context index of each replica's GPU. */
  size_t gpu_indices[DPT_MAX_CPU_DEVICES];
  FILE *null_output; /**< Where processes other than 0 write their human-readable output. */
} train_run;

static size_t ceil_div(size_t a, size_t b) {
  return a / b + (a % b != 0);
}

static int open_outputs(train_run *run) {
  /* Open both files before the (long) training, so that a bad path fails at once. */
  if (run->config.metrics_path != NULL) {
    run->metrics = fopen(run->config.metrics_path, "w");
    if (run->metrics == NULL) return cli_system_error("cannot write", run->config.metrics_path);
    metrics_csv_write_header(run->metrics);
  }
  if (run->config.plot_path != NULL) {
    run->plot = fopen(run->config.plot_path, "w");
    if (run->plot == NULL) return cli_system_error("cannot write", run->config.plot_path);
  }
  return CLI_EXIT_OK;
}

/** @brief --devices cuda:LIST: finds each listed GPU ordinal among the context's (CUDA-only) devices. */
static int map_gpu_ordinals(train_run *run) {
  size_t r, i, count = 0;
  CLI_TRY(dpt_device_count(run->context, &count));
  for (r = 0; r < run->config.gpu_replicas; ++r) {
    int found = 0;
    for (i = 0; i < count && !found; ++i) {
      dpt_device_info info;
      memset(&info, 0, sizeof info);
      info.struct_size = sizeof info;
      CLI_TRY(dpt_device_get_info(run->context, i, &info));
      if (info.ordinal == (size_t)run->config.gpu_ordinals[r]) {
        run->gpu_indices[r] = i;
        found = 1;
      }
    }
    if (!found) {
      return cli_usage_error("--devices: cuda:%d does not exist (%zu CUDA devices)",
                             run->config.gpu_ordinals[r], count);
    }
  }
  return CLI_EXIT_OK;
}

/** @brief --devices cuda with no GPU: the backend's reason, as one line. */
static int no_gpu_error(const train_run *run) {
  dpt_backend_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (dpt_backend_get_info(run->context, DPT_DEVICE_CUDA, &info) != DPT_OK) info.reason[0] = '\0';
  fprintf(stderr, "dptrain: error: --devices cuda: no CUDA devices: %s\n",
          info.reason[0] ? info.reason : "(no reason given)");
  return CLI_EXIT_FAILURE;
}

static int create_context(train_run *run) {
  dpt_context_options options;
  dpt_context_options_init(&options);
  options.cpu_devices = run->config.cpu_devices;
  /* --pipeline S without --devices: one CPU device per stage (per stage of this process's, when the stages
   * are divided among the processes). */
  if (options.cpu_devices == 0 && !run->config.cuda && run->config.pipeline > 1) {
    const size_t processes = run->summary.processes, stages = run->config.pipeline;
    const size_t copies = run->summary.pipeline_copies;
    const int divided = copies > 0;
    /* S C / P stages in each process (the library refuses a C that does not divide them). */
    options.cpu_devices = !divided                             ? stages
                          : (stages * copies) % processes == 0 ? stages * copies / processes
                                                               : 1;
  }
  if (run->config.cuda) options.device_selection = DPT_DEVICES_CUDA;
  CLI_TRY(dpt_context_create(&run->context, &options));
  CLI_TRY(dpt_device_count(run->context, &run->summary.devices));
  if (run->config.cuda && run->summary.devices == 0) return no_gpu_error(run);
  if (run->config.gpu_replicas > 0) {
    const int rc = map_gpu_ordinals(run);
    if (rc != CLI_EXIT_OK) return rc;
    run->summary.devices = run->config.gpu_replicas;
  }
  /* Without --devices the device count is known only now. */
  if (run->config.split == DPT_SPLIT_WEIGHTED && run->config.split_weight_count != run->summary.devices) {
    return cli_usage_error("--split: %zu weights given for %zu devices", run->config.split_weight_count,
                           run->summary.devices);
  }
  return CLI_EXIT_OK;
}

/** @brief Loads one part of Fashion-MNIST, keeping only its first @p limit samples when limit > 0. */
static int load_part(const char *directory, dpt_dataset_part part, size_t limit, dpt_dataset **out,
                     size_t *count) {
  dpt_dataset *full = NULL;
  dpt_status status;
  CLI_TRY(dpt_dataset_load_fashion_mnist(&full, directory, part));
  status = dpt_dataset_sample_count(full, count);
  /* A limit beyond the data set simply means all of it. */
  if (status == DPT_OK && limit > 0 && limit < *count) {
    status = dpt_dataset_subset(out, full, 0, limit);
    if (status == DPT_OK) *count = limit;
    dpt_dataset_destroy(full);
  } else if (status == DPT_OK) {
    *out = full;
  } else {
    dpt_dataset_destroy(full);
  }
  return status == DPT_OK ? CLI_EXIT_OK : cli_library_error(status);
}

/** @brief The first @p limit samples of *data (all when limit is 0 or beyond them); *count: how many. */
static int limit_samples(dpt_dataset **data, size_t limit, size_t *count) {
  dpt_dataset *part = NULL;
  CLI_TRY(dpt_dataset_sample_count(*data, count));
  if (limit == 0 || limit >= *count) return CLI_EXIT_OK;
  CLI_TRY(dpt_dataset_subset(&part, *data, 0, limit));
  dpt_dataset_destroy(*data);
  *data = part;
  *count = limit;
  return CLI_EXIT_OK;
}

/** @brief A token model: byte-level text cut into windows of the model's sequence length. */
static int load_text(train_run *run) {
  const train_config *c = &run->config;
  const char *path = c->text_path != NULL ? c->text_path : CLI_DEFAULT_TEXT;
  size_t context = 0;
  int rc;
  CLI_TRY(dpt_model_input_size(run->model, &context));
  CLI_TRY(dpt_dataset_load_text(&run->train, &run->test, path, context, c->validation_fraction));
  rc = limit_samples(&run->train, c->train_limit, &run->summary.train_samples);
  if (rc == CLI_EXIT_OK) rc = limit_samples(&run->test, c->test_limit, &run->summary.test_samples);
  run->summary.tokens_per_sample = context;
  return rc;
}

static int load_data(train_run *run) {
  dpt_input_type input = DPT_INPUT_FLOAT32;
  int rc;
  CLI_TRY(dpt_model_input_type(run->model, &input));
  if (input == DPT_INPUT_TOKENS) return load_text(run);
  if (run->config.text_path != NULL)
    return cli_usage_error("--text: the model reads images, not tokens (a token model: gpt-mini)");
  rc = load_part(run->config.data_dir, DPT_DATASET_TRAIN, run->config.train_limit, &run->train,
                 &run->summary.train_samples);
  if (rc != CLI_EXIT_OK) return rc;
  return load_part(run->config.data_dir, DPT_DATASET_TEST, run->config.test_limit, &run->test,
                   &run->summary.test_samples);
}

/**
 * @brief Optimizer steps of the whole run. The library applies an unfinished accumulation window at
 * the end of each epoch, so the steps of an epoch are ceil(batches / accumulate).
 */
static uint64_t planned_steps(const train_config *c, size_t train_samples) {
  size_t batches = ceil_div(train_samples, c->batch);
  return (uint64_t)c->epochs * ceil_div(batches, c->accumulate);
}

/**
 * @brief Joins the MPI job when asked to (or, with --communicator auto, when started by mpirun). Every
 * process trains; only process 0 prints, writes metrics, plots and checkpoints (with --shard-scope world
 * or --pipeline-scope world every process takes part in each checkpoint, and with --pipeline-scope world
 * in each export of the weights).
 */
static int join_world(train_run *run) {
  train_config *c = &run->config;
  run->mpi = c->communicator == DPT_COMMUNICATOR_MPI ||
             (c->communicator == CLI_COMMUNICATOR_AUTO && platform_launched_by_mpi());
  run->summary.processes = 1;
  if (!run->mpi) return CLI_EXIT_OK;
  CLI_TRY(dpt_world_get(&run->summary.rank, &run->summary.processes));
  /* The stages divided among the P processes: C copies of the pipeline, --pipeline-copies or by default
   * P / S when P > S (one stage per process), else 1. */
  if (c->pipeline > 1 && c->pipeline_scope == DPT_PIPELINE_SCOPE_WORLD && run->summary.processes > 1)
    run->summary.pipeline_copies = c->pipeline_copies > 0 ? c->pipeline_copies
                                   : run->summary.processes > c->pipeline
                                       ? run->summary.processes / c->pipeline
                                       : 1;
  if (run->summary.rank != 0) {
    run->null_output = platform_null_output();
    if (run->null_output == NULL) return cli_system_error("cannot open", "the null device");
    run->out = run->null_output;
    c->json = 0;
    c->metrics_path = NULL;
    c->trace_path = NULL;
    c->plot_path = NULL;
    /* Stages divided among the processes: each process gives its stages to dpt_trainer_save and
     * dpt_trainer_save_safetensors, which process 0 alone writes. */
    const int stages_across = c->pipeline > 1 && c->pipeline_scope == DPT_PIPELINE_SCOPE_WORLD;
    /* Else process 0 reads every process's part of sharded parameters. */
    if (!stages_across) c->save_weights_path = NULL;
    /* A shard across every process's devices: each process gives its part of the optimizer state to
     * dpt_trainer_save, which process 0 alone writes. */
    if ((c->shard_scope != DPT_SHARD_SCOPE_WORLD || c->shard == DPT_SHARD_NONE) && !stages_across)
      c->checkpoint_path = NULL;
  }
  return CLI_EXIT_OK;
}

/**
 * @brief The memory of the replica that holds the most (with a sharded optimizer, the largest shard), and
 * each device's times summed over the run.
 */
static int record_device_figures(train_run *run) {
  size_t i;
  memset(&run->summary.memory, 0, sizeof run->summary.memory);
  for (i = 0; i < run->summary.devices; ++i) {
    dpt_replica_memory m;
    m.struct_size = sizeof m;
    CLI_TRY(dpt_trainer_replica_memory(run->trainer, i, &m));
    if (m.total > run->summary.memory.total) run->summary.memory = m;
    run->summary.device_times[i].struct_size = sizeof run->summary.device_times[i];
    CLI_TRY(dpt_trainer_replica_totals(run->trainer, i, &run->summary.device_times[i]));
  }
  return CLI_EXIT_OK;
}

static void fill_trainer_options(const train_run *run, dpt_trainer_options *options) {
  const train_config *c = &run->config;
  dpt_trainer_options_init(options);
  options->communicator = run->mpi ? DPT_COMMUNICATOR_MPI : DPT_COMMUNICATOR_LOCAL;
  options->split = (dpt_split_policy)c->split;
  options->split_weights = c->split == DPT_SPLIT_WEIGHTED ? c->split_weights : NULL;
  options->allreduce = (dpt_allreduce_algorithm)c->allreduce;
  options->seed = c->seed;
  options->accumulation_steps = c->accumulate;
  options->bucket_bytes = c->bucket_kib * 1024;
  options->batch_norm = (dpt_batch_norm_mode)c->batch_norm;
  options->precision = (dpt_precision)c->precision;
  options->allreduce_dtype = (dpt_precision)c->allreduce_dtype;
  options->activation_dtype = (dpt_precision)c->activation_dtype;
  options->shard = (dpt_shard_mode)c->shard;
  options->shard_scope = (dpt_shard_scope)c->shard_scope;
  options->prefetch_parameters = c->prefetch_parameters;
  options->pipeline_stages = c->pipeline;
  options->micro_batches = c->micro_batches;
  options->pipeline_schedule = (dpt_pipeline_schedule)c->pipeline_schedule;
  options->pipeline_cuts = c->pipeline_cuts;
  options->pipeline_scope = (dpt_pipeline_scope)c->pipeline_scope;
  options->pipeline_balance = (dpt_pipeline_balance)c->pipeline_balance;
  options->pipeline_balance_batch = c->batch;
  options->pipeline_copies = c->pipeline_copies;
  options->timeout_seconds = c->timeout;
  options->init = (dpt_init_scheme)c->init;
  options->init_std = (float)c->init_std;
  if (c->gpu_replicas > 0) {
    options->devices = run->gpu_indices;
    options->device_count = c->gpu_replicas;
  }
  options->gpu_flags = (c->tf32 ? DPT_GPU_ALLOW_TF32 : 0u) | (c->deterministic ? DPT_GPU_DETERMINISTIC : 0u);
}

/** @brief Fills the optimizer options; checks the schedule against the planned steps. */
static int fill_optimizer_options(train_run *run, dpt_optimizer_options *options) {
  const train_config *c = &run->config;
  uint64_t total = run->summary.total_steps;
  dpt_optimizer_options_init(options);
  options->kind = (dpt_optimizer_kind)c->optimizer;
  options->learning_rate = (float)run->summary.learning_rate;
  options->momentum = (float)c->momentum;
  options->nesterov = c->nesterov;
  options->weight_decay = (float)c->weight_decay;
  options->weight_decay_scope = (dpt_weight_decay_scope)c->decay_scope;
  options->beta2 = (float)c->beta2;
  options->clip_norm = (float)c->clip;
  options->schedule = (dpt_schedule_kind)c->schedule;
  options->warmup_steps = c->auto_warmup ? (total / 10 < 100 ? total / 10 : 100) : c->warmup;
  run->summary.warmup = options->warmup_steps;
  options->gamma = (float)c->gamma;
  options->min_learning_rate = (float)c->min_lr;
  options->total_steps = total;
  if (c->schedule == DPT_SCHEDULE_COSINE && total <= options->warmup_steps) {
    return cli_usage_error("--warmup %llu must be below the %llu optimizer steps of the run",
                           (unsigned long long)options->warmup_steps, (unsigned long long)total);
  }
  options->step_size = c->step_size;
  if (c->schedule == DPT_SCHEDULE_STEP && c->step_size == 0) {
    uint64_t decaying = total > options->warmup_steps ? total - options->warmup_steps : 1;
    options->step_size = decaying / 3 > 0 ? decaying / 3 : 1;
  }
  return CLI_EXIT_OK;
}

/** @brief Where the pipeline's stages begin (named, or chosen by the balance), for the header and --json. */
static int record_pipeline_cuts(train_run *run) {
  size_t needed = 0;
  const dpt_status status = dpt_trainer_pipeline_cuts(run->trainer, NULL, 0, &needed);
  if (status != DPT_ERROR_BUFFER_TOO_SMALL) return cli_library_error(status);
  run->summary.pipeline_cuts = (char *)malloc(needed);
  if (run->summary.pipeline_cuts == NULL) return cli_library_error(DPT_ERROR_OUT_OF_MEMORY);
  CLI_TRY(dpt_trainer_pipeline_cuts(run->trainer, run->summary.pipeline_cuts, needed, NULL));
  return CLI_EXIT_OK;
}

static int create_trainer(train_run *run) {
  dpt_trainer_options trainer_options;
  dpt_optimizer_options optimizer_options;
  int rc;
  run->summary.learning_rate = effective_learning_rate(&run->config);
  run->summary.total_steps = planned_steps(&run->config, run->summary.train_samples);
  rc = fill_optimizer_options(run, &optimizer_options);
  if (rc != CLI_EXIT_OK) return rc;
  fill_trainer_options(run, &trainer_options);
  CLI_TRY(dpt_model_parameter_count(run->model, &run->summary.parameters));
  CLI_TRY(dpt_trainer_create(&run->trainer, run->context, run->model, &trainer_options, &optimizer_options));
  CLI_TRY(dpt_trainer_device_count(run->trainer, &run->summary.devices));
  if (run->config.pipeline > 1) {
    const int rc = record_pipeline_cuts(run);
    if (rc != CLI_EXIT_OK) return rc;
  }
  if (run->config.resume_path != NULL) {
    uint64_t done = 0;
    CLI_TRY(dpt_trainer_load(run->trainer, run->config.resume_path));
    CLI_TRY(dpt_trainer_epoch_count(run->trainer, &done));
    run->progress.epoch_offset = (size_t)done;
  }
  /* Every process reads the file: with parameters sharded across processes the load is collective. */
  if (run->config.load_weights_path != NULL)
    CLI_TRY(dpt_trainer_load_safetensors(run->trainer, run->config.load_weights_path));
  return CLI_EXIT_OK;
}

/** @brief "cpu:0, cpu:1" for a few devices, "" for many. */
static void device_names(const train_run *run, char *text, size_t capacity) {
  size_t i, used = 0;
  text[0] = '\0';
  if (run->summary.devices > MAX_NAMED_DEVICES) return;
  for (i = 0; i < run->summary.devices; ++i) {
    dpt_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (dpt_device_get_info(run->context, run->config.gpu_replicas > 0 ? run->gpu_indices[i] : i, &info) !=
        DPT_OK)
      return;
    used += (size_t)snprintf(text + used, capacity - used, "%s%s", i > 0 ? ", " : "", info.name);
    if (used >= capacity) return;
  }
}

static void print_header(const train_run *run) {
  const train_config *c = &run->config;
  char names[MAX_NAMED_DEVICES * 70];
  device_names(run, names, sizeof names);
  fprintf(run->out, "dptrain %s: %s, %zu parameters, %zu devices%s%s%s\n", dpt_version_string(),
          model_label(c), run->summary.parameters, run->summary.devices, names[0] ? " (" : "", names,
          names[0] ? ")" : "");
  if (run->summary.processes > 1)
    fprintf(run->out, "MPI: %zu processes with %zu devices each; each reads its share of every batch\n",
            run->summary.processes, run->summary.devices);
  if (run->summary.tokens_per_sample > 0) {
    fprintf(run->out, "data: %s: %zu train, %zu validation windows of %zu bytes; ",
            c->text_path != NULL ? c->text_path : CLI_DEFAULT_TEXT, run->summary.train_samples,
            run->summary.test_samples, run->summary.tokens_per_sample);
  } else {
    fprintf(run->out, "data: %zu train, %zu test samples; ", run->summary.train_samples,
            run->summary.test_samples);
  }
  fprintf(run->out, "batch %zu, lr %g, %s, split %s, allreduce %s%s%s%s%s%s%s%s\n", c->batch,
          run->summary.learning_rate, optimizer_name(c->optimizer), split_name(c->split),
          allreduce_name(c->allreduce), c->allreduce_dtype != DPT_PRECISION_FP32 ? " in " : "",
          c->allreduce_dtype != DPT_PRECISION_FP32 ? precision_name(c->allreduce_dtype) : "",
          c->precision == DPT_PRECISION_BF16   ? ", precision bf16"
          : c->precision == DPT_PRECISION_FP16 ? ", precision fp16 (loss scaling from 65536)"
                                               : "",
          c->activation_dtype != DPT_PRECISION_FP32 ? ", activations in " : "",
          c->activation_dtype != DPT_PRECISION_FP32 ? precision_name(c->activation_dtype) : "",
          c->shard == DPT_SHARD_OPTIMIZER    ? ", optimizer state sharded"
          : c->shard == DPT_SHARD_GRADIENTS  ? ", optimizer state and gradients sharded"
          : c->shard == DPT_SHARD_PARAMETERS ? ", optimizer state, gradients and parameters sharded"
                                             : "",
          c->shard != DPT_SHARD_NONE && c->shard_scope == DPT_SHARD_SCOPE_WORLD && run->mpi
              ? " across every process's devices"
              : "");
  if (c->pipeline > 1) {
    /* Divided among the processes: how many copies of the pipeline, how many stages each process holds. */
    char divided[96] = "";
    if (run->summary.pipeline_copies > 0) {
      const size_t copies = run->summary.pipeline_copies,
                   local = c->pipeline * copies / run->summary.processes;
      snprintf(divided, sizeof divided,
               ", the stages divided among the processes (%zu cop%s, %zu stage%s each)", copies,
               copies == 1 ? "y" : "ies", local, local == 1 ? "" : "s");
    }
    fprintf(run->out, "pipeline: %zu stages (cut at %s, %s), %zu micro-batches per step, %s schedule%s\n",
            c->pipeline, run->summary.pipeline_cuts,
            c->pipeline_cuts != NULL                                 ? "as named"
            : c->pipeline_balance == DPT_PIPELINE_BALANCE_TIME       ? "by measured time"
            : c->pipeline_balance == DPT_PIPELINE_BALANCE_PARAMETERS ? "by parameters"
                                                                     : "by estimated work",
            c->micro_batches > 0 ? c->micro_batches : 4 * c->pipeline,
            pipeline_schedule_name(c->pipeline_schedule), divided);
  }
  fflush(run->out);
}

/**
 * @brief --progress-every, else about REPORTS_PER_EPOCH reports per epoch. Never depends on where the
 * output goes: across MPI processes every process must report (and vote on stopping) at the same batches,
 * and only process 0 writes to a terminal.
 */
static size_t gcd_of(size_t a, size_t b) {
  while (b != 0) {
    const size_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

static size_t progress_interval(const train_run *run) {
  size_t batches = ceil_div(run->summary.train_samples, run->config.batch);
  if (run->config.progress_every > 0) return run->config.progress_every;
  return batches > REPORTS_PER_EPOCH ? ceil_div(batches, REPORTS_PER_EPOCH) : 1;
}

static int fit(train_run *run) {
  dpt_fit_options options;
  dpt_status status;
  double start;
  run->progress.out = run->out;
  run->progress.tty = platform_is_terminal(run->out);
  run->progress.line_every = run->config.progress_every > 0 ? 1 : PLAIN_LINE_EVERY;
  run->progress.metrics = run->metrics;
  run->progress.trainer = run->trainer;
  run->progress.checkpoint_path = run->config.checkpoint_path;
  run->progress.checkpoint_every = run->config.checkpoint_path != NULL ? run->config.checkpoint_every : 0;
  run->progress.tokens_per_sample = run->summary.tokens_per_sample;
  if (run->progress.epoch_offset >= run->config.epochs) {
    fprintf(run->out, "nothing to train: the checkpoint already has %zu of %zu epochs\n",
            run->progress.epoch_offset, run->config.epochs);
    memset(&run->summary.fit, 0, sizeof run->summary.fit);
    CLI_TRY(dpt_trainer_parameter_checksum(run->trainer, &run->summary.checksum));
    return CLI_EXIT_OK;
  }
  dpt_fit_options_init(&options);
  options.epochs = run->config.epochs - run->progress.epoch_offset;
  options.batch_size = run->config.batch;
  /* Reports at the batches of both --progress-every and --checkpoint-every (the callback draws only the
   * former's). */
  run->progress.report_every = progress_interval(run);
  options.progress_every = run->progress.report_every;
  if (run->config.checkpoint_every > 0)
    options.progress_every = gcd_of(options.progress_every, run->config.checkpoint_every);
  options.progress = progress_callback;
  options.user_data = &run->progress;
  memset(&run->summary.fit, 0, sizeof run->summary.fit);
  run->summary.fit.struct_size = sizeof run->summary.fit;
  progress_install_interrupt_handler();
  if (run->config.trace_path != NULL) CLI_TRY(dpt_trainer_trace_start(run->trainer, CLI_TRACE_EVENTS));
  start = platform_now_seconds();
  status = dpt_trainer_fit(run->trainer, run->train, run->test, &options, &run->summary.fit);
  run->summary.seconds = platform_now_seconds() - start;
  progress_finish(&run->progress);
  if (status != DPT_OK) return cli_library_error(status);
  if (run->config.trace_path != NULL) CLI_TRY(dpt_trainer_trace_write(run->trainer, run->config.trace_path));
  if (run->progress.checkpoint_status != DPT_OK) {
    fprintf(stderr, "dptrain: error: %s: %s\n", dpt_status_string(run->progress.checkpoint_status),
            run->progress.checkpoint_error);
    return CLI_EXIT_FAILURE;
  }
  if (run->progress.failed) {
    fprintf(stderr, "dptrain: error: out of memory while recording epoch metrics\n");
    return CLI_EXIT_FAILURE;
  }
  CLI_TRY(dpt_trainer_parameter_checksum(run->trainer, &run->summary.checksum));
  return record_device_figures(run);
}

/**
 * @brief --recompute-bn: batch norm's running statistics recomputed over the first training samples (after
 * the epochs, or after --resume of a finished run), then the test set evaluated on them. Not after a
 * Ctrl-C (the run stops as soon as it can), nor for a model without batch norm.
 */
static int recompute_batch_norm(train_run *run) {
  dpt_eval_result e;
  size_t buffers = 0;
  if (run->config.recompute_bn == 0 || (run->summary.fit.stopped && progress_interrupted()))
    return CLI_EXIT_OK;
  CLI_TRY(dpt_model_buffer_count(run->model, &buffers));
  if (buffers == 0) return CLI_EXIT_OK; /* no batch norm: nothing to recompute, nothing reported */
  CLI_TRY(dpt_trainer_recompute_batch_norm(run->trainer, run->train, run->config.batch,
                                           run->config.recompute_bn));
  run->summary.recomputed_bn_samples = run->config.recompute_bn < run->summary.train_samples
                                           ? run->config.recompute_bn
                                           : run->summary.train_samples;
  if (run->test == NULL) return CLI_EXIT_OK;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  CLI_TRY(dpt_trainer_evaluate_dataset(run->trainer, run->test, 0, &e));
  run->summary.recomputed.loss = e.loss;
  run->summary.recomputed.accuracy = e.accuracy;
  return CLI_EXIT_OK;
}

/** @brief --save-weights: the weights after the run (also after a Ctrl-C, as far as it got). */
static int save_weights(train_run *run) {
  if (run->config.save_weights_path == NULL) return CLI_EXIT_OK;
  CLI_TRY(dpt_trainer_save_safetensors(run->trainer, run->config.save_weights_path));
  return CLI_EXIT_OK;
}

static int write_plot(train_run *run) {
  const train_config *c = &run->config;
  char title[256];
  if (run->plot == NULL) return CLI_EXIT_OK;
  snprintf(title, sizeof title, "dptrain %s on Fashion-MNIST: %zu devices, batch %zu, lr %g, %s",
           model_label(c), run->summary.devices, c->batch, run->summary.learning_rate,
           optimizer_name(c->optimizer));
  svg_plot_write(run->plot, title, &run->progress.log);
  /* fclose reports write errors (a full disk) that fprintf left in the stream. */
  if (fclose(run->plot) != 0) {
    run->plot = NULL;
    return cli_system_error("cannot write", c->plot_path);
  }
  run->plot = NULL;
  return CLI_EXIT_OK;
}

static int finish(train_run *run) {
  int rc;
  run->summary.config = &run->config;
  run->summary.log = &run->progress.log;
  report_print_summary(run->out, &run->summary);
  rc = write_plot(run);
  if (rc != CLI_EXIT_OK) return rc;
  if (run->metrics != NULL) {
    int failed = ferror(run->metrics) || fclose(run->metrics) != 0;
    run->metrics = NULL;
    if (failed) return cli_system_error("cannot write", run->config.metrics_path);
  }
  if (run->config.json) report_write_json(stdout, &run->summary);
  if (run->summary.fit.stopped && progress_interrupted()) return CLI_EXIT_INTERRUPT;
  return CLI_EXIT_OK;
}

static void destroy_run(train_run *run) {
  /* Trainers before their context; datasets and the model are independent. */
  dpt_trainer_destroy(run->trainer);
  dpt_model_destroy(run->model);
  dpt_dataset_destroy(run->train);
  dpt_dataset_destroy(run->test);
  dpt_context_destroy(run->context);
  if (run->metrics != NULL) fclose(run->metrics);
  if (run->plot != NULL) fclose(run->plot);
  if (run->null_output != NULL) fclose(run->null_output);
  epoch_log_free(&run->progress.log);
  free(run->summary.pipeline_cuts);
}

int cli_train_main(int argc, char **argv) {
  train_run run;
  int rc;
  memset(&run, 0, sizeof run);
  rc = parse_train_args(argc, argv, &run.config);
  if (rc != ARGS_RUN) return rc;
  run.out = run.config.json ? stderr : stdout;
  rc = join_world(&run);
  /* The model first: a bad model file fails before any data is loaded. */
  if (rc == CLI_EXIT_OK) rc = cli_load_model(model_label(&run.config), run.config.ties, 1, &run.model);
  if (rc == CLI_EXIT_OK) rc = open_outputs(&run);
  if (rc == CLI_EXIT_OK) rc = create_context(&run);
  if (rc == CLI_EXIT_OK) rc = load_data(&run);
  if (rc == CLI_EXIT_OK) rc = create_trainer(&run);
  if (rc == CLI_EXIT_OK) print_header(&run);
  if (rc == CLI_EXIT_OK) rc = fit(&run);
  if (rc == CLI_EXIT_OK) rc = recompute_batch_norm(&run);
  if (rc == CLI_EXIT_OK) rc = save_weights(&run);
  if (rc == CLI_EXIT_OK) rc = finish(&run);
  destroy_run(&run);
  if (run.mpi) {
    const dpt_status status = dpt_world_finalize();
    if (status != DPT_OK && rc == CLI_EXIT_OK) rc = cli_library_error(status);
  }
  return rc;
}
