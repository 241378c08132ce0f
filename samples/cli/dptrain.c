/*
 * dptrain: the command-line front end of the dptrain library (public C API only).
 *
 *   dptrain devices [--kind cpu|cuda|all] [--json]
 *   dptrain train --model lenet|mlp|resnet18|gpt-mini|FILE.json [options]
 *   dptrain generate --checkpoint FILE [options]
 *   dptrain model lenet|mlp|resnet18|gpt-mini|FILE.json
 *
 * This file only dispatches on the command; each command lives in its own file.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void print_usage(FILE *out) {
  fputs(
      "usage: dptrain <command> [options]\n"
      "\n"
      "commands:\n"
      "  devices [--kind K] [--json]      list the devices dptrain can use (CPU and CUDA)\n"
      "  train --model NAME [...]         train on Fashion-MNIST (or text: gpt-mini) across CPU devices\n"
      "                                   or GPUs\n"
      "  generate --checkpoint FILE [...] print text sampled from a trained gpt-mini\n"
      "  model NAME|FILE.json             print a model as JSON (a model file to edit and train)\n"
      "\n"
      "  dptrain <command> --help         options of a command\n"
      "  dptrain --version                library version\n",
      out);
}

int main(int argc, char **argv) {
  const char *command = argc > 1 ? argv[1] : NULL;
  if (command == NULL) return cli_usage_error("missing command (see 'dptrain --help')");
  if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 || strcmp(command, "help") == 0) {
    print_usage(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(command, "--version") == 0) {
    printf("dptrain %s (built against %d.%d.%d)\n", dpt_version_string(), DPT_VERSION_MAJOR,
           DPT_VERSION_MINOR, DPT_VERSION_PATCH);
    return CLI_EXIT_OK;
  }
  if (strcmp(command, "devices") == 0) return cli_devices_main(argc - 2, argv + 2);
  if (strcmp(command, "train") == 0) return cli_train_main(argc - 2, argv + 2);
  if (strcmp(command, "model") == 0) return cli_model_main(argc - 2, argv + 2);
  if (strcmp(command, "generate") == 0) return cli_generate_main(argc - 2, argv + 2);
  return cli_usage_error("unknown command '%s' (see 'dptrain --help')", command);
}
