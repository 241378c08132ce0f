/* `dptrain model NAME|FILE.json [--tie P=S,...]`: prints the model as JSON (dpt_model_to_json), a file to
 * edit and train with `dptrain train --model FILE.json`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model_file.h"

static void print_model_help(FILE *out) {
  fputs(
      "usage: dptrain model lenet|mlp|resnet18|gpt-mini|FILE.json [--tie P=S[,P=S...]]\n"
      "\n"
      "Prints the model as JSON (the format of docs/model-json.md): a built-in model to start a model file\n"
      "from, or a model file as the library reads it (every name and attribute written out).\n"
      "  --tie P=S[,P=S...]  tie parameter P to the earlier parameter S first (the file then lists the ties),\n"
      "                      e.g. gpt-mini's LM head: lm_head.weight=transformer.wte.weight\n",
      out);
}

int cli_model_main(int argc, char **argv) {
  dpt_model *model = NULL;
  char *json = NULL;
  size_t size = 0;
  const char *name = NULL, *ties = NULL;
  dpt_status status;
  int rc, i;
  if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
    print_model_help(stdout);
    return CLI_EXIT_OK;
  }
  for (i = 0; i < argc; ++i) {
    if (strcmp(argv[i], "--tie") == 0) {
      if (i + 1 == argc) return cli_usage_error("--tie needs a value (P=S[,P=S...])");
      if (ties != NULL) return cli_usage_error("--tie given twice (list the ties with commas)");
      ties = argv[++i];
    } else if (argv[i][0] == '-') {
      return cli_usage_error("unknown option '%s' (see 'dptrain model --help')", argv[i]);
    } else if (name != NULL) {
      return cli_usage_error("expected one model: dptrain model lenet|mlp|resnet18|gpt-mini|FILE.json");
    } else {
      name = argv[i];
    }
  }
  if (name == NULL)
    return cli_usage_error("expected one model: dptrain model lenet|mlp|resnet18|gpt-mini|FILE.json");
  rc = cli_load_model(name, ties, 0, &model);
  if (rc != CLI_EXIT_OK) return rc;
  status = dpt_model_to_json(model, NULL, 0, &size);
  if (status == DPT_ERROR_BUFFER_TOO_SMALL) {
    json = malloc(size);
    status = json == NULL ? DPT_ERROR_OUT_OF_MEMORY : dpt_model_to_json(model, json, size, NULL);
  }
  if (status == DPT_OK) {
    fputs(json, stdout);
    rc = fflush(stdout) == 0 ? CLI_EXIT_OK : cli_system_error("cannot write", "stdout");
  } else {
    rc = cli_library_error(status);
  }
  free(json);
  dpt_model_destroy(model);
  return rc;
}
