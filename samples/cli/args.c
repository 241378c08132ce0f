/* Strict, table-driven parsing of `dptrain train` options. Every problem is one usage error line. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform.h"

/** @brief A named value of an enumerated option. */
typedef struct choice {
  const char *name;
  int value;
} choice;

static const choice kModels[] = {{"lenet", CLI_MODEL_LENET},
                                 {"mlp", CLI_MODEL_MLP},
                                 {"resnet18", CLI_MODEL_RESNET18},
                                 {"gpt-mini", CLI_MODEL_GPT_MINI},
                                 {NULL, 0}};
static const choice kDecayScopes[] = {
    {"all", DPT_WEIGHT_DECAY_ALL}, {"matrices", DPT_WEIGHT_DECAY_MATRICES}, {NULL, 0}};
static const choice kBatchNorm[] = {
    {"sync", DPT_BATCH_NORM_SYNC}, {"local", DPT_BATCH_NORM_LOCAL}, {NULL, 0}};
static const choice kPrecisions[] = {
    {"fp32", DPT_PRECISION_FP32}, {"bf16", DPT_PRECISION_BF16}, {"fp16", DPT_PRECISION_FP16}, {NULL, 0}};
static const choice kShardModes[] = {{"none", DPT_SHARD_NONE},
                                     {"optimizer", DPT_SHARD_OPTIMIZER},
                                     {"gradients", DPT_SHARD_GRADIENTS},
                                     {"parameters", DPT_SHARD_PARAMETERS},
                                     {NULL, 0}};
static const choice kShardScopes[] = {
    {"process", DPT_SHARD_SCOPE_PROCESS}, {"world", DPT_SHARD_SCOPE_WORLD}, {NULL, 0}};
static const choice kPipelineScopes[] = {
    {"process", DPT_PIPELINE_SCOPE_PROCESS}, {"world", DPT_PIPELINE_SCOPE_WORLD}, {NULL, 0}};
static const choice kPipelineBalances[] = {{"work", DPT_PIPELINE_BALANCE_WORK},
                                           {"time", DPT_PIPELINE_BALANCE_TIME},
                                           {"parameters", DPT_PIPELINE_BALANCE_PARAMETERS},
                                           {NULL, 0}};
static const choice kPipelineSchedules[] = {
    {"1f1b", DPT_PIPELINE_1F1B}, {"gpipe", DPT_PIPELINE_GPIPE}, {NULL, 0}};
static const choice kOptimizers[] = {{"sgd", DPT_OPTIMIZER_SGD}, {"adamw", DPT_OPTIMIZER_ADAMW}, {NULL, 0}};
static const choice kAllreduce[] = {{"ring", DPT_ALLREDUCE_RING}, {"naive", DPT_ALLREDUCE_NAIVE}, {NULL, 0}};
static const choice kCommunicators[] = {{"auto", CLI_COMMUNICATOR_AUTO},
                                        {"local", DPT_COMMUNICATOR_LOCAL},
                                        {"mpi", DPT_COMMUNICATOR_MPI},
                                        {NULL, 0}};
static const choice kInits[] = {{"normal", DPT_INIT_NORMAL}, {"uniform", DPT_INIT_UNIFORM_FAN_IN}, {NULL, 0}};
static const choice kSchedules[] = {{"constant", DPT_SCHEDULE_CONSTANT},
                                    {"step", DPT_SCHEDULE_STEP},
                                    {"cosine", DPT_SCHEDULE_COSINE},
                                    {NULL, 0}};
static const choice kSplits[] = {
    {"even", DPT_SPLIT_EVEN}, {"weighted", DPT_SPLIT_WEIGHTED}, {"auto", DPT_SPLIT_AUTO}, {NULL, 0}};

/** @brief How an option's value is read. */
typedef enum arg_kind {
  ARG_FLAG,    /**< No value: sets an int to 1. */
  ARG_STRING,  /**< Any non-empty text. */
  ARG_SIZE,    /**< A size_t of at least min_int. */
  ARG_U64,     /**< A uint64_t of at least min_int. */
  ARG_REAL,    /**< A finite double in the range given by real_range. */
  ARG_CHOICE,  /**< One of choices, stored as int. */
  ARG_MODEL,   /**< A built-in model's name or a FILE.json. */
  ARG_DEVICES, /**< cpu:K, cuda, cuda:LIST. */
  ARG_SPLIT    /**< even, auto or a comma-separated list of weights. */
} arg_kind;

/** @brief Accepted ranges of real-valued options. */
typedef enum real_range {
  REAL_POSITIVE,    /**< (0, inf) */
  REAL_NONNEGATIVE, /**< [0, inf) */
  REAL_FRACTION     /**< [0, 1) */
} real_range;

/** @brief One option of the table. */
typedef struct option_spec {
  const char *name; /**< Including the leading "--". */
  arg_kind kind;
  size_t offset;              /**< Offset of the field in train_config. */
  unsigned long long min_int; /**< ARG_SIZE, ARG_U64: smallest value. */
  real_range range;           /**< ARG_REAL. */
  const choice *choices;      /**< ARG_CHOICE. */
} option_spec;

#define FIELD(f) offsetof(train_config, f)

static const option_spec kOptions[] = {
    {"--model", ARG_MODEL, FIELD(model), 0, REAL_POSITIVE, kModels},
    {"--tie", ARG_STRING, FIELD(ties), 0, REAL_POSITIVE, NULL},
    {"--data", ARG_STRING, FIELD(data_dir), 0, REAL_POSITIVE, NULL},
    {"--text", ARG_STRING, FIELD(text_path), 0, REAL_POSITIVE, NULL},
    {"--validation-fraction", ARG_REAL, FIELD(validation_fraction), 0, REAL_FRACTION, NULL},
    {"--devices", ARG_DEVICES, FIELD(cpu_devices), 0, REAL_POSITIVE, NULL},
    {"--epochs", ARG_SIZE, FIELD(epochs), 1, REAL_POSITIVE, NULL},
    {"--batch", ARG_SIZE, FIELD(batch), 1, REAL_POSITIVE, NULL},
    {"--lr", ARG_REAL, FIELD(lr), 0, REAL_POSITIVE, NULL},
    {"--optimizer", ARG_CHOICE, FIELD(optimizer), 0, REAL_POSITIVE, kOptimizers},
    {"--momentum", ARG_REAL, FIELD(momentum), 0, REAL_FRACTION, NULL},
    {"--nesterov", ARG_FLAG, FIELD(nesterov), 0, REAL_POSITIVE, NULL},
    {"--tf32", ARG_FLAG, FIELD(tf32), 0, REAL_POSITIVE, NULL},
    {"--deterministic", ARG_FLAG, FIELD(deterministic), 0, REAL_POSITIVE, NULL},
    {"--weight-decay", ARG_REAL, FIELD(weight_decay), 0, REAL_NONNEGATIVE, NULL},
    {"--decay-scope", ARG_CHOICE, FIELD(decay_scope), 0, REAL_POSITIVE, kDecayScopes},
    {"--beta2", ARG_REAL, FIELD(beta2), 0, REAL_FRACTION, NULL},
    {"--split", ARG_SPLIT, FIELD(split), 0, REAL_POSITIVE, NULL},
    {"--allreduce", ARG_CHOICE, FIELD(allreduce), 0, REAL_POSITIVE, kAllreduce},
    {"--bn", ARG_CHOICE, FIELD(batch_norm), 0, REAL_POSITIVE, kBatchNorm},
    {"--precision", ARG_CHOICE, FIELD(precision), 0, REAL_POSITIVE, kPrecisions},
    {"--allreduce-dtype", ARG_CHOICE, FIELD(allreduce_dtype), 0, REAL_POSITIVE, kPrecisions},
    {"--activation-dtype", ARG_CHOICE, FIELD(activation_dtype), 0, REAL_POSITIVE, kPrecisions},
    {"--shard", ARG_CHOICE, FIELD(shard), 0, REAL_POSITIVE, kShardModes},
    {"--shard-scope", ARG_CHOICE, FIELD(shard_scope), 0, REAL_POSITIVE, kShardScopes},
    {"--prefetch-parameters", ARG_FLAG, FIELD(prefetch_parameters), 0, REAL_POSITIVE, NULL},
    {"--pipeline", ARG_SIZE, FIELD(pipeline), 1, REAL_POSITIVE, NULL},
    {"--micro-batches", ARG_SIZE, FIELD(micro_batches), 1, REAL_POSITIVE, NULL},
    {"--pipeline-schedule", ARG_CHOICE, FIELD(pipeline_schedule), 0, REAL_POSITIVE, kPipelineSchedules},
    {"--pipeline-cuts", ARG_STRING, FIELD(pipeline_cuts), 0, REAL_POSITIVE, NULL},
    {"--pipeline-scope", ARG_CHOICE, FIELD(pipeline_scope), 0, REAL_POSITIVE, kPipelineScopes},
    {"--pipeline-balance", ARG_CHOICE, FIELD(pipeline_balance), 0, REAL_POSITIVE, kPipelineBalances},
    {"--pipeline-copies", ARG_SIZE, FIELD(pipeline_copies), 1, REAL_POSITIVE, NULL},
    {"--accumulate", ARG_SIZE, FIELD(accumulate), 1, REAL_POSITIVE, NULL},
    {"--bucket-kib", ARG_SIZE, FIELD(bucket_kib), 0, REAL_POSITIVE, NULL},
    {"--communicator", ARG_CHOICE, FIELD(communicator), 0, REAL_POSITIVE, kCommunicators},
    {"--timeout", ARG_REAL, FIELD(timeout), 0, REAL_NONNEGATIVE, NULL},
    {"--seed", ARG_U64, FIELD(seed), 0, REAL_POSITIVE, NULL},
    {"--init", ARG_CHOICE, FIELD(init), 0, REAL_POSITIVE, kInits},
    {"--init-std", ARG_REAL, FIELD(init_std), 0, REAL_POSITIVE, NULL},
    {"--schedule", ARG_CHOICE, FIELD(schedule), 0, REAL_POSITIVE, kSchedules},
    {"--warmup", ARG_U64, FIELD(warmup), 0, REAL_POSITIVE, NULL},
    {"--step-size", ARG_U64, FIELD(step_size), 1, REAL_POSITIVE, NULL},
    {"--gamma", ARG_REAL, FIELD(gamma), 0, REAL_POSITIVE, NULL},
    {"--min-lr", ARG_REAL, FIELD(min_lr), 0, REAL_NONNEGATIVE, NULL},
    {"--clip", ARG_REAL, FIELD(clip), 0, REAL_NONNEGATIVE, NULL},
    {"--train-limit", ARG_SIZE, FIELD(train_limit), 1, REAL_POSITIVE, NULL},
    {"--test-limit", ARG_SIZE, FIELD(test_limit), 1, REAL_POSITIVE, NULL},
    {"--progress-every", ARG_SIZE, FIELD(progress_every), 1, REAL_POSITIVE, NULL},
    {"--json", ARG_FLAG, FIELD(json), 0, REAL_POSITIVE, NULL},
    {"--metrics", ARG_STRING, FIELD(metrics_path), 0, REAL_POSITIVE, NULL},
    {"--trace", ARG_STRING, FIELD(trace_path), 0, REAL_POSITIVE, NULL},
    {"--plot", ARG_STRING, FIELD(plot_path), 0, REAL_POSITIVE, NULL},
    {"--checkpoint", ARG_STRING, FIELD(checkpoint_path), 0, REAL_POSITIVE, NULL},
    {"--checkpoint-every", ARG_SIZE, FIELD(checkpoint_every), 1, REAL_POSITIVE, NULL},
    {"--resume", ARG_STRING, FIELD(resume_path), 0, REAL_POSITIVE, NULL},
    {"--load-weights", ARG_STRING, FIELD(load_weights_path), 0, REAL_POSITIVE, NULL},
    {"--save-weights", ARG_STRING, FIELD(save_weights_path), 0, REAL_POSITIVE, NULL},
    {"--recompute-bn", ARG_SIZE, FIELD(recompute_bn), 1, REAL_POSITIVE, NULL},
};

/* train_config.given has a flag for every option of the table. */
typedef char options_fit_given[sizeof kOptions / sizeof kOptions[0] <= CLI_MAX_OPTIONS ? 1 : -1];

static const char *choice_name(const choice *choices, int value) {
  for (; choices->name != NULL; ++choices) {
    if (choices->value == value) return choices->name;
  }
  return "?";
}

const char *model_name(int model) {
  return choice_name(kModels, model);
}
const char *model_label(const train_config *config) {
  return config->model == CLI_MODEL_FILE ? config->model_path : model_name(config->model);
}
const char *optimizer_name(int optimizer) {
  return choice_name(kOptimizers, optimizer);
}
const char *split_name(int split) {
  return choice_name(kSplits, split);
}
const char *allreduce_name(int allreduce) {
  return choice_name(kAllreduce, allreduce);
}
const char *schedule_name(int schedule) {
  return choice_name(kSchedules, schedule);
}
const char *batch_norm_name(int mode) {
  return choice_name(kBatchNorm, mode);
}
const char *precision_name(int precision) {
  return choice_name(kPrecisions, precision);
}

const char *shard_name(int shard) {
  return choice_name(kShardModes, shard);
}

const char *shard_scope_name(int scope) {
  return choice_name(kShardScopes, scope);
}

const char *pipeline_scope_name(int scope) {
  return choice_name(kPipelineScopes, scope);
}

const char *pipeline_balance_name(int balance) {
  return choice_name(kPipelineBalances, balance);
}

const char *pipeline_schedule_name(int schedule) {
  return choice_name(kPipelineSchedules, schedule);
}

const char *init_name(int init) {
  return choice_name(kInits, init);
}

double effective_learning_rate(const train_config *config) {
  if (config->lr > 0) return config->lr;
  /* The textbook recipe is for SGD; Adam-type optimizers want a far smaller step. */
  if (config->optimizer == DPT_OPTIMIZER_ADAMW) return 0.001;
  return config->model == CLI_MODEL_LENET ? 0.2 : 0.1;
}

/** @brief Fills @p config with the textbook defaults. */
static void set_defaults(train_config *config) {
  memset(config, 0, sizeof *config);
  config->model = CLI_MODEL_NONE;
  config->epochs = 10;
  config->batch = 256;
  config->optimizer = DPT_OPTIMIZER_SGD;
  config->split = DPT_SPLIT_EVEN;
  config->allreduce = DPT_ALLREDUCE_RING;
  config->batch_norm = DPT_BATCH_NORM_SYNC;
  config->precision = DPT_PRECISION_FP32;
  config->allreduce_dtype = DPT_PRECISION_FP32;
  config->activation_dtype = DPT_PRECISION_FP32;
  config->shard = DPT_SHARD_NONE;
  config->shard_scope = DPT_SHARD_SCOPE_PROCESS;
  config->pipeline_schedule = DPT_PIPELINE_1F1B;
  config->pipeline_scope = DPT_PIPELINE_SCOPE_PROCESS;
  config->pipeline_balance = DPT_PIPELINE_BALANCE_WORK;
  config->accumulate = 1;
  config->bucket_kib = 1024;
  config->communicator = CLI_COMMUNICATOR_AUTO;
  config->timeout = 300.0; /* the library's default */
  config->init = DPT_INIT_NORMAL;
  config->init_std = 0.01;
  config->schedule = DPT_SCHEDULE_CONSTANT;
  config->gamma = 0.1;
  config->beta2 = 0.999; /* the library's default */
  config->validation_fraction = 0.1;
  config->decay_scope = DPT_WEIGHT_DECAY_ALL;
}

static int was_given(const train_config *config, const char *name);

/**
 * @brief gpt-mini's recipe (nanoGPT's, at this size) for every setting the command line leaves out:
 * AdamW with betas 0.9/0.95, weight decay 0.1 on the matrices only, lr 1e-3 with a warm-up and a cosine
 * decay to 1e-4, gradient clipping at 1.0, N(0, 0.02) initialisation, batches of 16 windows, 1 epoch.
 */
static void apply_recipe(train_config *c) {
  if (c->model != CLI_MODEL_GPT_MINI) return;
  if (!was_given(c, "--optimizer")) c->optimizer = DPT_OPTIMIZER_ADAMW;
  if (!was_given(c, "--beta2")) c->beta2 = 0.95;
  if (!was_given(c, "--weight-decay")) c->weight_decay = 0.1;
  if (!was_given(c, "--decay-scope")) c->decay_scope = DPT_WEIGHT_DECAY_MATRICES;
  if (!was_given(c, "--clip")) c->clip = 1.0;
  if (!was_given(c, "--schedule")) c->schedule = DPT_SCHEDULE_COSINE;
  if (!was_given(c, "--warmup")) c->auto_warmup = 1;
  if (!was_given(c, "--min-lr") && !was_given(c, "--lr")) c->min_lr = 1e-4;
  if (!was_given(c, "--init-std")) c->init_std = 0.02;
  if (!was_given(c, "--batch")) c->batch = 16;
  if (!was_given(c, "--epochs")) c->epochs = 1;
}

/** @brief Reads a whole decimal unsigned integer; rejects signs, spaces, trailing text and overflow. */
static int parse_unsigned(const char *text, unsigned long long *out) {
  char *end = NULL;
  unsigned long long value;
  /* strtoull would accept leading blanks and a minus sign (wrapping around), so demand a digit. */
  if (!isdigit((unsigned char)text[0])) return 0;
  errno = 0;
  value = strtoull(text, &end, 10);
  if (errno == ERANGE || *end != '\0') return 0;
  *out = value;
  return 1;
}

/** @brief Reads a whole finite real number that also fits a float. */
static int parse_real(const char *text, double *out) {
  char *end = NULL;
  double value;
  if (text[0] == '\0' || isspace((unsigned char)text[0])) return 0;
  errno = 0;
  value = strtod(text, &end);
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(value)) return 0;
  /* The library takes floats: a value that overflows float is out of range too. */
  if (!isfinite((float)value)) return 0;
  *out = value;
  return 1;
}

static int real_in_range(double value, real_range range) {
  switch (range) {
    case REAL_POSITIVE:
      return value > 0 && (float)value > 0;
    case REAL_NONNEGATIVE:
      return value >= 0;
    case REAL_FRACTION:
      return value >= 0 && value < 1;
  }
  return 0;
}

static const char *real_range_text(real_range range) {
  switch (range) {
    case REAL_POSITIVE:
      return "a positive number";
    case REAL_NONNEGATIVE:
      return "a non-negative number";
    case REAL_FRACTION:
      return "a number in [0, 1)";
  }
  return "a number";
}

static int apply_integer(const option_spec *spec, const char *value, void *field) {
  unsigned long long number = 0;
  const char *what = spec->min_int > 0 ? "a positive integer" : "a non-negative integer";
  if (!parse_unsigned(value, &number) || number < spec->min_int) {
    return cli_usage_error("%s: expected %s, got '%s'", spec->name, what, value);
  }
  if (spec->kind == ARG_SIZE) {
    if (number > (unsigned long long)SIZE_MAX)
      return cli_usage_error("%s: '%s' is too large", spec->name, value);
    *(size_t *)field = (size_t)number;
  } else {
    *(uint64_t *)field = (uint64_t)number;
  }
  return ARGS_RUN;
}

static int apply_real(const option_spec *spec, const char *value, double *field) {
  double number = 0;
  if (!parse_real(value, &number) || !real_in_range(number, spec->range)) {
    return cli_usage_error("%s: expected %s, got '%s'", spec->name, real_range_text(spec->range), value);
  }
  *field = number;
  return ARGS_RUN;
}

/** @brief "a|b|c" for error messages (static storage: one message at a time). */
static const char *choice_list(const choice *choices) {
  static char text[128];
  size_t used = 0;
  text[0] = '\0';
  for (; choices->name != NULL && used < sizeof text; ++choices) {
    used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", used > 0 ? "|" : "", choices->name);
  }
  return text;
}

static int apply_choice(const option_spec *spec, const char *value, int *field) {
  const choice *c;
  for (c = spec->choices; c->name != NULL; ++c) {
    if (strcmp(c->name, value) == 0) {
      *field = c->value;
      return ARGS_RUN;
    }
  }
  return cli_usage_error("%s: unknown value '%s' (expected %s)", spec->name, value,
                         choice_list(spec->choices));
}

/** @brief --model: a built-in name, or a path ending in ".json" (read later, before any data). */
static int apply_model(const char *value, train_config *config) {
  const size_t length = strlen(value);
  const choice *c;
  for (c = kModels; c->name != NULL; ++c) {
    if (strcmp(c->name, value) == 0) {
      config->model = c->value;
      config->model_path = NULL;
      return ARGS_RUN;
    }
  }
  if (length > 5 && strcmp(value + length - 5, ".json") == 0) {
    config->model = CLI_MODEL_FILE;
    config->model_path = value;
    return ARGS_RUN;
  }
  return cli_usage_error("--model: unknown model '%s' (expected %s or a FILE.json)", value,
                         choice_list(kModels));
}

/** @brief Reads "N" or "NxR" (R replicas on GPU N) of a cuda: list into config->gpu_ordinals. */
static int parse_gpu_item(const char *item, size_t length, const char *value, train_config *config) {
  char text[32];
  char *times;
  unsigned long long ordinal = 0, replicas = 1;
  if (length == 0 || length >= sizeof text) return 0;
  memcpy(text, item, length);
  text[length] = '\0';
  times = strchr(text, 'x');
  if (times != NULL) {
    *times = '\0';
    if (!parse_unsigned(times + 1, &replicas) || replicas < 1) return 0;
  }
  if (!parse_unsigned(text, &ordinal) || ordinal > 1023) return 0;
  while (replicas-- > 0) {
    if (config->gpu_replicas == DPT_MAX_CPU_DEVICES) {
      cli_usage_error("--devices %s: at most %d replicas", value, DPT_MAX_CPU_DEVICES);
      return -1;
    }
    config->gpu_ordinals[config->gpu_replicas++] = (int)ordinal;
  }
  return 1;
}

/** @brief --devices cpu:K (K in 1..DPT_MAX_CPU_DEVICES), cuda (every GPU), or cuda:LIST where LIST is
 *  comma-separated GPU ordinals, each optionally xR for R replicas on that GPU ("cuda:0x2"). */
static int apply_devices(const char *value, train_config *config) {
  unsigned long long count = 0;
  config->cuda = 0;
  config->cpu_devices = 0;
  config->gpu_replicas = 0;
  if (strcmp(value, "cuda") == 0) {
    config->cuda = 1;
    return ARGS_RUN;
  }
  /* One process per GPU on each machine (mpirun, srun): the GPU of the process's local rank. */
  if (strcmp(value, "cuda:local") == 0) {
    unsigned long long rank = 0;
    if (!platform_local_rank(&rank) || rank > 1023)
      return cli_usage_error(
          "--devices cuda:local: no local rank in the environment (OMPI_COMM_WORLD_LOCAL_RANK, "
          "MPI_LOCALRANKID, PMI_LOCAL_RANK or SLURM_LOCALID; start it with mpirun or srun)");
    config->cuda = 1;
    config->gpu_ordinals[config->gpu_replicas++] = (int)rank;
    return ARGS_RUN;
  }
  if (strncmp(value, "cuda:", 5) == 0) {
    const char *item = value + 5;
    config->cuda = 1;
    for (;;) {
      const char *comma = strchr(item, ',');
      const size_t length = comma != NULL ? (size_t)(comma - item) : strlen(item);
      const int ok = parse_gpu_item(item, length, value, config);
      if (ok < 0) return CLI_EXIT_USAGE;
      if (ok == 0) {
        return cli_usage_error(
            "--devices: expected cuda:N[xR][,N[xR]...] (e.g. cuda:0, cuda:0,1, cuda:0x2), "
            "got '%s'",
            value);
      }
      if (comma == NULL) return ARGS_RUN;
      item = comma + 1;
    }
  }
  if (strncmp(value, "cpu:", 4) != 0 || !parse_unsigned(value + 4, &count) || count < 1 ||
      count > DPT_MAX_CPU_DEVICES) {
    return cli_usage_error("--devices: expected cpu:K with K in 1..%d, cuda or cuda:LIST, got '%s'",
                           DPT_MAX_CPU_DEVICES, value);
  }
  config->cpu_devices = (size_t)count;
  return ARGS_RUN;
}

/** @brief Reads "w1,w2,..." into config->split_weights. */
static int parse_split_weights(const char *value, train_config *config) {
  const char *cursor = value;
  size_t count = 0;
  for (;;) {
    char item[64];
    size_t length = strcspn(cursor, ",");
    double weight = 0;
    if (length == 0 || length >= sizeof item) {
      return cli_usage_error("--split: expected even, auto or positive weights w1,w2,..., got '%s'", value);
    }
    memcpy(item, cursor, length);
    item[length] = '\0';
    if (!parse_real(item, &weight) || !real_in_range(weight, REAL_POSITIVE)) {
      return cli_usage_error("--split: weight '%s' is not a positive number", item);
    }
    if (count == DPT_MAX_CPU_DEVICES) {
      return cli_usage_error("--split: more than %d weights", DPT_MAX_CPU_DEVICES);
    }
    config->split_weights[count++] = (float)weight;
    if (cursor[length] == '\0') break;
    cursor += length + 1;
  }
  config->split = DPT_SPLIT_WEIGHTED;
  config->split_weight_count = count;
  return ARGS_RUN;
}

static int apply_split(const char *value, train_config *config) {
  if (strcmp(value, "even") == 0 || strcmp(value, "auto") == 0) {
    config->split = strcmp(value, "even") == 0 ? DPT_SPLIT_EVEN : DPT_SPLIT_AUTO;
    config->split_weight_count = 0;
    return ARGS_RUN;
  }
  return parse_split_weights(value, config);
}

/** @brief Stores @p value (non-NULL unless the option is a flag) into the field of @p spec. */
static int apply_option(const option_spec *spec, const char *value, train_config *config) {
  void *field = (char *)config + spec->offset;
  switch (spec->kind) {
    case ARG_FLAG:
      *(int *)field = 1;
      return ARGS_RUN;
    case ARG_STRING:
      if (value[0] == '\0') return cli_usage_error("%s: empty value", spec->name);
      *(const char **)field = value;
      return ARGS_RUN;
    case ARG_SIZE:
    case ARG_U64:
      return apply_integer(spec, value, field);
    case ARG_REAL:
      return apply_real(spec, value, (double *)field);
    case ARG_CHOICE:
      return apply_choice(spec, value, (int *)field);
    case ARG_MODEL:
      return apply_model(value, config);
    case ARG_DEVICES:
      return apply_devices(value, config);
    case ARG_SPLIT:
      return apply_split(value, config);
  }
  return cli_usage_error("%s: unhandled option", spec->name);
}

/** @brief Finds the option named by @p arg ("--name" or "--name=value"); NULL when unknown. */
static const option_spec *find_option(const char *arg, size_t name_length) {
  size_t i;
  for (i = 0; i < sizeof kOptions / sizeof kOptions[0]; ++i) {
    if (strlen(kOptions[i].name) == name_length && strncmp(kOptions[i].name, arg, name_length) == 0) {
      return &kOptions[i];
    }
  }
  return NULL;
}

/**
 * @brief Parses the option at argv[*index] and its value (inline after '=' or the next argument),
 * advancing *index past what it used.
 */
static int parse_one(int argc, char **argv, int *index, train_config *config) {
  const char *arg = argv[*index];
  const char *equals = strchr(arg, '=');
  size_t name_length = equals != NULL ? (size_t)(equals - arg) : strlen(arg);
  const option_spec *spec = find_option(arg, name_length);
  const char *value = NULL;
  if (spec == NULL) {
    if (strncmp(arg, "-", 1) != 0) return cli_usage_error("unexpected argument '%s'", arg);
    return cli_usage_error("unknown option '%.*s' (see 'dptrain train --help')", (int)name_length, arg);
  }
  if (spec->kind == ARG_FLAG) {
    if (equals != NULL) return cli_usage_error("%s takes no value", spec->name);
  } else if (equals != NULL) {
    value = equals + 1;
  } else if (*index + 1 < argc && strncmp(argv[*index + 1], "--", 2) != 0) {
    /* A following "--option" means the value was forgotten; "-1" is still taken as a value. */
    value = argv[++*index];
  } else {
    return cli_usage_error("%s: missing value", spec->name);
  }
  ++*index;
  config->given[spec - kOptions] = 1;
  return apply_option(spec, value, config);
}

static int was_given(const train_config *config, const char *name) {
  const option_spec *spec = find_option(name, strlen(name));
  return spec != NULL && config->given[spec - kOptions];
}

/** @brief Checks combinations that no single option can reject by itself. */
static int check_config(const train_config *config) {
  if (config->model == CLI_MODEL_NONE)
    return cli_usage_error("missing --model (lenet, mlp, resnet18, gpt-mini or a FILE.json)");
  if (config->validation_fraction <= 0)
    return cli_usage_error("--validation-fraction: expected a number in (0, 1), got 0");
  const size_t listed = config->cuda ? config->gpu_replicas : config->cpu_devices;
  if (listed > 0 && config->split == DPT_SPLIT_WEIGHTED && config->split_weight_count != listed) {
    return cli_usage_error("--split: %zu weights given for %zu devices", config->split_weight_count, listed);
  }
  if (!config->cuda && (config->tf32 || config->deterministic)) {
    return cli_usage_error("--tf32 and --deterministic apply to --devices cuda only");
  }
  if (config->optimizer == DPT_OPTIMIZER_ADAMW && (config->momentum > 0 || config->nesterov)) {
    return cli_usage_error("--momentum and --nesterov apply to --optimizer sgd only");
  }
  if (config->nesterov && config->momentum <= 0) {
    return cli_usage_error("--nesterov needs --momentum greater than 0");
  }
  if (config->pipeline <= 1 &&
      (was_given(config, "--micro-batches") || was_given(config, "--pipeline-schedule") ||
       was_given(config, "--pipeline-cuts") || was_given(config, "--pipeline-scope") ||
       was_given(config, "--pipeline-balance") || was_given(config, "--pipeline-copies"))) {
    return cli_usage_error(
        "--micro-batches, --pipeline-schedule, --pipeline-cuts, --pipeline-scope, --pipeline-balance and "
        "--pipeline-copies need --pipeline S (S > 1)");
  }
  if (was_given(config, "--pipeline-copies") && config->pipeline_scope != DPT_PIPELINE_SCOPE_WORLD)
    return cli_usage_error(
        "--pipeline-copies divides the processes among copies of a pipeline whose stages they share: it "
        "needs --pipeline-scope world (in the process scope every process is a copy)");
  if (was_given(config, "--pipeline-cuts") && was_given(config, "--pipeline-balance"))
    return cli_usage_error("--pipeline-cuts names the cuts, --pipeline-balance chooses them: give one");
  if (config->load_weights_path != NULL && config->resume_path != NULL)
    return cli_usage_error("--load-weights and --resume both set the weights: give one");
  if (config->checkpoint_every > 0 && config->checkpoint_path == NULL)
    return cli_usage_error("--checkpoint-every needs --checkpoint PATH");
  if (config->checkpoint_every % config->accumulate != 0)
    return cli_usage_error(
        "--checkpoint-every %zu: a checkpoint is taken between optimizer steps, so it must "
        "be a multiple of --accumulate %zu",
        config->checkpoint_every, config->accumulate);
  /* (With the stages divided among the processes each process holds S/P of them: the library checks.) */
  if (config->pipeline > 1 && listed > 0 && listed % config->pipeline != 0 &&
      config->pipeline_scope != DPT_PIPELINE_SCOPE_WORLD) {
    return cli_usage_error("--pipeline %zu needs a multiple of %zu devices (stages x replicas), %zu given",
                           config->pipeline, config->pipeline, listed);
  }
  return ARGS_RUN;
}

static int is_help(const char *arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int parse_train_args(int argc, char **argv, train_config *config) {
  int index = 0;
  set_defaults(config);
  for (index = 0; index < argc; ++index) {
    if (is_help(argv[index])) {
      print_train_help(stdout);
      return CLI_EXIT_OK;
    }
  }
  index = 0;
  while (index < argc) {
    int status = parse_one(argc, argv, &index, config);
    if (status != ARGS_RUN) return status;
  }
  apply_recipe(config);
  return check_config(config);
}

void print_train_help(FILE *out) {
  fputs(
      "usage: dptrain train --model lenet|mlp|resnet18|gpt-mini|FILE.json [options]\n"
      "\n"
      "Trains a built-in model, or the model a JSON file describes (docs/model-json.md; 'dptrain model\n"
      "NAME' prints one to start from), data-parallel across CPU devices or GPUs: an image model on\n"
      "Fashion-MNIST (784 inputs, 10 outputs), a token model (gpt-mini, or a file whose input_dtype is\n"
      "int32) on byte-level text, its loss in nats per token and bits per byte. gpt-mini's recipe\n"
      "(what its options default to): adamw, beta2 0.95, weight decay 0.1 on matrices, clip 1, cosine\n"
      "from 1e-3 to 1e-4 after a warm-up of a tenth of the run (at most 100 steps), init std 0.02,\n"
      "batch 16, 1 epoch.\n"
      "\n"
      "data and devices:\n"
      "  --data DIR             Fashion-MNIST directory (default: $DPTRAIN_DATA_DIR or\n"
      "                         " DPT_FASHION_MNIST_DEFAULT_DIR
      ")\n"
      "  --text FILE|DIR        token models: UTF-8 text, a file or a directory of files (default:\n"
      "                         " CLI_DEFAULT_TEXT
      ")\n"
      "  --validation-fraction F  token models: the last part of the text to validate on (default: 0.1)\n"
      "  --tie P=S[,P=S...]     tie parameter P to the earlier parameter S (one tensor), e.g. gpt-mini's\n"
      "                         LM head to its token embedding: lm_head.weight=transformer.wte.weight\n"
      "  --train-limit N        use only the first N training samples (text: windows)\n"
      "  --test-limit N         use only the first N test (validation) samples\n"
      "  --devices cpu:K        train on K CPU devices (default: $DPTRAIN_CPU_DEVICES or the core count)\n"
      "  --devices cuda[:LIST]  train on GPUs: every GPU, or a list of ordinals, N xR for R replicas on\n"
      "                         GPU N (cuda:0, cuda:0,1, cuda:0x2); cuda:local = the GPU of the process's\n"
      "                         local rank under mpirun or srun (one process per GPU)\n"
      "  --tf32                 GPUs: let cuBLAS and cuDNN use TF32 tensor cores (default: full FP32)\n"
      "  --deterministic        GPUs: deterministic GEMM-family cuDNN algorithms (the same bits every run)\n"
      "  --split even|auto|w1,w2,...  batch split across devices (default: even)\n"
      "  --allreduce ring|naive gradient all-reduce (default: ring)\n"
      "  --precision fp32|bf16|fp16  matrix products on float32, bfloat16 or float16 inputs (float32\n"
      "                         accumulation, float32 master weights; fp16 with dynamic loss scaling;\n"
      "                         default fp32)\n"
      "  --allreduce-dtype fp32|bf16|fp16  what the gradient all-reduce sends: 16-bit values (half the\n"
      "                         bytes; float32 sums, each contribution and sum rounded) or float32\n"
      "                         (default); CPU and CUDA devices\n"
      "  --activation-dtype fp32|bf16|fp16  keep activations between forward and backward as 16-bit\n"
      "                         copies (about 0.6 of the bytes on deep models; backward reads them\n"
      "                         rounded) or float32 (default)\n"
      "  --shard none|optimizer|gradients|parameters  sharded data parallel: optimizer = each device\n"
      "                         keeps the optimizer state of 1/K of the parameters (ZeRO stage 1: the same\n"
      "                         bits as none, the default); gradients = also 1/K of the gradient (stage 2,\n"
      "                         reduce-scattered bucket by bucket during backward); parameters = also 1/K\n"
      "                         of the parameters (stage 3, FSDP: gathered bucket by bucket as the\n"
      "                         layers run); CPU devices (optimizer: GPUs too)\n"
      "  --shard-scope process|world  across MPI processes: shard among each process's devices\n"
      "                         (process, the default: a whole copy per process) or among every device\n"
      "                         of the job (world: every --shard mode; every process saves its part of\n"
      "                         the checkpoint, process 0 writes it)\n"
      "  --prefetch-parameters  --shard parameters: read the next bucket of parameters while the\n"
      "                         current one's layers run, from the other processes (--shard-scope\n"
      "                         world) and on GPUs from the other GPUs (a second gather buffer per\n"
      "                         device)\n"
      "  --pipeline S           pipeline model parallel: the model cut into S stages on S x R devices\n"
      "                         (--devices cpu:K, K a multiple of S; default cpu:S), each batch into\n"
      "                         micro-batches that pass through them (the bits of R devices\n"
      "                         accumulating those micro-batches); CPU devices\n"
      "  --micro-batches M      micro-batches per step with --pipeline (default: 4 per stage)\n"
      "  --pipeline-schedule 1f1b|gpipe  the stages' order of forwards and backwards (default: 1f1b,\n"
      "                         which keeps fewer micro-batches' activations)\n"
      "  --pipeline-cuts NAME,...  the nodes where stages 2..S begin (default: chosen by\n"
      "                         --pipeline-balance; `dptrain model` lists the node names)\n"
      "  --pipeline-balance work|time|parameters  what the chosen cuts divide evenly: the estimated\n"
      "                         work (default), each layer's time measured on the first device when\n"
      "                         training starts, or the parameters (memory); the cuts are printed\n"
      "  --pipeline-scope process|world  under mpirun: every process runs every stage on its share of\n"
      "                         each batch (process, the default), or the stages are divided among the\n"
      "                         P processes, S/P each, or P/S copies of each (world: model parallel\n"
      "                         across machines, data parallel among a stage's copies; the\n"
      "                         same device count in every process, default cpu:S/P)\n"
      "  --pipeline-copies C    --pipeline-scope world: the P processes hold C copies of the pipeline,\n"
      "                         S C/P stages each (default: P/S when P > S, else 1); e.g. 4 processes,\n"
      "                         --pipeline 4 --pipeline-copies 2: 2 stages per process, 2 copies\n"
      "  --bn sync|local        batch norm statistics over the global batch (exact under any split) or\n"
      "                         over each device's slice (default: sync)\n"
      "  --recompute-bn N       after training, recompute batch norm's running statistics over the\n"
      "                         first N training samples in batches of --batch (each batch weighing the\n"
      "                         same, PyTorch's update_bn), then evaluate the test set on them (also\n"
      "                         after --resume of a finished run); the weights are not changed\n"
      "  --communicator auto|local|mpi  span the processes of an MPI job (default: auto = mpi when\n"
      "                         started by mpirun); only process 0 prints and writes files\n"
      "  --timeout SECONDS      deadline of each multi-device or multi-process operation: a device or\n"
      "                         process that stalls or dies ends the run with a timeout or\n"
      "                         communication error within twice this (default: 300; 0 = none);\n"
      "                         time the process spends stopped (Ctrl-Z, then fg) does not count\n"
      "\n"
      "training:\n"
      "  --epochs N             epochs (default: 10)\n"
      "  --batch B              global batch size (default: 256)\n"
      "  --accumulate N         batches per optimizer step (default: 1)\n"
      "  --bucket-kib N         gradient bucket size for the all-reduce overlapped with backward;\n"
      "                         0 = one all-reduce after backward (default: 1024)\n"
      "  --seed S               seed of initialisation and shuffling (default: 0)\n"
      "  --init normal|uniform  weight initialisation (default: normal); biases start at 0\n"
      "  --init-std S           standard deviation of --init normal (default: 0.01)\n"
      "\n"
      "optimizer:\n"
      "  --optimizer sgd|adamw  (default: sgd)\n"
      "  --lr LR                learning rate (default: 0.2 lenet, 0.1 the others; 0.001 with adamw)\n"
      "  --momentum M           SGD momentum in [0, 1) (default: 0)\n"
      "  --nesterov             Nesterov momentum (needs --momentum)\n"
      "  --weight-decay W       L2 for sgd, decoupled for adamw (default: 0)\n"
      "  --decay-scope all|matrices  decay every parameter, or only the weights of dense, linear and\n"
      "                         conv2d, not biases, norms and embeddings (default: all)\n"
      "  --beta2 B              adamw's second-moment decay (default: 0.999)\n"
      "  --clip NORM            clip the global gradient norm (default: 0 = off)\n"
      "  --schedule constant|step|cosine  learning-rate schedule (default: constant)\n"
      "  --warmup N             linear warm-up over N optimizer steps (default: 0)\n"
      "  --step-size N          step schedule: steps between decays (default: a third of the run)\n"
      "  --gamma G              step schedule: decay factor (default: 0.1)\n"
      "  --min-lr LR            cosine schedule: final learning rate (default: 0)\n"
      "\n"
      "output:\n"
      "  --progress-every N     batches between progress reports (default: ~20 per epoch on a\n"
      "                         terminal, 4 otherwise)\n"
      "  --json                 print one JSON result object on stdout; progress goes to stderr\n"
      "  --metrics FILE.csv     write per-epoch metrics as CSV\n"
      "  --trace FILE.json      write a timeline of the training (per device: each op's forward and\n"
      "                         backward, reductions, gathers, updates; the first 65536 events of each\n"
      "                         device and thread) as Chrome trace-event JSON (chrome://tracing, Perfetto)\n"
      "  --plot FILE.svg        draw the loss and accuracy curves as SVG\n"
      "  --checkpoint PATH      save a checkpoint atomically after every epoch\n"
      "  --checkpoint-every N   also every N batches into an epoch (a multiple of --accumulate);\n"
      "                         --resume then goes on from the batch after it, the same bits as a\n"
      "                         run that was never stopped\n"
      "  --resume PATH          load a checkpoint first and train only the epochs it lacks\n"
      "                         (same model and optimizer; any number of devices)\n"
      "  --load-weights FILE.safetensors  start from these weights (by name, as PyTorch's\n"
      "                         safetensors.torch.save_file(model.state_dict()) writes them)\n"
      "                         instead of --init's; the optimizer starts fresh\n"
      "  --save-weights FILE.safetensors  write the final weights and batch-norm statistics by\n"
      "                         name, for PyTorch's safetensors.torch.load_file (also after\n"
      "                         --resume of a finished run: nothing trained, the weights written)\n"
      "  --help                 show this help\n"
      "\n"
      "Exit status: 0 success, 1 library or system error, 2 bad command line, 130 interrupted.\n",
      out);
}
