// Token models: the token_embedding op (forward a gather, backward a scatter-add, both exact), the
// token-level loss with ignored targets against a float64 reference and finite differences through a small
// language model, the divisor (the counted targets of the window), the refusals of bad tokens, labels and
// dtypes, and the weight-decay groups (matrices only) of the optimizer, on gpt-mini's layout.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "core/error.hpp"
#include "graph/network.hpp"
#include "graph/op_def.hpp"
#include "optim/parameter_groups.hpp"
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

using dpt::DType;
using dpt::ModelSpec;
using dpt::Shape;
using dpt_test::expect_error;
using dpt_test::TestRng;

constexpr size_t kV = 7, kT = 5, kC = 3;

dpt::OpAttrs ints(std::initializer_list<int64_t> values) {
  dpt::OpAttrs a;
  size_t i = 0;
  for (int64_t v : values) a.ints[i++] = v;
  return a;
}

// tokens [T] -> wte [T, C] -> linear [T, V]: the smallest language model.
ModelSpec tiny_lm() {
  ModelSpec m(Shape{kT}, DType::kI32);
  m.add(dpt::op_def("token_embedding"), {0}, ints({kV, kC}), "wte");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kV, 1}), "head");
  return m;
}

struct Batch {
  size_t n = 0;
  std::vector<int32_t> tokens, targets;
};

Batch batch(size_t n, uint64_t seed) {
  TestRng rng(seed);
  Batch b;
  b.n = n;
  for (size_t i = 0; i < n * kT; ++i) b.tokens.push_back(int32_t(rng.below(kV)));
  for (size_t i = 0; i < n * kT; ++i) b.targets.push_back(i % 4 == 1 ? -1 : int32_t(rng.below(kV)));
  return b;
}

std::vector<float> parameters(const ModelSpec &spec, uint64_t seed) {
  TestRng rng(seed);
  return rng.vector(spec.parameter_count(), -0.8f, 0.8f);
}

// The model's summed loss in float64, from the definitions: logits[t] = W wte[token t] + b, the
// cross-entropy of every counted target.
double reference_loss(const std::vector<double> &p, const Batch &b, size_t *counted = nullptr) {
  const double *wte = p.data(), *w = wte + kV * kC, *bias = w + kV * kC;
  double loss = 0;
  size_t count = 0;
  for (size_t i = 0; i < b.n * kT; ++i) {
    if (b.targets[i] < 0) continue;
    const double *e = wte + size_t(b.tokens[i]) * kC;
    double z[kV], zmax = -1e300;
    for (size_t v = 0; v < kV; ++v) {
      z[v] = bias[v];
      for (size_t c = 0; c < kC; ++c) z[v] += w[v * kC + c] * e[c];
      zmax = std::max(zmax, z[v]);
    }
    double sum = 0;
    for (size_t v = 0; v < kV; ++v) sum += std::exp(z[v] - zmax);
    loss += std::log(sum) - (z[size_t(b.targets[i])] - zmax);
    ++count;
  }
  if (counted != nullptr) *counted = count;
  return loss;
}

// The reference loss's gradient by central differences in float64 (h = 1e-5).
std::vector<double> reference_gradient(std::vector<double> p, const Batch &b) {
  std::vector<double> g(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double h = 1e-5, x = p[i];
    p[i] = x + h;
    const double up = reference_loss(p, b);
    p[i] = x - h;
    const double down = reference_loss(p, b);
    p[i] = x;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// The CPU kernel through its dpt_op_call: forward copies table rows bit for bit; backward adds dy rows
// into the rows of their tokens in sample and position order (the same float sums, so exactly equal),
// rows of tokens that do not occur untouched.
void test_embedding_gathers_and_scatters(void **) {
  const ModelSpec m = tiny_lm();
  assert_true(m.tensors()[1].shape == (Shape{kT, kC}));
  assert_int_equal(m.token_bound(), kV);
  const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op("token_embedding");
  assert_non_null(kernel);
  Batch b = batch(3, 11);
  b.tokens[0] = b.tokens[1] = b.tokens[9] = 2;  // repeated tokens: their rows sum
  TestRng rng(12);
  std::vector<float> table = rng.vector(kV * kC, -1, 1), y(b.n * kT * kC),
                     dy = rng.vector(b.n * kT * kC, -1, 1);
  const float before = 0.25f;
  std::vector<float> dtable(kV * kC, before);
  dpt_op_call c = dpt::call_template(m, 0);
  c.n = int64_t(b.n);
  c.inputs[0].data = b.tokens.data();
  c.output.data = y.data();
  c.params[0].data = table.data();
  kernel->forward(c);
  for (size_t i = 0; i < b.n * kT; ++i)
    assert_memory_equal(&y[i * kC], &table[size_t(b.tokens[i]) * kC], kC * sizeof(float));
  c.output_grad = dy.data();
  c.param_grads[0] = dtable.data();
  kernel->backward(c);
  std::vector<float> want(kV * kC, before);
  for (size_t i = 0; i < b.n * kT; ++i)
    for (size_t k = 0; k < kC; ++k) want[size_t(b.tokens[i]) * kC + k] += dy[i * kC + k];
  assert_memory_equal(dtable.data(), want.data(), want.size() * sizeof(float));
}

// The whole model's gradient of the summed loss (the network's backward) against central differences of
// the float64 reference; the loss itself against the reference; ignored targets add nothing.
void test_loss_gradient(void **) {
  const ModelSpec m = tiny_lm();
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  dpt::Network net(m, kernels);
  const Batch b = batch(4, 21);
  net.reserve(b.n);
  std::memcpy(net.input(), b.tokens.data(), b.tokens.size() * sizeof(int32_t));
  std::memcpy(net.labels(), b.targets.data(), b.targets.size() * sizeof(int32_t));
  const std::vector<float> p = parameters(m, 5);
  dpt::PassInfo info;
  info.n = b.n;
  info.training = true;
  const dpt::LossStats stats = net.forward(p.data(), nullptr, net.labels(), info);
  std::vector<float> g(m.parameter_count(), 0.0f);
  net.backward(p.data(), g.data(), info);

  std::vector<double> pd(p.begin(), p.end());
  size_t counted = 0;
  const double want = reference_loss(pd, b, &counted);
  assert_int_equal(counted, 15);  // 20 positions, every fourth ignored
  if (std::fabs(stats.loss_sum - want) > 1e-5 * std::fabs(want))
    fail_msg("loss %.9g, float64 reference %.9g", stats.loss_sum, want);
  const std::vector<double> want_grad = reference_gradient(pd, b);
  dpt_test::Comparison cmp("d loss / d parameter", 2e-4, 1e-2);
  for (size_t i = 0; i < pd.size(); ++i) cmp.add(g[i], want_grad[i], "parameter " + std::to_string(i));
  cmp.finish();
}

// The trainer divides by the counted targets: one SGD step of lr 1 moves the parameters by the summed
// gradient over 15, not over 20 positions or 4 samples; a batch whose targets are all ignored reports
// loss 0 and leaves the parameters as they were.
void test_divisor_is_counted_targets(void **) {
  dpt::TrainerConfig c;
  c.optimizer.learning_rate = 1.0f;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0}), tiny_lm(), c);
  std::vector<float> p(t.parameter_count());
  t.get_parameters(0, p.data());
  const Batch b = batch(4, 21);
  const dpt::StepStats s = t.step(b.tokens.data(), b.targets.data(), b.n);
  assert_int_equal(s.targets, 15);
  assert_int_equal(s.samples, 4);
  std::vector<double> pd(p.begin(), p.end());
  if (std::fabs(s.loss - reference_loss(pd, b) / 15) > 1e-6 * s.loss) fail_msg("mean loss %.9g", s.loss);
  std::vector<float> after(t.parameter_count());
  t.get_parameters(0, after.data());
  const std::vector<double> grad = reference_gradient(pd, b);
  dpt_test::Comparison cmp("SGD step / (gradient / 15)", 2e-3, 1e-3);
  for (size_t i = 0; i < pd.size(); ++i)
    cmp.add(double(p[i]) - after[i], grad[i] / 15, "parameter " + std::to_string(i));
  cmp.finish();

  Batch ignored = batch(2, 9);
  for (auto &y : ignored.targets) y = -1;
  const dpt::StepStats z = t.step(ignored.tokens.data(), ignored.targets.data(), ignored.n);
  assert_int_equal(z.targets, 0);
  assert_true(z.loss == 0.0 && z.applied);
  std::vector<float> same(t.parameter_count());
  t.get_parameters(0, same.data());
  assert_memory_equal(same.data(), after.data(), same.size() * sizeof(float));
}

void test_refusals(void **) {
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{1, 0}), tiny_lm(), dpt::TrainerConfig{});
  Batch b = batch(2, 4);
  b.tokens[7] = int32_t(kV);
  std::string e = expect_error([&] { t.step(b.tokens.data(), b.targets.data(), b.n); },
                               DPT_ERROR_OUT_OF_RANGE, "token = vocabulary");
  assert_non_null(
      std::strstr(e.c_str(), "token 7 of sample 1 (position 2) is outside the vocabulary [0, 7)"));
  b.tokens[7] = -1;
  expect_error([&] { t.predict(b.tokens.data(), b.n, nullptr); }, DPT_ERROR_OUT_OF_RANGE, "negative token");
  b = batch(2, 4);
  b.targets[3] = -2;
  e = expect_error([&] { t.evaluate(b.tokens.data(), b.targets.data(), b.n); }, DPT_ERROR_OUT_OF_RANGE,
                   "label -2");
  assert_non_null(std::strstr(e.c_str(), "label -2 of sample 0 (position 3)"));
  b.targets[3] = int32_t(kV);
  expect_error([&] { t.step(b.tokens.data(), b.targets.data(), b.n); }, DPT_ERROR_OUT_OF_RANGE, "label = V");
  // The trainer is still usable.
  b = batch(2, 4);
  assert_true(t.step(b.tokens.data(), b.targets.data(), b.n).applied);

  // Dtypes: token_embedding reads only the int32 input, no other op reads it.
  ModelSpec floats(Shape{kT});
  expect_error(
      [&] {
        floats.add(dpt::op_def("token_embedding"), {0}, ints({kV, kC}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "token_embedding on floats");
  ModelSpec tokens(Shape{kT}, DType::kI32);
  e = expect_error([&] { tokens.add_op("relu", {0}); }, DPT_ERROR_INVALID_ARGUMENT, "relu on tokens");
  assert_non_null(std::strstr(e.c_str(), "relu reads float32 tensors, not the int32 tokens of tensor 0"));
  expect_error(
      [&] {
        tokens.add(dpt::op_def("token_embedding"), {0}, ints({0, kC}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "vocabulary 0");
  expect_error(
      [&] {
        tokens.add(dpt::op_def("token_embedding"), {0}, ints({int64_t(1) << 25, 1}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "vocabulary 2^25");
  expect_error(
      [&] {
        ModelSpec(Shape{3, 4}, DType::kI32).add(dpt::op_def("token_embedding"), {0}, ints({5, 2}));
      },
      DPT_ERROR_INVALID_ARGUMENT, "rank-2 tokens");
}

// gpt-mini: its parameters by nanoGPT's names, and the decayed group: exactly the weight matrices of the
// linears (c_attn, c_proj, c_fc, lm_head), not embeddings, norms or biases.
void test_gpt_mini_groups(void **) {
  const ModelSpec m = ModelSpec::builtin("gpt-mini");
  assert_int_equal(m.parameter_count(), 3323392);
  assert_true(m.output() == (Shape{128, 256}));
  assert_int_equal(m.targets_per_sample(), 128);
  dpt::OptimizerConfig config;
  config.decay_matrices_only = true;
  const std::vector<dpt::DecaySegment> runs = dpt::decayed_segments(m, config);
  std::vector<bool> decayed(m.parameter_count(), false);
  for (const dpt::DecaySegment &r : runs)
    for (size_t i = 0; i < r.count; ++i) decayed[r.offset + i] = true;
  size_t want = 0;
  for (const dpt::NamedTensor &p : dpt::named_parameters(m)) {
    const std::string &n = p.name;
    const bool matrix = n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0 &&
                        (n.find(".c_") != std::string::npos || n == "lm_head.weight");
    for (size_t i = 0; i < p.shape.size(); ++i)
      if (decayed[p.offset + i] != matrix) fail_msg("%s: decayed is %d", n.c_str(), int(!matrix));
    if (matrix) want += p.shape.size();
  }
  assert_int_equal(want, 4 * (256 * 768 + 256 * 256 + 256 * 1024 + 1024 * 256) + 256 * 256);
  assert_string_equal(dpt::named_parameters(m)[0].name.c_str(), "transformer.wte.weight");
  config.decay_matrices_only = false;
  assert_int_equal(dpt::decayed_segments(m, config).size(), 1);
}

// AdamW with decay on some runs: each element gets exactly the single-group update, with or without decay.
void test_grouped_update_matches_per_element(void **) {
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  for (dpt::OptimizerKind kind : {dpt::OptimizerKind::kAdamW, dpt::OptimizerKind::kSgd}) {
    dpt::OptimizerConfig c;
    c.kind = kind;
    c.momentum = 0.9f;
    c.weight_decay = 0.1f;
    const size_t n = 20;
    const std::vector<dpt::DecaySegment> runs{{2, 5}, {10, 3}, {17, 3}};
    TestRng rng(8);
    std::vector<float> p = rng.vector(n, -1, 1), g = rng.vector(n, -1, 1);
    std::vector<float> state(2 * n, 0.0f), want = p;
    std::vector<float> want_state(2 * n, 0.0f);
    for (uint64_t t = 0; t < 3; ++t) {
      dpt::apply_grouped_update(kernels, c, runs, t, 0.01f, 0.5f, p.data(), g.data(), state.data(), 0, n);
      for (size_t i = 0; i < n; ++i) {
        bool in = false;
        for (const auto &r : runs) in = in || (i >= r.offset && i < r.offset + r.count);
        dpt::OptimizerConfig one = c;
        one.weight_decay = in ? c.weight_decay : 0.0f;
        // One element alone: AdamW's state is m then v, SGD's one buffer.
        float m_v[2] = {want_state[i], want_state[n + i]};
        dpt::apply_update(one, t, 0.01f, 0.5f, &want[i], &g[i], m_v, 1);
        want_state[i] = m_v[0];
        want_state[n + i] = m_v[1];
      }
      assert_memory_equal(p.data(), want.data(), n * sizeof(float));
    }
    // In ranges that cut the runs (the shards of a sharded optimizer), each range with its own state: the
    // same bits again.
    std::vector<float> q = rng.vector(n, -1, 1), whole = q;
    std::vector<float> whole_state(2 * n, 0.0f);
    const size_t cuts[] = {0, 3, 11, 11, 18, n};
    std::vector<std::vector<float>> range_state(5);
    for (size_t r = 0; r < 5; ++r) range_state[r].assign(2 * (cuts[r + 1] - cuts[r]), 0.0f);
    for (uint64_t t = 0; t < 3; ++t) {
      dpt::apply_grouped_update(kernels, c, runs, t, 0.01f, 0.5f, whole.data(), g.data(), whole_state.data(),
                                0, n);
      for (size_t r = 0; r < 5; ++r)
        dpt::apply_grouped_update(kernels, c, runs, t, 0.01f, 0.5f, q.data() + cuts[r], g.data() + cuts[r],
                                  range_state[r].data(), cuts[r], cuts[r + 1]);
      assert_memory_equal(q.data(), whole.data(), n * sizeof(float));
    }
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_embedding_gathers_and_scatters),
      cmocka_unit_test(test_loss_gradient),
      cmocka_unit_test(test_divisor_is_counted_targets),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_gpt_mini_groups),
      cmocka_unit_test(test_grouped_update_matches_per_element),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
