/**
 * @file model_file.h
 * @brief What --model names: a built-in model, or a JSON model file read with dpt_model_from_json().
 */
#ifndef DPTRAIN_CLI_MODEL_FILE_H
#define DPTRAIN_CLI_MODEL_FILE_H

#include <dptrain/dptrain.h>

/**
 * @brief Creates the model @p name names: "lenet", "mlp", "resnet18", "gpt-mini", or a path ending in
 * ".json", with the ties @p ties lists (dpt_model_tie): NULL for none, else "PARAM=SOURCE[,PARAM=SOURCE...]",
 * e.g. "lm_head.weight=transformer.wte.weight" (GPT-2's tied LM head).
 * @param check_data nonzero: the model must fit the data it trains on: an image model 784 inputs (in any
 *        shape) and 10 outputs (Fashion-MNIST), a token model an output [T, 256] at its T positions
 *        (byte-level text); a usage error otherwise.
 * @return CLI_EXIT_OK with *out set, or the exit status after printing one error line: CLI_EXIT_FAILURE
 *         when the file cannot be read or is not a model description, CLI_EXIT_USAGE when the model does
 *         not fit its data, is no built-in model's name, or refuses a tie.
 */
int cli_load_model(const char *name, const char *ties, int check_data, dpt_model **out);

#endif /* DPTRAIN_CLI_MODEL_FILE_H */
