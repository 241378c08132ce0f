/*
 * `dptrain generate`'s sampler (samples/cli/sampler.c): temperature 0 is the first maximum; top-k keeps the
 * k most likely tokens (ties: the lower index) and never draws another; the draws follow softmax(z / T)
 * (100000 draws within 1% of each probability); the same seed gives the same draws.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../samples/cli/sampler.h"

static int failures = 0;

static void expect(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}

int main(void) {
  const float z[5] = {1.0f, 3.0f, 0.5f, 3.0f, 2.0f};
  double scratch[5], p[5], total = 0;
  size_t counts[5] = {0, 0, 0, 0, 0}, i, outside = 0, first = 0;
  sampler greedy = sampler_create(0.0, 0, 1), top1 = sampler_create(2.0, 1, 2),
          top2 = sampler_create(1.0, 2, 3);
  sampler all = sampler_create(0.7, 0, 4), a = sampler_create(1.0, 3, 9), b = sampler_create(1.0, 3, 9);
  int same = 1, top1_ok = 1;
  expect(sampler_next(&greedy, z, 5, scratch) == 1, "temperature 0: the first maximum (index 1 of 1 and 3)");
  for (i = 0; i < 1000; ++i) top1_ok = top1_ok && sampler_next(&top1, z, 5, scratch) == 1;
  expect(top1_ok, "top-k 1 at temperature 2: always the first maximum");
  for (i = 0; i < 10000; ++i) {
    const size_t t = sampler_next(&top2, z, 5, scratch);
    outside += t != 1 && t != 3;
    first += t == 1;
  }
  expect(outside == 0, "top-k 2: only the two largest logits (indices 1 and 3)");
  expect(first > 4700 && first < 5300, "top-k 2 of two equal logits: about half each");
  for (i = 0; i < 5; ++i) total += p[i] = exp((double)z[i] / 0.7);
  for (i = 0; i < 100000; ++i) ++counts[sampler_next(&all, z, 5, scratch)];
  for (i = 0; i < 5; ++i) {
    char what[96];
    snprintf(what, sizeof what, "temperature 0.7: token %zu drawn %.4f, softmax %.4f", i, counts[i] / 1e5,
             p[i] / total);
    expect(fabs(counts[i] / 1e5 - p[i] / total) < 0.01, what);
  }
  for (i = 0; i < 100; ++i) same = same && sampler_next(&a, z, 5, scratch) == sampler_next(&b, z, 5, scratch);
  expect(same, "the same seed: the same draws");
  return failures == 0 ? 0 : 1;
}
