/* dptrain quick start: train an MLP on Fashion-MNIST across every CPU device, then report test accuracy. */
#include <dptrain/dptrain.h>
#include <stdio.h>

#define CHECK(call)                                                                 \
  do {                                                                              \
    dpt_status s_ = (call);                                                         \
    if (s_ != DPT_OK) {                                                             \
      fprintf(stderr, "%s: %s\n", dpt_status_string(s_), dpt_last_error_message()); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main(void) {
  dpt_context *ctx;
  dpt_model *model;
  dpt_trainer *trainer;
  dpt_dataset *train, *test;
  CHECK(dpt_context_create(&ctx, NULL)); /* CPU devices: DPTRAIN_CPU_DEVICES or cores */
  CHECK(dpt_model_create_builtin(&model, "mlp"));
  CHECK(dpt_trainer_create(&trainer, ctx, model, NULL, NULL)); /* SGD, lr 0.1, even split, ring all-reduce */
  CHECK(dpt_dataset_load_fashion_mnist(&train, NULL, DPT_DATASET_TRAIN));
  CHECK(dpt_dataset_load_fashion_mnist(&test, NULL, DPT_DATASET_TEST));
  dpt_fit_result r = {.struct_size = sizeof r};
  CHECK(dpt_trainer_fit(trainer, train, test, NULL, &r)); /* 1 epoch, batch 256 */
  printf("test accuracy %.4f after %zu epoch(s)\n", r.test_accuracy, r.epochs_completed);
  dpt_dataset_destroy(test);
  dpt_dataset_destroy(train);
  dpt_trainer_destroy(trainer);
  dpt_model_destroy(model);
  dpt_context_destroy(ctx);
  return 0;
}
