/**
 * @file model_file.h
 * @brief What --model names: a built-in model, or a JSON model file read with dpt_model_from_json().
 */
#ifndef DPTRAIN_CLI_MODEL_FILE_H
#define DPTRAIN_CLI_MODEL_FILE_H

#include <dptrain/dptrain.h>

/**
 * @brief Creates the model @p name names: "lenet", "mlp", "resnet18", or a path ending in ".json".
 * @param fashion_mnist nonzero: the model must take 1x28x28 inputs and have 10 outputs (a usage error
 *        otherwise).
 * @return CLI_EXIT_OK with *out set, or the exit status after printing one error line: CLI_EXIT_FAILURE
 *         when the file cannot be read or is not a model description, CLI_EXIT_USAGE when the model does
 *         not fit Fashion-MNIST or is no built-in model's name.
 */
int cli_load_model(const char *name, int fashion_mnist, dpt_model **out);

#endif /* DPTRAIN_CLI_MODEL_FILE_H */
