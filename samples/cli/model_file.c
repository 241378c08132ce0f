/* --model: a built-in model or a JSON model file, checked against the data it will train on. */
#include "model_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/** @brief The library reads JSON texts of at most 4 MiB. */
#define MAX_MODEL_FILE_BYTES ((size_t)4 << 20)

static int is_json_path(const char *name) {
  const size_t length = strlen(name);
  return length > 5 && strcmp(name + length - 5, ".json") == 0;
}

/** @brief Reads the whole file into a NUL-terminated buffer (freed by the caller). */
static int read_text(const char *path, char **text) {
  FILE *file = fopen(path, "rb");
  char *buffer;
  size_t size;
  if (file == NULL) return cli_system_error("cannot read", path);
  buffer = malloc(MAX_MODEL_FILE_BYTES + 2);
  if (buffer == NULL) {
    fclose(file);
    fprintf(stderr, "dptrain: error: out of memory reading '%s'\n", path);
    return CLI_EXIT_FAILURE;
  }
  size = fread(buffer, 1, MAX_MODEL_FILE_BYTES + 1, file);
  if (ferror(file)) {
    const int rc = cli_system_error("cannot read", path);
    fclose(file);
    free(buffer);
    return rc;
  }
  fclose(file);
  buffer[size] = '\0';
  if (size > MAX_MODEL_FILE_BYTES || strlen(buffer) != size) {
    fprintf(stderr, "dptrain: error: '%s': %s\n", path,
            size > MAX_MODEL_FILE_BYTES ? "larger than 4 MiB, not a model file"
                                        : "holds a NUL byte, not a model file");
    free(buffer);
    return CLI_EXIT_FAILURE;
  }
  *text = buffer;
  return CLI_EXIT_OK;
}

static int read_model_file(const char *path, dpt_model **out) {
  char *text = NULL;
  dpt_status status;
  int rc = read_text(path, &text);
  if (rc != CLI_EXIT_OK) return rc;
  status = dpt_model_from_json(out, text);
  free(text);
  if (status != DPT_OK) {
    fprintf(stderr, "dptrain: error: '%s': %s: %s\n", path, dpt_status_string(status),
            dpt_last_error_message());
    return CLI_EXIT_FAILURE;
  }
  return CLI_EXIT_OK;
}

/**
 * @brief The model must take one image's 784 pixels and give 10 logits. Any shape of 784 values reads the
 * row-major pixels: 1x28x28 as an image, 28x28 as a sequence of 28 rows of 28 features (a transformer).
 */
static int check_fashion_mnist(const char *name, const dpt_model *model) {
  size_t dims[DPT_MODEL_MAX_RANK], rank = 0, outputs = 0, i, used = 0, values = 1;
  char shape[96];
  CLI_TRY(dpt_model_tensor_shape(model, 0, dims, DPT_MODEL_MAX_RANK, &rank));
  CLI_TRY(dpt_model_output_size(model, &outputs));
  for (i = 0; i < rank; ++i) values *= dims[i];
  if (values != 28 * 28) {
    shape[0] = '\0';
    for (i = 0; i < rank && used < sizeof shape; ++i)
      used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%zu", i ? "x" : "", dims[i]);
    return cli_usage_error(
        "--model %s: the model takes %s inputs; Fashion-MNIST images are 1x28x28 (784 values in any shape)",
        name, shape);
  }
  if (outputs != 10)
    return cli_usage_error("--model %s: the model has %zu outputs; Fashion-MNIST has 10 classes", name,
                           outputs);
  return CLI_EXIT_OK;
}

/**
 * @brief A token model trains on byte-level text: it must give 256 logits (one per byte value) at every
 * position of its input, an output [T, 256].
 */
static int check_text(const char *name, const dpt_model *model) {
  size_t dims[DPT_MODEL_MAX_RANK], rank = 0, output = 0, input = 0;
  CLI_TRY(dpt_model_input_size(model, &input));
  CLI_TRY(dpt_model_output(model, &output));
  CLI_TRY(dpt_model_tensor_shape(model, output, dims, DPT_MODEL_MAX_RANK, &rank));
  if (rank != 2 || dims[0] != input || dims[1] != DPT_TEXT_VOCABULARY)
    return cli_usage_error(
        "--model %s: a token model for byte-level text must output [%zu, %d] (logits of "
        "the next byte at each of its %zu positions)",
        name, input, DPT_TEXT_VOCABULARY, input);
  return CLI_EXIT_OK;
}

/** @brief Applies --tie's "PARAM=SOURCE[,PARAM=SOURCE...]" to @p model. */
static int apply_ties(dpt_model *model, const char *ties) {
  char pair[2 * DPT_MODEL_NAME_CAPACITY + 2];
  const char *at = ties;
  while (*at != '\0') {
    const size_t length = strcspn(at, ",");
    char *equals;
    dpt_status status;
    if (length >= sizeof pair) return cli_usage_error("--tie: '%.*s...' is too long", 64, at);
    memcpy(pair, at, length);
    pair[length] = '\0';
    equals = strchr(pair, '=');
    if (equals == NULL || equals == pair || equals[1] == '\0')
      return cli_usage_error(
          "--tie: expected PARAM=SOURCE (e.g. lm_head.weight=transformer.wte.weight), got '%s'", pair);
    *equals = '\0';
    status = dpt_model_tie(model, pair, equals + 1);
    if (status == DPT_ERROR_INVALID_ARGUMENT) return cli_usage_error("--tie: %s", dpt_last_error_message());
    if (status != DPT_OK) return cli_library_error(status);
    at += length;
    if (*at == ',') ++at;
  }
  return CLI_EXIT_OK;
}

int cli_load_model(const char *name, const char *ties, int check_data, dpt_model **out) {
  dpt_input_type input = DPT_INPUT_FLOAT32;
  dpt_status status;
  dpt_model *model = NULL;
  int rc;
  if (is_json_path(name)) {
    rc = read_model_file(name, &model);
    if (rc != CLI_EXIT_OK) return rc;
  } else {
    status = dpt_model_create_builtin(&model, name);
    if (status == DPT_ERROR_INVALID_ARGUMENT)
      return cli_usage_error("unknown model '%s' (expected lenet, mlp, resnet18, gpt-mini or a FILE.json)",
                             name);
    if (status != DPT_OK) return cli_library_error(status);
  }
  rc = ties != NULL ? apply_ties(model, ties) : CLI_EXIT_OK;
  status = rc == CLI_EXIT_OK ? dpt_model_input_type(model, &input) : DPT_OK;
  if (rc == CLI_EXIT_OK && status != DPT_OK) rc = cli_library_error(status);
  if (rc == CLI_EXIT_OK && check_data)
    rc = input == DPT_INPUT_TOKENS ? check_text(name, model) : check_fashion_mnist(name, model);
  if (rc != CLI_EXIT_OK) {
    dpt_model_destroy(model);
    return rc;
  }
  *out = model;
  return CLI_EXIT_OK;
}
