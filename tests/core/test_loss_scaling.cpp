// float16 training's dynamic loss scaling (parallel/loss_scaler.hpp, the trainer's use of it): GradScaler's
// policy (x2 after growth_interval finite windows, x0.5 and a skipped window on overflow, never below 1);
// a window whose float16 products overflow leaves parameters and optimizer state bitwise untouched and is
// no error under either non-finite policy; the scale rescues gradients that float16 would flush to zero
// (the same step without it loses them); the scaler's state is checkpointed and a run resumed from a
// checkpoint continues bit for bit; a checkpoint of another precision loads (the scaler starts afresh).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_format.hpp"
#include "parallel/loss_scaler.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

namespace fs = std::filesystem;

constexpr size_t kIn = 12, kHidden = 16, kClasses = 5, kBatch = 16;

dpt::ModelSpec mlp() {
  dpt::ModelSpec m(dpt::Shape{kIn});
  m.add_dense(kHidden);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(kClasses);
  return m;
}

struct Options {
  dpt::DType precision = dpt::DType::kF16;
  double initial_scale = 65536;
  uint64_t growth_interval = 2000;
  size_t devices = 2;
  bool error_on_nonfinite = false;
  bool sgd = false;  // plain SGD, lr 1 (the update is minus the gradient); else AdamW
};

std::unique_ptr<dpt::Trainer> make_trainer(const Options &o) {
  dpt::TrainerConfig c;
  c.seed = 3;
  c.matmul_dtype = o.precision;
  c.loss_scaling.enabled = o.precision == dpt::DType::kF16;
  c.loss_scaling.initial_scale = o.initial_scale;
  c.loss_scaling.growth_interval = o.growth_interval;
  c.error_on_nonfinite = o.error_on_nonfinite;
  c.optimizer.kind = o.sgd ? dpt::OptimizerKind::kSgd : dpt::OptimizerKind::kAdamW;
  c.optimizer.learning_rate = o.sgd ? 1.0f : 1e-2f;
  return std::make_unique<dpt::Trainer>(std::make_shared<dpt::Context>(dpt::ContextConfig{o.devices, 0}),
                                        mlp(), c);
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch batch(uint64_t seed, float scale = 1.0f) {
  dpt_test::TestRng rng(seed);
  Batch b{rng.vector(kBatch * kIn, -scale, scale), std::vector<int32_t>(kBatch)};
  for (auto &label : b.y) label = int32_t(rng.below(kClasses));
  return b;
}

std::vector<float> parameters(const dpt::Trainer &t) {
  std::vector<float> p(t.parameter_count());
  t.get_parameters(0, p.data());
  return p;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void test_scaler_policy(void **) {
  dpt::LossScaler s(dpt::LossScaling{true, 1024, 3});
  assert_true(s.scale() == 1024);
  s.finite_window();
  s.finite_window();
  assert_true(s.scale() == 1024);
  s.finite_window();  // the third in a row
  assert_true(s.scale() == 2048 && s.growth_tracker() == 0);
  s.finite_window();
  s.overflowed();  // halves, and the count starts again
  assert_true(s.scale() == 1024 && s.growth_tracker() == 0);
  for (int i = 0; i < 20; ++i) s.overflowed();
  assert_true(s.scale() == 1);  // never below 1
  dpt::LossScaler fixed(dpt::LossScaling{true, 8, 0});
  for (int i = 0; i < 100; ++i) fixed.finite_window();
  assert_true(fixed.scale() == 8);  // growth_interval 0: never grows
  assert_true(dpt::LossScaler(dpt::LossScaling{false, 65536, 2000}).scale() == 1);
  for (double bad : {3.0, 0.5, 0.0, -4.0, std::ldexp(1.0, 65), double(NAN), double(INFINITY)})
    dpt_test::expect_error(
        [&] {
          dpt::validate(dpt::LossScaling{false, bad, 2000});
        },
        DPT_ERROR_INVALID_ARGUMENT, "a bad initial loss scale");
  dpt::validate(dpt::LossScaling{true, std::ldexp(1.0, 64), 1});
}

// An initial scale of 2^40 makes the scaled loss gradient (2^40 / 2^4 per target of a batch of 16) far
// larger than float16's 65504: the products' inputs round to infinity, the gradient is not finite, the
// window is skipped and the scale halved, step after step, until it fits. Parameters and AdamW's state are
// untouched by every skipped window; the non-finite policy "error" does not apply to it.
void test_overflow_skips_and_halves(void **) {
  Options o;
  o.initial_scale = std::ldexp(1.0, 40);
  o.error_on_nonfinite = true;
  auto t = make_trainer(o);
  const std::vector<float> start = parameters(*t);
  const dpt::TrainerState before = t->save_state();
  size_t skipped = 0;
  dpt::StepStats s;
  for (uint64_t i = 0; i < 64; ++i) {
    const Batch b = batch(10 + i);
    s = t->step(b.x.data(), b.y.data(), kBatch);
    if (s.applied) break;
    ++skipped;
    assert_true(s.skipped_overflow && !s.skipped_nonfinite);
    assert_int_equal(s.overflow_steps, skipped);
    assert_int_equal(s.optimizer_steps, 0);
    assert_true(s.loss_scale == std::ldexp(1.0, 40 - int(skipped)));
    assert_true(std::isfinite(s.loss));  // the forward pass was fine
    assert_true(same_bits(parameters(*t), start));
    assert_true(same_bits(t->save_state().optimizer_state, before.optimizer_state));
  }
  std::printf("2^40: %zu windows skipped, then applied at scale 2^%d\n", skipped,
              int(std::log2(s.loss_scale)));
  assert_true(s.applied && !s.skipped_overflow);
  // The per-target gradient is below 1 in magnitude (softmax minus one-hot) and reaches the first layer
  // through weights below 1 here: times 2^20 / 16 it rounds to at most 65504 (unless a probability is
  // within 2^-12 of a label's 1), so it fits at 2^20 at the latest; at 2^24 (x 2^20) it cannot.
  assert_true(skipped >= 17 && s.loss_scale <= std::ldexp(1.0, 20));
  assert_int_equal(t->overflow_steps(), skipped);
  assert_int_equal(t->nonfinite_steps(), 0);
  assert_false(same_bits(parameters(*t), start));
}

void test_growth(void **) {
  Options o;
  o.initial_scale = 1024;
  o.growth_interval = 3;
  auto t = make_trainer(o);
  const double want[] = {1024, 1024, 2048, 2048, 2048, 4096, 4096};
  for (uint64_t i = 0; i < 7; ++i) {
    const Batch b = batch(50 + i);
    const dpt::StepStats s = t->step(b.x.data(), b.y.data(), kBatch);
    assert_true(s.applied);
    if (s.loss_scale != want[i]) fail_msg("step %d: loss scale %g, want %g", int(i), s.loss_scale, want[i]);
  }
}

// The first layer's update after one SGD step (lr 1: minus the gradient), relative to float32's, on a
// nearly trained model: every label is class 0 and its logit leads by about 14, so the loss gradient per
// target is about e^-14 = 8e-7. With the scale (65536 / 16 per target) float16 holds the gradients
// flowing back as normal numbers: the update is float16's rounding away from float32's. Without (scale 1:
// the loss gradient / 16, as PyTorch's mean loss without a GradScaler) they are around float16's smallest
// subnormal, 2^-24 = 6e-8, and most of the update is lost.
void test_scaling_rescues_small_gradients(void **) {
  const auto first_layer_update = [](dpt::DType precision, double scale) {
    Options o;
    o.precision = precision;
    o.initial_scale = scale;
    o.sgd = true;
    auto t = make_trainer(o);
    std::vector<float> p = parameters(*t);
    p[kIn * kHidden + kHidden + kHidden * kClasses] = 14.0f;  // the bias of class 0's logit
    t->set_parameters(p.data());
    Batch b = batch(7);
    std::fill(b.y.begin(), b.y.end(), 0);
    const dpt::StepStats s = t->step(b.x.data(), b.y.data(), kBatch);
    assert_true(s.applied);
    std::vector<float> after = parameters(*t);
    std::vector<double> update(kIn * kHidden);
    for (size_t i = 0; i < update.size(); ++i) update[i] = double(after[i]) - p[i];
    return update;
  };
  const auto relative = [](const std::vector<double> &a, const std::vector<double> &b) {
    double d = 0, n = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), n += b[i] * b[i];
    return std::sqrt(d / n);
  };
  const std::vector<double> reference = first_layer_update(dpt::DType::kF32, 65536);
  const std::vector<double> scaled = first_layer_update(dpt::DType::kF16, 65536);
  const std::vector<double> unscaled = first_layer_update(dpt::DType::kF16, 1);
  const double e_scaled = relative(scaled, reference), e_unscaled = relative(unscaled, reference);
  std::printf("first layer's update vs float32: with loss scaling %.2e, without %.2e\n", e_scaled,
              e_unscaled);
  assert_true(e_scaled < 0.05);
  assert_true(e_unscaled > 0.3);
}

std::string temp_path() {
  char pattern[] = "/tmp/dptrain-scaler-XXXXXX";
  const char *dir = mkdtemp(pattern);
  if (dir == nullptr) fail_msg("mkdtemp failed");
  return std::string(dir) + "/run.ckpt";
}

void train(dpt::Trainer &t, uint64_t first, uint64_t count) {
  for (uint64_t i = first; i < first + count; ++i) {
    const Batch b = batch(100 + i);
    t.step(b.x.data(), b.y.data(), kBatch);
  }
}

// 2^28 overflows for the first steps; growth every 4 windows. A checkpoint after 8 steps, resumed by a
// new trainer: the next 8 steps give the same bits and the same scale as the run that went on.
void test_checkpoint_resumes_bitwise(void **) {
  const std::string path = temp_path();
  Options o;
  o.initial_scale = std::ldexp(1.0, 28);
  o.growth_interval = 4;
  auto run = make_trainer(o);
  train(*run, 0, 8);
  assert_true(run->overflow_steps() > 0);
  dpt::save_checkpoint(*run, path);
  const double saved_scale = run->loss_scaler().scale();
  const uint64_t saved_tracker = run->loss_scaler().growth_tracker();
  train(*run, 8, 8);
  auto resumed = make_trainer(o);
  dpt::load_checkpoint(*resumed, path);
  assert_true(resumed->loss_scaler().scale() == saved_scale);
  assert_int_equal(resumed->loss_scaler().growth_tracker(), saved_tracker);
  train(*resumed, 8, 8);
  assert_true(same_bits(parameters(*resumed), parameters(*run)));
  assert_true(resumed->loss_scaler().scale() == run->loss_scaler().scale());
  std::printf("resumed at scale %g (tracker %d): 8 more steps bitwise equal, scale %g\n", saved_scale,
              int(saved_tracker), run->loss_scaler().scale());

  // Another precision's checkpoint: a float16 trainer starts its scaler afresh; a float32 trainer ignores
  // a saved scaler.
  Options fp32 = o;
  fp32.precision = dpt::DType::kF32;
  auto plain = make_trainer(fp32);
  dpt::load_checkpoint(*plain, path);
  assert_true(plain->loss_scaler().scale() == 1);
  dpt::save_checkpoint(*plain, path);
  auto fresh = make_trainer(o);
  dpt::load_checkpoint(*fresh, path);
  assert_true(fresh->loss_scaler().scale() == o.initial_scale);

  // A saved scale that is not a power of two is refused, naming the tensor.
  dpt::save_checkpoint(*run, path);
  std::vector<dpt::Tensor> tensors =
      dpt::decode_checkpoint(dpt::file_io::read_file(path, uint64_t(1) << 30), path);
  for (dpt::Tensor &t : tensors)
    if (t.name == "trainer.loss_scaler") {
      const double three = 3;
      std::memcpy(t.bytes.data(), &three, sizeof three);
    }
  dpt::file_io::write_file_atomic(path, dpt::encode_checkpoint(tensors));
  const std::string message =
      dpt_test::expect_error([&] { dpt::load_checkpoint(*fresh, path); }, DPT_ERROR_FORMAT, "scale 3");
  assert_true(message.find("trainer.loss_scaler") != std::string::npos);
  fs::remove_all(fs::path(path).parent_path());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scaler_policy),
      cmocka_unit_test(test_overflow_skips_and_halves),
      cmocka_unit_test(test_growth),
      cmocka_unit_test(test_scaling_rescues_small_gradients),
      cmocka_unit_test(test_checkpoint_resumes_bitwise),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
