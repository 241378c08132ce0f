/**
 * @file args.h
 * @brief The command line of `dptrain train`: its settings and a strict parser.
 */
#ifndef DPTRAIN_CLI_ARGS_H
#define DPTRAIN_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <dptrain/dptrain.h>

/** @brief The models the CLI offers: the built-in ones, or a JSON model file (CLI_MODEL_FILE). */
enum {
  CLI_MODEL_NONE = -1,
  CLI_MODEL_LENET = 0,
  CLI_MODEL_MLP = 1,
  CLI_MODEL_RESNET18 = 2,
  CLI_MODEL_FILE = 3,
  CLI_MODEL_GPT_MINI = 4
};

/** @brief The byte-level text corpus a token model trains on without --text (Debian's fortunes). */
#define CLI_DEFAULT_TEXT "/usr/share/games/fortunes"

/** @brief Options the table knows (room in train_config.given). */
#define CLI_MAX_OPTIONS 64

/** @brief Everything `dptrain train` was asked to do. Enumerations are stored as int. */
/** @brief --communicator auto: MPI when the process was started by an MPI launcher. */
#define CLI_COMMUNICATOR_AUTO (-1)

typedef struct train_config {
  int model;                  /**< CLI_MODEL_*; CLI_MODEL_NONE until --model is given. */
  const char *model_path;     /**< CLI_MODEL_FILE: the .json file (dpt_model_from_json). */
  const char *ties;           /**< --tie PARAM=SOURCE[,...]: parameters tied (dpt_model_tie), or NULL. */
  const char *data_dir;       /**< NULL = the library's default directory. */
  const char *text_path;      /**< Token models: the text file or directory; NULL = CLI_DEFAULT_TEXT. */
  double validation_fraction; /**< Token models: the last part of the text held out for validation. */
  size_t cpu_devices;         /**< Context cpu_devices; 0 = DPTRAIN_CPU_DEVICES or the core count. */
  int cuda;                   /**< Nonzero: --devices cuda[...]: train on GPUs. */
  /** --devices cuda:LIST: the CUDA ordinal of each replica (0x2 gives 0, 0); none = every GPU. */
  int gpu_ordinals[DPT_MAX_CPU_DEVICES];
  size_t gpu_replicas; /**< Entries of gpu_ordinals. */
  int tf32;            /**< --tf32: let cuBLAS and cuDNN use TF32. */
  int deterministic;   /**< --deterministic: deterministic cuDNN algorithms. */
  size_t epochs;       /**< Epochs to train. */
  size_t batch;        /**< Global (micro-)batch size. */
  double lr;           /**< Base learning rate; 0 = the default of the model and optimizer. */
  int optimizer;       /**< dpt_optimizer_kind. */
  double momentum;     /**< SGD momentum in [0, 1). */
  double weight_decay; /**< Weight decay (L2 for SGD, decoupled for AdamW). */
  int decay_scope;     /**< dpt_weight_decay_scope. */
  double beta2;        /**< AdamW's second-moment decay. */
  int nesterov;        /**< Nonzero for Nesterov momentum. */
  int split;           /**< dpt_split_policy. */
  float split_weights[DPT_MAX_CPU_DEVICES]; /**< Weights for DPT_SPLIT_WEIGHTED. */
  size_t split_weight_count;                /**< Number of split_weights given. */
  int allreduce;                            /**< dpt_allreduce_algorithm. */
  int batch_norm;                           /**< dpt_batch_norm_mode. */
  int precision;                            /**< dpt_precision. */
  int allreduce_dtype;                      /**< dpt_precision: what the gradient all-reduce sends. */
  int activation_dtype;                     /**< dpt_precision: how activations are kept for backward. */
  int shard;                                /**< dpt_shard_mode. */
  int shard_scope;                          /**< dpt_shard_scope. */
  int prefetch_parameters;                  /**< --prefetch-parameters. */
  size_t pipeline;                          /**< Pipeline stages; 0 = no pipeline. */
  size_t micro_batches;                     /**< Micro-batches per pipelined step; 0 = the default. */
  int pipeline_schedule;                    /**< dpt_pipeline_schedule. */
  int pipeline_scope;                       /**< dpt_pipeline_scope. */
  int pipeline_balance;                     /**< dpt_pipeline_balance. */
  size_t pipeline_copies;                   /**< Copies of a divided pipeline; 0 = the default. */
  const char *pipeline_cuts;                /**< --pipeline-cuts NAME,...: where stages begin, or NULL. */
  size_t accumulate;                        /**< Micro-batches per optimizer step. */
  size_t bucket_kib;                        /**< Gradient bucket size in KiB; 0 = no overlap. */
  int communicator;                         /**< CLI_COMMUNICATOR_AUTO or a dpt_communicator. */
  double timeout;                           /**< dpt_trainer_options.timeout_seconds; 0 = none. */
  uint64_t seed;                            /**< Seed of initialisation and shuffling. */
  int init;                                 /**< dpt_init_scheme. */
  double init_std;                          /**< Standard deviation of DPT_INIT_NORMAL. */
  int schedule;                             /**< dpt_schedule_kind. */
  uint64_t warmup;                          /**< Warm-up optimizer steps. */
  int auto_warmup; /**< The model's recipe: a tenth of the run, at most 100 steps (set when --warmup is not).
                    */
  uint64_t step_size;                   /**< Step schedule: steps between decays; 0 = a third of the run. */
  double gamma;                         /**< Step schedule: decay factor. */
  double min_lr;                        /**< Cosine schedule: final learning rate. */
  double clip;                          /**< Gradient-norm clip; 0 = off. */
  size_t train_limit;                   /**< Use only the first N training samples; 0 = all. */
  size_t test_limit;                    /**< Use only the first N test samples; 0 = all. */
  size_t progress_every;                /**< Batches between progress reports; 0 = automatic. */
  int json;                             /**< Nonzero: a JSON result on stdout, progress on stderr. */
  const char *metrics_path;             /**< CSV of per-epoch metrics, or NULL. */
  const char *trace_path;               /**< Chrome trace-event JSON of the training, or NULL. */
  const char *plot_path;                /**< SVG plot of the curves, or NULL. */
  const char *checkpoint_path;          /**< Checkpoint saved after every epoch, or NULL. */
  size_t checkpoint_every;              /**< Also every this many batches into an epoch; 0 = epochs only. */
  const char *resume_path;              /**< Checkpoint to resume from, or NULL. */
  const char *load_weights_path;        /**< safetensors weights to start from, or NULL. */
  const char *save_weights_path;        /**< safetensors file of the final weights, or NULL. */
  size_t recompute_bn;                  /**< Training samples to recompute batch norm's statistics over after
                                             training; 0 = keep the running ones. */
  unsigned char given[CLI_MAX_OPTIONS]; /**< Per option of the table: given on the command line. */
} train_config;

/** @brief Outcome of parse_train_args() besides the exit statuses of cli.h. */
enum { ARGS_RUN = -1 /**< The configuration is complete: train. */ };

/**
 * @brief Parses the arguments after "train" into @p config.
 * @return ARGS_RUN to go on, CLI_EXIT_OK after printing --help, or CLI_EXIT_USAGE after printing
 *         one error line.
 */
int parse_train_args(int argc, char **argv, train_config *config);

/** @brief Name of a built-in model, e.g. "lenet". */
const char *model_name(int model);
/** @brief What --model named: a built-in model's name, or the JSON file's path as given. */
const char *model_label(const train_config *config);
/** @brief Name of an optimizer kind, e.g. "adamw". */
const char *optimizer_name(int optimizer);
/** @brief Name of a split policy: "even", "weighted" or "auto". */
const char *split_name(int split);
/** @brief Name of an all-reduce algorithm: "ring" or "naive". */
const char *allreduce_name(int allreduce);
/** @brief Name of a batch-norm mode: "sync" or "local". */
const char *batch_norm_name(int mode);
const char *precision_name(int precision);
const char *shard_name(int shard);
const char *shard_scope_name(int scope);
const char *pipeline_schedule_name(int schedule);
const char *pipeline_scope_name(int scope);
const char *pipeline_balance_name(int balance);
/** @brief Name of a schedule: "constant", "step" or "cosine". */
const char *schedule_name(int schedule);
/** @brief Name of an initialisation scheme: "normal" or "uniform". */
const char *init_name(int init);

/** @brief The learning rate to use: --lr, else the textbook default of the model and optimizer. */
double effective_learning_rate(const train_config *config);

/** @brief Prints the help of `dptrain train` to @p out. */
void print_train_help(FILE *out);

#endif /* DPTRAIN_CLI_ARGS_H */
