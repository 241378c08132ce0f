/*
 * gpt_mini_steps TEXT STEPS OUT_DIR: trains the built-in gpt-mini on one CPU device with its CLI recipe
 * (AdamW 0.9/0.95, weight decay 0.1 on matrices, lr 1e-3, warm-up min(100, STEPS / 10), cosine to 1e-4,
 * clip 1, N(0, 0.02) initialisation) on the first STEPS * 16 training windows of TEXT, in order, 16 per
 * step. Writes OUT_DIR/init.safetensors before the first step and OUT_DIR/final.safetensors after the last,
 * and prints "step loss grad_norm learning_rate" per step: what tests/tools/pytorch_gpt_mini_steps.py
 * replays in PyTorch from the same initial weights on the same batches.
 */
#include <dptrain/dptrain.h>
#include <stdio.h>
#include <stdlib.h>

#define CONTEXT 128
#define BATCH 16

static int check(dpt_status status, const char *what) {
  if (status == DPT_OK) return 0;
  fprintf(stderr, "gpt_mini_steps: %s: %s\n", what, dpt_last_error_message());
  return 1;
}

int main(int argc, char **argv) {
  static int32_t tokens[BATCH * CONTEXT], targets[BATCH * CONTEXT];
  char path[4096];
  dpt_model *model = NULL;
  dpt_context *context = NULL;
  dpt_trainer *trainer = NULL;
  dpt_dataset *train = NULL;
  dpt_context_options co;
  dpt_trainer_options to;
  dpt_optimizer_options oo;
  size_t steps, s, windows = 0;
  if (argc != 4) {
    fprintf(stderr, "usage: gpt_mini_steps TEXT STEPS OUT_DIR\n");
    return 2;
  }
  steps = (size_t)strtoul(argv[2], NULL, 10);
  dpt_context_options_init(&co);
  co.cpu_devices = 1;
  dpt_trainer_options_init(&to);
  to.init = DPT_INIT_NORMAL;
  to.init_std = 0.02f;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 1e-3f;
  oo.beta2 = 0.95f;
  oo.weight_decay = 0.1f;
  oo.weight_decay_scope = DPT_WEIGHT_DECAY_MATRICES;
  oo.clip_norm = 1.0f;
  oo.schedule = DPT_SCHEDULE_COSINE;
  oo.total_steps = steps;
  oo.warmup_steps = steps / 10 < 100 ? steps / 10 : 100;
  oo.min_learning_rate = 1e-4f;
  if (check(dpt_model_create_builtin(&model, "gpt-mini"), "model") ||
      check(dpt_context_create(&context, &co), "context") ||
      check(dpt_trainer_create(&trainer, context, model, &to, &oo), "trainer") ||
      check(dpt_dataset_load_text(&train, NULL, argv[1], CONTEXT, 0.1), "text") ||
      check(dpt_dataset_sample_count(train, &windows), "windows"))
    return 1;
  if (windows < steps * BATCH) {
    fprintf(stderr, "gpt_mini_steps: %zu windows, %zu needed\n", windows, steps * BATCH);
    return 1;
  }
  snprintf(path, sizeof path, "%s/init.safetensors", argv[3]);
  if (check(dpt_trainer_save_safetensors(trainer, path), "save")) return 1;
  for (s = 0; s < steps; ++s) {
    dpt_step_result r;
    r.struct_size = sizeof r;
    if (check(dpt_dataset_copy_tokens(train, s * BATCH, BATCH, tokens, BATCH * CONTEXT, targets,
                                      BATCH * CONTEXT),
              "copy") ||
        check(dpt_trainer_step_tokens(trainer, tokens, BATCH * CONTEXT, targets, BATCH * CONTEXT, BATCH, &r),
              "step"))
      return 1;
    printf("%zu %.9g %.9g %.9g\n", s, r.loss, r.grad_norm, r.learning_rate);
  }
  snprintf(path, sizeof path, "%s/final.safetensors", argv[3]);
  if (check(dpt_trainer_save_safetensors(trainer, path), "save")) return 1;
  dpt_dataset_destroy(train);
  dpt_trainer_destroy(trainer);
  dpt_context_destroy(context);
  dpt_model_destroy(model);
  return 0;
}
