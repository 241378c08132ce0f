/*
 * `dptrain generate`: loads a token model's checkpoint and prints text sampled from it, one byte token at
 * a time. Each token runs the model over the last T bytes (its context): no KV cache, T forwards of a
 * window per token, which a model of gpt-mini's size does in milliseconds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model_file.h"
#include "sampler.h"

/** @brief What `dptrain generate` was asked to do. */
typedef struct generate_config {
  const char *checkpoint;
  const char *model; /**< A built-in name or FILE.json; default gpt-mini. */
  const char *ties;  /**< --tie, as the model was trained, or NULL. */
  const char *prompt;
  size_t tokens;
  double temperature;
  size_t top_k;
  uint64_t seed;
} generate_config;

static void print_generate_help(FILE *out) {
  fputs(
      "usage: dptrain generate --checkpoint FILE [--model gpt-mini|FILE.json] [--tie P=S] [--prompt TEXT]\n"
      "                        [--tokens N] [--temperature T] [--top-k K] [--seed S]\n"
      "\n"
      "Prints the prompt and N bytes sampled from a byte-level language model trained with\n"
      "'dptrain train --model gpt-mini --checkpoint FILE' (any optimizer; the model must be the one\n"
      "trained). Each byte is drawn from softmax(logits / T) over the K most likely bytes.\n"
      "\n"
      "  --checkpoint FILE   the trained model (required)\n"
      "  --model NAME        gpt-mini (default) or the FILE.json it was trained as\n"
      "  --tie P=S[,...]     the ties it was trained with (dptrain train --tie)\n"
      "  --prompt TEXT       text to continue (default: a newline); only its last context bytes count\n"
      "  --tokens N          bytes to generate (default: 200)\n"
      "  --temperature T     0 = always the most likely byte (default: 0.8)\n"
      "  --top-k K           sample among the K most likely bytes; 0 = all (default: 40)\n"
      "  --seed S            seed of the sampling (default: 0)\n",
      out);
}

static int parse_size(const char *name, const char *value, unsigned long long max, unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  if (value[0] < '0' || value[0] > '9')
    return cli_usage_error("%s: expected an integer, got '%s'", name, value);
  *out = strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || *out > max)
    return cli_usage_error("%s: expected an integer up to %llu, got '%s'", name, max, value);
  return CLI_EXIT_OK;
}

static int parse_generate_args(int argc, char **argv, generate_config *c) {
  int i;
  memset(c, 0, sizeof *c);
  c->model = "gpt-mini";
  c->prompt = "\n";
  c->tokens = 200;
  c->temperature = 0.8;
  c->top_k = 40;
  for (i = 0; i < argc; ++i) {
    const char *name = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    unsigned long long number = 0;
    int rc = CLI_EXIT_OK;
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
      print_generate_help(stdout);
      return CLI_EXIT_OK;
    }
    if (value == NULL) return cli_usage_error("%s: missing value (see 'dptrain generate --help')", name);
    ++i;
    if (strcmp(name, "--checkpoint") == 0) {
      c->checkpoint = value;
    } else if (strcmp(name, "--model") == 0) {
      c->model = value;
    } else if (strcmp(name, "--tie") == 0) {
      c->ties = value;
    } else if (strcmp(name, "--prompt") == 0) {
      c->prompt = value;
    } else if (strcmp(name, "--tokens") == 0) {
      rc = parse_size(name, value, 1000000, &number);
      c->tokens = (size_t)number;
    } else if (strcmp(name, "--top-k") == 0) {
      rc = parse_size(name, value, 1u << 24, &number);
      c->top_k = (size_t)number;
    } else if (strcmp(name, "--seed") == 0) {
      rc = parse_size(name, value, UINT64_MAX, &number);
      c->seed = (uint64_t)number;
    } else if (strcmp(name, "--temperature") == 0) {
      char *end = NULL;
      c->temperature = strtod(value, &end);
      if (end == value || *end != '\0' || !(c->temperature >= 0 && c->temperature <= 100))
        rc = cli_usage_error("--temperature: expected a number in [0, 100], got '%s'", value);
    } else {
      return cli_usage_error("unknown option '%s' (see 'dptrain generate --help')", name);
    }
    if (rc != CLI_EXIT_OK) return rc;
  }
  if (c->checkpoint == NULL) return cli_usage_error("missing --checkpoint FILE");
  return -1;
}

/**
 * @brief A one-device trainer holding the checkpoint's parameters. The checkpoint names its optimizer's
 * kind and state size, which the trainer must match: AdamW (gpt-mini's recipe), then SGD with momentum,
 * then plain SGD are tried; the first error is the one reported.
 */
static int load_trainer(dpt_context *context, const dpt_model *model, const char *path, dpt_trainer **out) {
  static const dpt_optimizer_kind kinds[3] = {DPT_OPTIMIZER_ADAMW, DPT_OPTIMIZER_SGD, DPT_OPTIMIZER_SGD};
  static const float momenta[3] = {0.0f, 0.9f, 0.0f};
  dpt_status first = DPT_OK;
  char message[512] = "";
  int i;
  for (i = 0; i < 3; ++i) {
    dpt_optimizer_options o;
    dpt_trainer *trainer = NULL;
    dpt_status status;
    dpt_optimizer_options_init(&o);
    o.kind = kinds[i];
    o.momentum = momenta[i];
    status = dpt_trainer_create(&trainer, context, model, NULL, &o);
    if (status != DPT_OK) return cli_library_error(status);
    status = dpt_trainer_load(trainer, path);
    if (status == DPT_OK) {
      *out = trainer;
      return CLI_EXIT_OK;
    }
    dpt_trainer_destroy(trainer);
    if (first == DPT_OK) {
      first = status;
      snprintf(message, sizeof message, "%s", dpt_last_error_message());
    }
    if (status != DPT_ERROR_INVALID_ARGUMENT) break; /* not a mismatch of optimizers: no use trying on */
  }
  fprintf(stderr, "dptrain: error: %s: %s\n", dpt_status_string(first), message);
  return CLI_EXIT_FAILURE;
}

/** @brief Samples c->tokens bytes after the prompt, printing each as it comes. */
static int generate(const generate_config *c, dpt_trainer *trainer, size_t context, size_t vocabulary) {
  const size_t prompt = strlen(c->prompt);
  const size_t total = prompt + c->tokens;
  unsigned char *text = malloc(total + 1);
  int32_t *window = malloc(context * sizeof *window);
  float *logits = malloc(context * vocabulary * sizeof *logits);
  double *scratch = malloc(vocabulary * sizeof *scratch);
  sampler s = sampler_create(c->temperature, c->top_k, c->seed);
  size_t length = prompt, i;
  int rc = CLI_EXIT_OK;
  if (text == NULL || window == NULL || logits == NULL || scratch == NULL) {
    fprintf(stderr, "dptrain: error: out of memory\n");
    rc = CLI_EXIT_FAILURE;
  }
  if (rc == CLI_EXIT_OK) {
    memcpy(text, c->prompt, prompt);
    fwrite(text, 1, prompt, stdout);
  }
  while (rc == CLI_EXIT_OK && length < total) {
    /* The last `context` bytes; a shorter text is padded after its end, which a causal model's logits
     * at the text's last position do not see. */
    const size_t start = length > context ? length - context : 0, used = length - start;
    dpt_status status;
    for (i = 0; i < context; ++i) window[i] = i < used ? (int32_t)text[start + i] : 0;
    status = dpt_trainer_predict_tokens(trainer, window, context, 1, logits, context * vocabulary);
    if (status != DPT_OK) {
      rc = cli_library_error(status);
      break;
    }
    text[length] = (unsigned char)sampler_next(&s, logits + (used - 1) * vocabulary, vocabulary, scratch);
    fputc(text[length], stdout);
    fflush(stdout);
    ++length;
  }
  if (rc == CLI_EXIT_OK) fputc('\n', stdout);
  free(text);
  free(window);
  free(logits);
  free(scratch);
  return rc;
}

/** @brief The model's window length and vocabulary, a one-device context and the loaded trainer. */
static int open_model(const generate_config *c, dpt_model *model, dpt_context **context,
                      dpt_trainer **trainer, size_t *length, size_t *vocabulary) {
  dpt_context_options options;
  dpt_input_type input = DPT_INPUT_FLOAT32;
  size_t outputs = 0;
  CLI_TRY(dpt_model_input_type(model, &input));
  if (input != DPT_INPUT_TOKENS)
    return cli_usage_error("--model %s: generate needs a token model (gpt-mini)", c->model);
  CLI_TRY(dpt_model_input_size(model, length));
  CLI_TRY(dpt_model_output_size(model, &outputs));
  *vocabulary = outputs / *length;
  dpt_context_options_init(&options);
  options.cpu_devices = 1;
  CLI_TRY(dpt_context_create(context, &options));
  return load_trainer(*context, model, c->checkpoint, trainer);
}

int cli_generate_main(int argc, char **argv) {
  generate_config c;
  dpt_model *model = NULL;
  dpt_context *context = NULL;
  dpt_trainer *trainer = NULL;
  size_t length = 0, vocabulary = 0;
  int rc = parse_generate_args(argc, argv, &c);
  if (rc != -1) return rc;
  rc = cli_load_model(c.model, c.ties, 1, &model);
  if (rc != CLI_EXIT_OK) return rc;
  rc = open_model(&c, model, &context, &trainer, &length, &vocabulary);
  if (rc == CLI_EXIT_OK) rc = generate(&c, trainer, length, vocabulary);
  dpt_trainer_destroy(trainer);
  dpt_context_destroy(context);
  dpt_model_destroy(model);
  return rc;
}
