// Optimizer tests of the C++ core: dpt::apply_update against straightforward double-precision transcriptions
// of PyTorch's documented algorithms (torch.optim.SGD, torch.optim.AdamW), the learning-rate schedules
// against the formulas in src/optim/optimizer.hpp and capi/include/dptrain/trainer.h, validate(), the state
// sizes and l2_norm.
//
// Tolerances: the library updates fp32 parameters in fp32; the references run in double from the same fp32
// inputs. Over 10 steps each parameter picks up a few fp32 roundings per step (~6e-8 relative each), so the
// trajectories agree to ~1e-6 of the parameter scale; they are compared to 1e-5 relative to max(0.1, |ref|)
// (the floor keeps a parameter passing through zero from turning ulp-level noise into a large relative
// error). A wrong formula (a missing bias correction, coupled instead of decoupled decay, the gradient scale
// applied to the decay term, Nesterov's look-ahead missing) changes the updates, which are ~0.1 per step
// here, by 1e-3 or more. Schedules are computed in double on both sides and compared to 1e-12 relative.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "optim/optimizer.hpp"

#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

// cmocka.h 1.1.5 has no extern "C" guards of its own.
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

using dpt::OptimizerConfig;
using dpt::OptimizerKind;
using dpt::ScheduleKind;
using dpt_test::Comparison;
using dpt_test::TestRng;

constexpr size_t kCount = 50;
constexpr uint64_t kSteps = 10;
constexpr float kGradScale = 1.0f / 32.0f;
constexpr double kUpdateTolerance = 1e-5;
constexpr double kScheduleTolerance = 1e-12;

std::string at(const char *what, uint64_t t, size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "] after step " + std::to_string(t);
}

// ---------------------------------------------------------------------------------------------------------
// References, written from the PyTorch documentation (torch.optim.SGD / torch.optim.AdamW pseudo-code).

struct Reference {
  std::vector<double> p, buf, m, v;
  uint64_t steps = 0;
};

// torch.optim.SGD, dampening 0:
//   g = g + weight_decay * p
//   if momentum: b = g on the first step, else b = momentum * b + g;  g = g + momentum * b if nesterov else b
//   p = p - lr * g
void sgd_reference(const OptimizerConfig &c, double lr, const std::vector<double> &grad, Reference &r) {
  const double mu = c.momentum, wd = c.weight_decay;
  for (size_t i = 0; i < r.p.size(); ++i) {
    double g = grad[i] + wd * r.p[i];
    if (mu != 0.0) {
      r.buf[i] = r.steps == 0 ? g : mu * r.buf[i] + g;
      g = c.nesterov ? g + mu * r.buf[i] : r.buf[i];
    }
    r.p[i] -= lr * g;
  }
  ++r.steps;
}

// torch.optim.AdamW (amsgrad off, maximize off):
//   p = p - lr * weight_decay * p
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   m_hat = m / (1 - b1^t);  v_hat = v / (1 - b2^t)         (t = 1, 2, ...)
//   p = p - lr * m_hat / (sqrt(v_hat) + eps)
void adamw_reference(const OptimizerConfig &c, double lr, const std::vector<double> &grad, Reference &r) {
  const double b1 = c.beta1, b2 = c.beta2, eps = c.epsilon, wd = c.weight_decay;
  ++r.steps;
  const double t = double(r.steps);
  for (size_t i = 0; i < r.p.size(); ++i) {
    r.p[i] -= lr * wd * r.p[i];
    r.m[i] = b1 * r.m[i] + (1.0 - b1) * grad[i];
    r.v[i] = b2 * r.v[i] + (1.0 - b2) * grad[i] * grad[i];
    const double m_hat = r.m[i] / (1.0 - std::pow(b1, t));
    const double v_hat = r.v[i] / (1.0 - std::pow(b2, t));
    r.p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

// Runs kSteps updates of the library and the reference side by side, with random raw gradients (the
// all-reduced sums) of magnitude up to grad_range, the gradient used being kGradScale * raw, and a
// learning rate that changes every step; compares the parameters after every step.
void check_trajectory(const OptimizerConfig &c, const char *name, float grad_range) {
  dpt::validate(c);
  TestRng rng(std::hash<std::string>{}(name));
  std::vector<float> params = rng.vector(kCount, -1.0f, 1.0f);
  std::vector<float> state(kCount * dpt::state_floats_per_parameter(c), 0.0f);
  Reference r;
  r.p.assign(params.begin(), params.end());
  r.buf.assign(kCount, 0.0);
  r.m.assign(kCount, 0.0);
  r.v.assign(kCount, 0.0);

  const std::vector<double> initial = r.p;
  Comparison cmp(std::string(name) + " parameters", kUpdateTolerance, 0.1);
  for (uint64_t t = 0; t < kSteps; ++t) {
    const std::vector<float> grads = rng.vector(kCount, -grad_range, grad_range);
    const float lr = float(c.learning_rate * (1.0 + 0.1 * double(t)));
    std::vector<double> g(kCount);
    for (size_t i = 0; i < kCount; ++i) g[i] = double(kGradScale) * double(grads[i]);
    if (c.kind == OptimizerKind::kSgd) {
      sgd_reference(c, lr, g, r);
    } else {
      adamw_reference(c, lr, g, r);
    }
    dpt::apply_update(c, t, lr, kGradScale, params.data(), grads.data(),
                      state.empty() ? nullptr : state.data(), kCount);
    for (size_t i = 0; i < kCount; ++i) cmp.add(params[i], r.p[i], at("p", t, i));
  }
  cmp.finish();
  // The check is only as strong as the updates are large: the parameters must have moved by O(0.1..1).
  double moved = 0.0;
  for (size_t i = 0; i < kCount; ++i) moved = std::fmax(moved, std::fabs(r.p[i] - initial[i]));
  print_message("%-44s largest total change of a parameter %.3g\n", name, moved);
  assert_true(moved > 0.1);

  if (c.kind == OptimizerKind::kSgd && c.momentum > 0.0f) {
    // The state of SGD with momentum is the momentum buffer (one float per parameter).
    Comparison cb(std::string(name) + " momentum buffer", kUpdateTolerance, 0.1);
    for (size_t i = 0; i < kCount; ++i) cb.add(state[i], r.buf[i], at("buf", kSteps - 1, i));
    cb.finish();
  }
}

OptimizerConfig sgd(float momentum, bool nesterov, float weight_decay) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kSgd;
  c.learning_rate = 0.1f;
  c.momentum = momentum;
  c.nesterov = nesterov;
  c.weight_decay = weight_decay;
  return c;
}

OptimizerConfig adamw(float weight_decay) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdamW;
  c.learning_rate = 0.05f;
  c.weight_decay = weight_decay;
  return c;
}

void test_sgd_plain(void **) {
  check_trajectory(sgd(0.0f, false, 0.0f), "sgd", 32.0f);
}
void test_sgd_weight_decay(void **) {
  check_trajectory(sgd(0.0f, false, 0.2f), "sgd wd 0.2", 32.0f);
}
void test_sgd_momentum(void **) {
  check_trajectory(sgd(0.9f, false, 0.0f), "sgd momentum 0.9", 32.0f);
}
void test_sgd_momentum_weight_decay(void **) {
  check_trajectory(sgd(0.9f, false, 0.2f), "sgd momentum 0.9 wd 0.2", 32.0f);
}
void test_sgd_nesterov(void **) {
  check_trajectory(sgd(0.9f, true, 0.0f), "sgd nesterov 0.9", 32.0f);
}
void test_sgd_nesterov_weight_decay(void **) {
  check_trajectory(sgd(0.8f, true, 0.2f), "sgd nesterov 0.8 wd 0.2", 32.0f);
}
void test_adamw(void **) {
  check_trajectory(adamw(0.0f), "adamw", 32.0f);
}
void test_adamw_weight_decay(void **) {
  check_trajectory(adamw(0.5f), "adamw wd 0.5", 32.0f);
}
// Non-default betas (a swap shows), and an epsilon comparable to sqrt(v_hat) (gradients ~1e-3 after
// scaling), so that where epsilon enters (outside the square root, after bias correction) matters.
void test_adamw_betas_epsilon(void **) {
  OptimizerConfig c = adamw(0.1f);
  c.beta1 = 0.8f;
  c.beta2 = 0.95f;
  c.epsilon = 1e-3f;
  check_trajectory(c, "adamw b1 0.8 b2 0.95 eps 1e-3 wd 0.1", 0.064f);
}

// |got - want| <= tolerance * max(1, |want|), in double (CMocka's assert_float_equal rounds to float).
void assert_near(double got, double want, double tolerance, const char *what) {
  if (!(std::fabs(got - want) <= tolerance * std::fmax(1.0, std::fabs(want))))
    fail_msg("%s: got %.17g, expected %.17g (tolerance %.3g)", what, got, want, tolerance);
}

// The first update of each optimizer has a closed form that does not depend on the reference code above.
void test_first_step_closed_form(void **) {
  const float p0 = 0.5f, raw = 64.0f;  // scaled gradient 2
  {
    OptimizerConfig c = sgd(0.9f, true, 0.1f);  // d = 2 + 0.05 = 2.05; buf = d; step = d + 0.9 d = 3.895
    float p = p0, state = 0.0f;
    dpt::apply_update(c, 0, 0.1f, kGradScale, &p, &raw, &state, 1);
    assert_near(p, 0.5 - 0.1 * 3.895, 1e-6, "nesterov first step: p");
    assert_near(state, 2.05, 1e-6, "nesterov first step: buffer");
  }
  {
    // AdamW, step 1: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps) = lr * sign(g) (eps tiny),
    // after the decoupled decay p *= 1 - lr * wd.
    OptimizerConfig c = adamw(0.5f);
    float p = p0;
    float state[2] = {0.0f, 0.0f};
    dpt::apply_update(c, 0, 0.1f, kGradScale, &p, &raw, state, 1);
    assert_near(p, 0.5 * (1.0 - 0.1 * 0.5) - 0.1, 1e-6, "adamw first step");
  }
  {
    // AdamW at a later step index t with fresh state: bias corrections use t + 1.
    // m = 0.1 g, v = 0.001 g^2; m_hat = 0.1 g / (1 - 0.9^4), v_hat = 0.001 g^2 / (1 - 0.999^4).
    OptimizerConfig c = adamw(0.0f);
    float p = p0;
    float state[2] = {0.0f, 0.0f};
    dpt::apply_update(c, 3, 0.1f, kGradScale, &p, &raw, state, 1);
    const double m_hat = 0.1 * 2.0 / (1.0 - std::pow(0.9, 4.0));
    const double v_hat = 0.001 * 4.0 / (1.0 - std::pow(0.999, 4.0));
    assert_near(p, 0.5 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-6, "adamw step index 3");
  }
}

// ---------------------------------------------------------------------------------------------------------
// Schedules

// The documented formulas, in double (the learning rate itself is the float of the configuration).
double schedule_reference(const OptimizerConfig &c, uint64_t t) {
  const double lr = c.learning_rate;
  if (t < c.warmup_steps) return double(t + 1) / double(c.warmup_steps) * lr;
  const double u = double(t - c.warmup_steps);
  switch (c.schedule) {
    case ScheduleKind::kStep:
      return lr * std::pow(double(c.gamma), std::floor(u / double(c.step_size)));
    case ScheduleKind::kCosine: {
      const double span = double(c.total_steps - c.warmup_steps);
      const double x = std::fmin(u, span);  // constant at min_lr once total_steps is reached
      const double pi = std::acos(-1.0);
      return c.min_learning_rate + (lr - c.min_learning_rate) * (1.0 + std::cos(pi * x / span)) / 2.0;
    }
    default:
      return lr;
  }
}

void check_schedule(const OptimizerConfig &c, const char *name, uint64_t last) {
  dpt::validate(c);
  Comparison cmp(name, kScheduleTolerance, 1e-3);
  for (uint64_t t = 0; t <= last; ++t)
    cmp.add(dpt::learning_rate_at(c, t), schedule_reference(c, t), "t = " + std::to_string(t));
  cmp.finish();
}

void assert_lr(const OptimizerConfig &c, uint64_t t, double want) {
  const double got = dpt::learning_rate_at(c, t);
  if (!(std::fabs(got - want) <= kScheduleTolerance * std::fabs(want)))
    fail_msg("learning_rate_at(t = %llu) = %.17g, expected %.17g", (unsigned long long)t, got, want);
}

void test_schedule_constant(void **) {
  OptimizerConfig c;
  c.learning_rate = 0.05f;
  for (uint64_t t : {uint64_t(0), uint64_t(1), uint64_t(7), uint64_t(1000), uint64_t(1) << 40})
    assert_lr(c, t, double(0.05f));
  check_schedule(c, "constant schedule", 50);
}

void test_schedule_warmup(void **) {
  for (ScheduleKind kind : {ScheduleKind::kConstant, ScheduleKind::kStep, ScheduleKind::kCosine}) {
    OptimizerConfig c;
    c.learning_rate = 0.3f;
    c.schedule = kind;
    c.warmup_steps = 5;
    c.step_size = 2;
    c.gamma = 0.5f;
    c.total_steps = 25;
    c.min_learning_rate = 0.01f;
    dpt::validate(c);
    // Linear from lr / warmup (t = 0) to lr (t = warmup - 1), then the schedule starts at lr.
    for (uint64_t t = 0; t < 5; ++t) assert_lr(c, t, double(t + 1) / 5.0 * double(0.3f));
    assert_lr(c, 5, double(0.3f));
  }
}

void test_schedule_step(void **) {
  OptimizerConfig c;
  c.learning_rate = 0.2f;
  c.schedule = ScheduleKind::kStep;
  c.warmup_steps = 3;
  c.step_size = 4;
  c.gamma = 0.5f;
  assert_lr(c, 3, 0.2f);     // (3 - 3) / 4 = 0
  assert_lr(c, 6, 0.2f);     // 3 / 4 -> 0
  assert_lr(c, 7, 0.1f);     // 4 / 4 -> 1 (halving a float is exact: 0.2f * 0.5 == 0.1f)
  assert_lr(c, 11, 0.05f);   // 8 / 4 -> 2
  assert_lr(c, 13, 0.05f);   // 10 / 4 -> 2
  assert_lr(c, 15, 0.025f);  // 12 / 4 -> 3
  check_schedule(c, "step schedule", 60);
  c.warmup_steps = 0;
  c.step_size = 1;
  c.gamma = 0.9f;
  check_schedule(c, "step schedule, step_size 1, no warm-up", 30);
}

void test_schedule_cosine(void **) {
  OptimizerConfig c;
  c.learning_rate = 0.1f;
  c.schedule = ScheduleKind::kCosine;
  c.warmup_steps = 4;
  c.total_steps = 20;
  c.min_learning_rate = 0.01f;
  const double lr = double(0.1f), min_lr = double(0.01f);
  assert_lr(c, 3, lr);                  // end of warm-up
  assert_lr(c, 4, lr);                  // right after warm-up: the full rate
  assert_lr(c, 12, (lr + min_lr) / 2);  // half way
  assert_lr(c, 20, min_lr);             // total_steps: the minimum
  for (uint64_t t : {uint64_t(21), uint64_t(100), uint64_t(1) << 40}) assert_lr(c, t, min_lr);  // and stays
  for (uint64_t t = 5; t <= 20; ++t)
    if (!(dpt::learning_rate_at(c, t) < dpt::learning_rate_at(c, t - 1)))
      fail_msg("cosine schedule not decreasing at t = %llu", (unsigned long long)t);
  check_schedule(c, "cosine schedule", 40);

  c.warmup_steps = 0;
  c.total_steps = 7;
  c.min_learning_rate = 0.0f;
  assert_lr(c, 0, lr);
  const double got = dpt::learning_rate_at(c, 7);
  if (got != 0.0 && !(std::fabs(got) < 1e-18)) fail_msg("cosine to 0 ends at %.17g", got);
  check_schedule(c, "cosine schedule, no warm-up, to 0", 20);
}

// ---------------------------------------------------------------------------------------------------------
// validate(), state sizes, l2_norm

struct Invalid {
  const char *what;
  const char *field;  // the message must name it
  OptimizerConfig config;
};

void test_validate(void **) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const OptimizerConfig base_sgd;
  OptimizerConfig base_adamw;
  base_adamw.kind = OptimizerKind::kAdamW;
  OptimizerConfig base_step;
  base_step.schedule = ScheduleKind::kStep;
  base_step.step_size = 10;
  OptimizerConfig base_cosine;
  base_cosine.schedule = ScheduleKind::kCosine;
  base_cosine.warmup_steps = 10;
  base_cosine.total_steps = 100;

  // Valid settings, including the boundaries.
  std::vector<OptimizerConfig> valid = {base_sgd, base_adamw, base_step, base_cosine};
  valid.push_back(sgd(0.9f, true, 1e-4f));
  valid.push_back(sgd(0.0f, false, 0.0f));
  valid.back().learning_rate = 0.0f;  // lr 0 is allowed (>= 0)
  valid.push_back(base_cosine);
  valid.back().min_learning_rate = valid.back().learning_rate;  // min_lr == lr
  valid.push_back(base_sgd);
  valid.back().clip_norm = 1.0f;
  valid.push_back(base_cosine);
  valid.back().total_steps = 11;  // warmup + 1
  for (size_t i = 0; i < valid.size(); ++i) {
    try {
      dpt::validate(valid[i]);
    } catch (const std::exception &e) {
      fail_msg("valid configuration %zu rejected: %s", i, e.what());
    }
  }

  std::vector<Invalid> invalid;
  auto add = [&](const char *what, const char *field, OptimizerConfig c) {
    invalid.push_back({what, field, c});
  };
  OptimizerConfig c;
  c = base_sgd, c.momentum = 1.0f, add("momentum 1.0", "momentum", c);
  c = base_sgd, c.momentum = 1.5f, add("momentum 1.5", "momentum", c);
  c = base_sgd, c.momentum = -0.1f, add("momentum -0.1", "momentum", c);
  c = base_sgd, c.momentum = nan, add("momentum NaN", "momentum", c);
  c = base_sgd, c.learning_rate = -0.1f, add("negative lr", "learning_rate", c);
  c = base_sgd, c.learning_rate = nan, add("NaN lr", "learning_rate", c);
  c = base_sgd, c.learning_rate = inf, add("infinite lr", "learning_rate", c);
  c = base_adamw, c.learning_rate = nan, add("AdamW NaN lr", "learning_rate", c);
  c = base_sgd, c.nesterov = true, add("nesterov without momentum", "nesterov", c);
  c = base_sgd, c.weight_decay = -0.01f, add("negative weight decay", "weight_decay", c);
  c = base_adamw, c.weight_decay = nan, add("AdamW NaN weight decay", "weight_decay", c);
  c = base_adamw, c.beta1 = 1.0f, add("beta1 = 1", "beta1", c);
  c = base_adamw, c.beta1 = -0.1f, add("beta1 < 0", "beta1", c);
  c = base_adamw, c.beta2 = 1.0f, add("beta2 = 1", "beta2", c);
  c = base_adamw, c.beta2 = nan, add("beta2 NaN", "beta2", c);
  c = base_adamw, c.epsilon = 0.0f, add("epsilon 0", "epsilon", c);
  c = base_adamw, c.epsilon = -1e-8f, add("negative epsilon", "epsilon", c);
  c = base_adamw, c.epsilon = nan, add("NaN epsilon", "epsilon", c);
  c = base_step, c.step_size = 0, add("step schedule, step_size 0", "step_size", c);
  c = base_step, c.gamma = 0.0f, add("step schedule, gamma 0", "gamma", c);
  c = base_step, c.gamma = nan, add("step schedule, gamma NaN", "gamma", c);
  c = base_cosine, c.total_steps = 10, add("cosine, total_steps == warmup_steps", "total_steps", c);
  c = base_cosine, c.total_steps = 5, add("cosine, total_steps < warmup_steps", "total_steps", c);
  c = base_cosine, c.warmup_steps = 0, c.total_steps = 0, add("cosine, total_steps 0", "total_steps", c);
  c = base_cosine, c.min_learning_rate = 0.2f, add("cosine, min_lr > lr", "min_learning_rate", c);
  c = base_cosine, c.min_learning_rate = -0.01f, add("cosine, negative min_lr", "min_learning_rate", c);
  c = base_sgd, c.clip_norm = -1.0f, add("negative clip_norm", "clip_norm", c);
  c = base_sgd, c.clip_norm = nan, add("NaN clip_norm", "clip_norm", c);
  c = base_sgd, c.kind = OptimizerKind(7), add("unknown optimizer kind", "optimizer", c);
  c = base_sgd, c.schedule = ScheduleKind(9), add("unknown schedule", "schedule", c);

  for (const Invalid &bad : invalid) {
    const std::string message =
        dpt_test::expect_error([&] { dpt::validate(bad.config); }, DPT_ERROR_INVALID_ARGUMENT, bad.what);
    if (message.find(bad.field) == std::string::npos)
      fail_msg("%s: message '%s' does not name '%s'", bad.what, message.c_str(), bad.field);
  }
  print_message("validate: %zu valid and %zu invalid configurations checked\n", valid.size(), invalid.size());
}

void test_state_floats(void **) {
  assert_int_equal(dpt::state_floats_per_parameter(sgd(0.0f, false, 0.0f)), 0);
  assert_int_equal(dpt::state_floats_per_parameter(sgd(0.0f, false, 0.5f)), 0);
  assert_int_equal(dpt::state_floats_per_parameter(sgd(0.9f, false, 0.0f)), 1);
  assert_int_equal(dpt::state_floats_per_parameter(sgd(0.5f, true, 0.0f)), 1);
  assert_int_equal(dpt::state_floats_per_parameter(adamw(0.0f)), 2);
  assert_int_equal(dpt::state_floats_per_parameter(adamw(0.1f)), 2);
}

void test_l2_norm(void **) {
  TestRng rng(9);
  // Documented: in double; blocks of kNormBlock, in each element i into partial sum i % 8 in order and the
  // eight added in order; the block sums added in block order.
  const size_t b = dpt::kNormBlock;
  const std::vector<float> g = rng.vector(3 * b + 1001, -3.0f, 3.0f);
  std::vector<double> blocks;
  for (size_t at = 0; at < g.size(); at += b) {
    double lane[8] = {}, block = 0.0;
    for (size_t i = at; i < std::min(g.size(), at + b); ++i)
      lane[(i - at) % 8] += double(g[i]) * double(g[i]);
    for (double l : lane) block += l;
    blocks.push_back(block);
  }
  double sum = 0.0;
  for (double block : blocks) sum += block;
  assert_true(dpt::l2_norm(g.data(), g.size()) == std::sqrt(sum));
  assert_true(dpt::l2_norm(g.data(), 1001) != 0.0);
  // The block sums of ranges cut at blocks are those blocks' sums; together they give the norm.
  std::vector<double> parts(blocks.size(), -1.0);
  dpt::l2_block_sums(g.data(), 0, b, parts.data());
  dpt::l2_block_sums(g.data() + b, b, g.size(), parts.data() + 1);
  for (size_t i = 0; i < blocks.size(); ++i) assert_true(parts[i] == blocks[i]);
  assert_int_equal(dpt::norm_blocks(g.size()), blocks.size());
  assert_true(dpt::l2_norm_of_blocks(parts.data(), parts.size()) == dpt::l2_norm(g.data(), g.size()));
  assert_true(dpt::l2_norm(g.data(), 0) == 0.0);
  const float single = -2.5f;
  assert_true(dpt::l2_norm(&single, 1) == 2.5);
  // Exactly representable values whose squares overflow (2^132 > FLT_MAX) or underflow (2^-200) in fp32 but
  // not in double: the norm is exactly 5 * 2^66 and 5 * 2^-100.
  const float big[2] = {std::ldexp(3.0f, 66), std::ldexp(4.0f, 66)};
  assert_true(dpt::l2_norm(big, 2) == std::ldexp(5.0, 66));
  const float tiny[2] = {std::ldexp(3.0f, -100), std::ldexp(4.0f, -100)};
  assert_true(dpt::l2_norm(tiny, 2) == std::ldexp(5.0, -100));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_plain),
      cmocka_unit_test(test_sgd_weight_decay),
      cmocka_unit_test(test_sgd_momentum),
      cmocka_unit_test(test_sgd_momentum_weight_decay),
      cmocka_unit_test(test_sgd_nesterov),
      cmocka_unit_test(test_sgd_nesterov_weight_decay),
      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_adamw_weight_decay),
      cmocka_unit_test(test_adamw_betas_epsilon),
      cmocka_unit_test(test_first_step_closed_form),
      cmocka_unit_test(test_schedule_constant),
      cmocka_unit_test(test_schedule_warmup),
      cmocka_unit_test(test_schedule_step),
      cmocka_unit_test(test_schedule_cosine),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_state_floats),
      cmocka_unit_test(test_l2_norm),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
