/**
 * @file sampler.h
 * @brief Picks the next token from a language model's logits: temperature, top-k, a seeded generator.
 */
#ifndef DPTRAIN_CLI_SAMPLER_H
#define DPTRAIN_CLI_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

/** @brief How to sample. */
typedef struct sampler {
  double temperature; /**< 0: the most likely token (greedy); else logits / temperature. */
  size_t top_k;       /**< Keep the k most likely tokens; 0 = all. */
  uint64_t state;     /**< SplitMix64 state, from the seed. */
} sampler;

/** @brief A sampler seeded with @p seed. */
sampler sampler_create(double temperature, size_t top_k, uint64_t seed);

/**
 * @brief The token drawn from softmax(logits / temperature) over the top_k most likely tokens (ties keep
 * the lower index), or the first maximum with temperature 0. @p scratch holds @p count doubles.
 */
size_t sampler_next(sampler *s, const float *logits, size_t count, double *scratch);

#endif /* DPTRAIN_CLI_SAMPLER_H */
