/* step_overhead: the C baseline of the bindings' overhead benchmark. A LeNet training step on 2 CPU devices,
 * driven through the public C API. The Java, C# and Go benchmarks repeat this protocol exactly:
 *   context with 2 CPU devices; builtin "lenet"; default trainer options (seed 0); SGD lr 0.01;
 *   batch 256 of synthetic data x[i] = ((i * 2654435761) mod 1000) / 1000, label[s] = s mod 10;
 *   5 warm-up steps, then STEPS timed steps (default 40, argv[1]); prints median and mean ms per step.
 * Usage: step_overhead [STEPS] */
#include <dptrain/dptrain.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 256

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int compare(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define CHECK(call)                                                                 \
  do {                                                                              \
    dpt_status s_ = (call);                                                         \
    if (s_ != DPT_OK) {                                                             \
      fprintf(stderr, "%s: %s\n", dpt_status_string(s_), dpt_last_error_message()); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main(int argc, char **argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 40;
  if (steps <= 0) return 2;
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = 2;
  dpt_context *ctx = NULL;
  dpt_model *model = NULL;
  dpt_trainer *trainer = NULL;
  CHECK(dpt_context_create(&ctx, &co));
  CHECK(dpt_model_create_builtin(&model, "lenet"));
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.learning_rate = 0.01f;
  CHECK(dpt_trainer_create(&trainer, ctx, model, NULL, &oo));
  size_t in = 0;
  CHECK(dpt_model_input_size(model, &in));
  float *x = malloc(BATCH * in * sizeof(float));
  int32_t y[BATCH];
  double *ms = malloc((size_t)steps * sizeof(double));
  for (size_t i = 0; i < BATCH * in; ++i) x[i] = (float)((i * 2654435761u) % 1000u) / 1000.0f;
  for (int s = 0; s < BATCH; ++s) y[s] = s % 10;
  for (int i = 0; i < 5; ++i) CHECK(dpt_trainer_step(trainer, x, BATCH * in, y, BATCH, NULL));
  double total = 0;
  for (int i = 0; i < steps; ++i) {
    const double t0 = now_ms();
    CHECK(dpt_trainer_step(trainer, x, BATCH * in, y, BATCH, NULL));
    ms[i] = now_ms() - t0;
    total += ms[i];
  }
  qsort(ms, (size_t)steps, sizeof(double), compare);
  printf("c: %d steps, median %.3f ms, mean %.3f ms per step\n", steps, ms[steps / 2], total / steps);
  free(ms);
  free(x);
  dpt_trainer_destroy(trainer);
  dpt_model_destroy(model);
  dpt_context_destroy(ctx);
  return 0;
}
