/* Training on a subset of the real Fashion-MNIST (Debian's dataset-fashion-mnist) reaches a set accuracy,
 * through the public API only, with 2 CPU devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <dptrain/dptrain.h>

static void ok(dpt_status s) {
  if (s != DPT_OK) fail_msg("%s: %s", dpt_status_string(s), dpt_last_error_message());
}

typedef struct data {
  dpt_dataset *train, *test;
} data;

static int count_epochs(const dpt_progress *p, void *user) {
  if (p->kind == DPT_PROGRESS_EPOCH) ++*(int *)user;
  return 0;
}

static double train_subset(const char *model_name, dpt_optimizer_kind kind, float lr, size_t epochs,
                           const data *d) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = 2;
  dpt_context *context = NULL;
  ok(dpt_context_create(&context, &co));
  dpt_model *model = NULL;
  ok(dpt_model_create_builtin(&model, model_name));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 7;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = kind;
  oo.learning_rate = lr;
  oo.momentum = kind == DPT_OPTIMIZER_SGD ? 0.9f : 0.0f;
  dpt_trainer *trainer = NULL;
  ok(dpt_trainer_create(&trainer, context, model, &to, &oo));
  dpt_fit_options fo;
  dpt_fit_options_init(&fo);
  fo.epochs = epochs;
  fo.batch_size = 128;
  int epoch_reports = 0;
  fo.progress = count_epochs;
  fo.user_data = &epoch_reports;
  dpt_fit_result r;
  r.struct_size = sizeof r;
  ok(dpt_trainer_fit(trainer, d->train, d->test, &fo, &r));
  assert_int_equal(epoch_reports, (int)epochs);
  assert_int_equal(r.epochs_completed, epochs);
  assert_true(r.has_test);
  printf("# %s: test accuracy %.4f, train loss %.4f, %.0f images/s\n", model_name, r.test_accuracy,
         r.train_loss, r.samples_per_second);
  dpt_trainer_destroy(trainer);
  dpt_model_destroy(model);
  dpt_context_destroy(context);
  return r.test_accuracy;
}

static void test_mlp_reaches_accuracy(void **state) {
  const data *d = *state;
  assert_true(train_subset("mlp", DPT_OPTIMIZER_SGD, 0.05f, 3, d) >= 0.78);
}

static void test_lenet_reaches_accuracy(void **state) {
  const data *d = *state;
  assert_true(train_subset("lenet", DPT_OPTIMIZER_ADAMW, 0.002f, 2, d) >= 0.70);
}

static int setup(void **state) {
  static data d;
  dpt_dataset *train = NULL, *test = NULL;
  if (dpt_dataset_load_fashion_mnist(&train, NULL, DPT_DATASET_TRAIN) != DPT_OK ||
      dpt_dataset_load_fashion_mnist(&test, NULL, DPT_DATASET_TEST) != DPT_OK) {
    fprintf(stderr, "Fashion-MNIST missing: %s\n", dpt_last_error_message());
    return -1;
  }
  size_t n = 0, classes = 0;
  if (dpt_dataset_sample_count(train, &n) != DPT_OK || n != 60000) return -1;
  if (dpt_dataset_class_count(test, &classes) != DPT_OK || classes != 10) return -1;
  if (dpt_dataset_subset(&d.train, train, 0, 6000) != DPT_OK) return -1;
  if (dpt_dataset_subset(&d.test, test, 0, 2000) != DPT_OK) return -1;
  dpt_dataset_destroy(train);
  dpt_dataset_destroy(test);
  *state = &d;
  return 0;
}

static int teardown(void **state) {
  data *d = *state;
  dpt_dataset_destroy(d->train);
  dpt_dataset_destroy(d->test);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp_reaches_accuracy),
      cmocka_unit_test(test_lenet_reaches_accuracy),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
