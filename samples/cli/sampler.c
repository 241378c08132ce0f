/* Next-token sampling for `dptrain generate`. */
#include "sampler.h"

#include <math.h>

sampler sampler_create(double temperature, size_t top_k, uint64_t seed) {
  sampler s;
  s.temperature = temperature;
  s.top_k = top_k;
  s.state = seed;
  return s;
}

/** @brief Uniform in [0, 1) from SplitMix64 (53 bits). */
static double next_uniform(sampler *s) {
  uint64_t z = (s->state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/** @brief Tokens ranked before @p i: larger logits, equal ones with a lower index. */
static size_t rank_of(const float *logits, size_t count, size_t i) {
  size_t j, rank = 0;
  for (j = 0; j < count; ++j) rank += logits[j] > logits[i] || (logits[j] == logits[i] && j < i);
  return rank;
}

size_t sampler_next(sampler *s, const float *logits, size_t count, double *scratch) {
  size_t i, best = 0;
  double top, total = 0, u, running = 0;
  for (i = 1; i < count; ++i)
    if (logits[i] > logits[best]) best = i;
  if (s->temperature <= 0) return best;
  top = logits[best];
  for (i = 0; i < count; ++i) {
    /* A byte vocabulary is small: ranking every token is cheap and needs no sort. */
    const int kept = s->top_k == 0 || s->top_k >= count || rank_of(logits, count, i) < s->top_k;
    scratch[i] = kept ? exp(((double)logits[i] - top) / s->temperature) : 0.0;
    total += scratch[i];
  }
  u = next_uniform(s) * total;
  for (i = 0; i < count; ++i) {
    running += scratch[i];
    if (scratch[i] > 0 && u < running) return i;
  }
  return best; /* rounding put u at the very end */
}
