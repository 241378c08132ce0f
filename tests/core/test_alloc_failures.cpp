// Allocation failures: a whole API sequence (context, model, dataset, trainer, steps, fit, save, load,
// evaluate, predict, destroy) is run with the n-th allocation failing, for n = 1, 2, ... until the sequence
// runs through. Heap allocations are counted by replacing operator new in this binary, device memory by
// the arena's seam. Every failure must surface as DPT_ERROR_OUT_OF_MEMORY from the call that hit it, never
// as a crash, an abort or another status; under ASan/LSan nothing may leak.
#include <dptrain/dptrain.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "core/fault_injection.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

void *operator new(size_t size) {
  if (dpt::fault_injection::allocation_should_fail()) throw std::bad_alloc();
  if (void *p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void *operator new[](size_t size) {
  return operator new(size);
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void *p) noexcept {
  std::free(p);
}
void operator delete[](void *p, size_t) noexcept {
  std::free(p);
}

namespace {

// Filled before any failure is armed: the harness itself must not allocate while one is.
char checkpoint_path[64];
char safetensors_path[64];

// Runs the sequence; returns DPT_OK, or the status of the first failing call (and what failed in `where`).
dpt_status run_sequence(const char **where) {
  dpt_context *context = nullptr;
  dpt_model *model = nullptr;
  dpt_dataset *data = nullptr;
  dpt_trainer *trainer = nullptr;
  dpt_status s = DPT_OK;
  static float x[24 * 16];
  static int32_t y[24];
  for (size_t i = 0; i < 24 * 16; ++i) x[i] = float(i % 7) / 7.0f;
  for (size_t i = 0; i < 24; ++i) y[i] = int32_t(i % 3);
  float logits[4 * 3];
#define STEP(call)                   \
  if (s == DPT_OK) {                 \
    s = (call);                      \
    if (s != DPT_OK) *where = #call; \
  }
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = 2;
  STEP(dpt_context_create(&context, &co));
  STEP(dpt_model_create(&model, 1, 4, 4));
  STEP(dpt_model_add_conv2d(model, 2, 3, 1, 1));
  STEP(dpt_model_add_activation(model, DPT_ACTIVATION_RELU));
  STEP(dpt_model_add_dropout(model, 0.2f));
  STEP(dpt_model_add_dense(model, 3));
  STEP(dpt_dataset_create(&data, x, 24 * 16, y, 24, 1, 4, 4, 3));
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  STEP(dpt_trainer_create(&trainer, context, model, nullptr, &oo));
  STEP(dpt_trainer_step(trainer, x, 8 * 16, y, 8, nullptr));
  dpt_fit_options fo;
  dpt_fit_options_init(&fo);
  fo.batch_size = 10;
  STEP(dpt_trainer_fit(trainer, data, data, &fo, nullptr));
  STEP(dpt_trainer_save(trainer, checkpoint_path));
  STEP(dpt_trainer_load(trainer, checkpoint_path));
  STEP(dpt_trainer_save_safetensors(trainer, safetensors_path));
  STEP(dpt_trainer_load_safetensors(trainer, safetensors_path));
  dpt_eval_result e;
  e.struct_size = sizeof e;
  STEP(dpt_trainer_evaluate_dataset(trainer, data, 7, &e));
  STEP(dpt_trainer_predict(trainer, x, 4 * 16, 4, logits, 12));
  STEP(dpt_trainer_step(trainer, x, 24 * 16, y, 24, nullptr));  // a larger slice: new device buffers
#undef STEP
  dpt_trainer_destroy(trainer);
  dpt_dataset_destroy(data);
  dpt_model_destroy(model);
  dpt_context_destroy(context);
  return s;
}

void test_every_allocation_failure(void **) {
  std::snprintf(checkpoint_path, sizeof checkpoint_path, "/tmp/dptrain-alloc-%ld.ckpt", long(getpid()));
  std::snprintf(safetensors_path, sizeof safetensors_path, "/tmp/dptrain-alloc-%ld.safetensors",
                long(getpid()));
  size_t failures = 0;
  uint64_t n = 1;
  for (;; ++n) {
    dpt::fault_injection::fail_allocation_at(n);
    const char *where = "";
    const dpt_status s = run_sequence(&where);
    const bool fired = dpt::fault_injection::allocations_counted() >= n;
    dpt::fault_injection::fail_allocation_at(0);
    if (!fired) {
      if (s != DPT_OK)
        fail_msg("n=%llu: no injected failure, yet %s returned %d", (unsigned long long)n, where, s);
      break;  // the sequence ran through: every allocation has been failed once
    }
    if (s == DPT_OK) continue;  // the failed allocation was absorbed (e.g. inside a destructor path)
    if (s != DPT_ERROR_OUT_OF_MEMORY)
      fail_msg("n=%llu: %s returned %s (%s), expected out of memory", (unsigned long long)n, where,
               dpt_status_string(s), dpt_last_error_message());
    ++failures;
  }
  std::remove(checkpoint_path);
  std::remove(safetensors_path);
  std::printf(
      "# %llu allocations in the sequence; each failed once: %zu surfaced as DPT_ERROR_OUT_OF_MEMORY\n",
      (unsigned long long)(n - 1), failures);
  assert_true(n > 100);  // the seam counted the sequence's allocations
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {cmocka_unit_test(test_every_allocation_failure)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
