// Tied parameters (ModelSpec::tie, dpt_model_tie): GPT-2's LM head sharing the token embedding's matrix.
// The layout (the tied parameter leaves the flat vector, reads its source's values), the gradient (the sum
// of both nodes' contributions) against central differences of a float64 reference, the weight-decay
// group of the shared matrix, JSON and description round trips, the refusals (the model unchanged), and
// the data-parallel contract with gradient buckets: the K-device step equals the 1-device step, bucketed
// or not, and bucketed equals unbucketed bit for bit (the source's bucket is reduced only after both
// contributions are in).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "backend/cpu/cpu_kernels.hpp"
#include "core/error.hpp"
#include "graph/model_json.hpp"
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

// tokens [T] -> wte [T, C] -> linear C with bias ("mid") -> linear V without bias ("head"), the head's
// weight [V, C] tied to wte's [V, C]: logits[t] = E (M E[token t] + b).
ModelSpec tied_lm() {
  ModelSpec m(Shape{kT}, DType::kI32);
  m.add(dpt::op_def("token_embedding"), {0}, ints({kV, kC}), "wte");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kC, 1}), "mid");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kV, 0}), "head");
  m.tie("head.weight", "wte.weight");
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

// The summed loss in float64 from the definitions; p = E [V, C], M [C, C], b [C] (the flat order).
double reference_loss(const std::vector<double> &p, const Batch &b) {
  const double *e = p.data(), *w = e + kV * kC, *bias = w + kC * kC;
  double loss = 0;
  for (size_t i = 0; i < b.n * kT; ++i) {
    if (b.targets[i] < 0) continue;
    const double *x = e + size_t(b.tokens[i]) * kC;
    double h[kC], z[kV], zmax = -1e300;
    for (size_t c = 0; c < kC; ++c) {
      h[c] = bias[c];
      for (size_t k = 0; k < kC; ++k) h[c] += w[c * kC + k] * x[k];
    }
    for (size_t v = 0; v < kV; ++v) {
      z[v] = 0;
      for (size_t c = 0; c < kC; ++c) z[v] += e[v * kC + c] * h[c];
      zmax = std::max(zmax, z[v]);
    }
    double sum = 0;
    for (size_t v = 0; v < kV; ++v) sum += std::exp(z[v] - zmax);
    loss += std::log(sum) - (z[size_t(b.targets[i])] - zmax);
  }
  return loss;
}

void test_layout(void **) {
  const ModelSpec m = tied_lm();
  assert_int_equal(m.parameter_count(), kV * kC + kC * kC + kC);  // the head owns nothing
  const std::vector<dpt::NamedTensor> named = dpt::named_parameters(m);
  assert_int_equal(named.size(), 3);
  assert_string_equal(named[0].name.c_str(), "wte.weight");
  assert_string_equal(named[1].name.c_str(), "mid.weight");
  assert_string_equal(named[2].name.c_str(), "mid.bias");
  assert_int_equal(named[2].offset + named[2].shape.size(), m.parameter_count());
  const dpt::Node &head = m.nodes()[2];
  assert_true(head.tied[0]);
  assert_int_equal(head.param_offsets[0], 0);
  assert_int_equal(head.parameters(), 0);
  assert_int_equal(head.param_offset, m.parameter_count());
  assert_non_null(std::strstr(m.describe().c_str(), " tie:head.weight=wte.weight"));

  // JSON keeps the tie; the model read back is the same model.
  const std::string json = dpt::model_to_json(m);
  assert_non_null(std::strstr(
      json.c_str(), "\"ties\": [\n    {\"parameter\": \"head.weight\", \"source\": \"wte.weight\"}"));
  const ModelSpec back = dpt::model_from_json(json);
  assert_string_equal(back.describe().c_str(), m.describe().c_str());
  assert_int_equal(back.parameter_count(), m.parameter_count());
  // An untied model's JSON has no "ties" (as 0.2 wrote it).
  assert_null(std::strstr(dpt::model_to_json(ModelSpec::builtin("gpt-mini")).c_str(), "ties"));

  // Tying a later node's parameter moves the offsets of the nodes after it down.
  ModelSpec chain(Shape{kT}, DType::kI32);
  chain.add(dpt::op_def("token_embedding"), {0}, ints({kV, kC}), "wte");
  chain.add(dpt::op_def("linear"), {chain.output_tensor()}, ints({kV, 0}), "a");
  chain.add(dpt::op_def("linear"), {chain.output_tensor()}, ints({kC, 1}), "b");
  const size_t before = chain.parameter_count(), b_weight = chain.nodes()[2].param_offsets[0];
  chain.tie("a.weight", "wte.weight");
  assert_int_equal(chain.parameter_count(), before - kV * kC);
  assert_int_equal(chain.nodes()[2].param_offsets[0], b_weight - kV * kC);
  assert_int_equal(chain.nodes()[2].param_offsets[1], b_weight - kV * kC + kC * kV);
  assert_int_equal(dpt::named_parameters(chain)[1].offset, b_weight - kV * kC);
}

// m.tie(parameter, source) fails with DPT_ERROR_INVALID_ARGUMENT, its message holding message, and leaves m
// as it was.
void expect_refused(ModelSpec &m, const char *parameter, const char *source, const char *message) {
  const std::string describe = m.describe();
  const size_t count = m.parameter_count();
  const std::string e = expect_error([&] { m.tie(parameter, source); }, DPT_ERROR_INVALID_ARGUMENT, message);
  if (std::strstr(e.c_str(), message) == nullptr) fail_msg("'%s' lacks '%s'", e.c_str(), message);
  assert_string_equal(m.describe().c_str(), describe.c_str());
  assert_int_equal(m.parameter_count(), count);
}

void test_refusals_leave_the_model_unchanged(void **) {
  ModelSpec m(Shape{kT}, DType::kI32);
  m.add(dpt::op_def("token_embedding"), {0}, ints({kV, kC}), "wte");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kC, 1}), "mid");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kV, 0}), "head");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kC, 0}), "back");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, ints({kV, 1}), "head2");
  const size_t count = m.parameter_count();
  expect_refused(m, "head.weight", "nowhere.weight", "names no node's parameter");
  expect_refused(m, "head", "wte.weight", "names no node's parameter");
  expect_refused(m, "head.bias", "wte.weight", "node \"head\" has the parameters weight");
  expect_refused(m, "head.weight", "mid.weight", "the shapes differ (7x3 and 3x3)");
  expect_refused(m, "wte.weight", "head.weight", "the source must belong to an earlier node");
  expect_refused(m, "head.weight", "head.weight", "the source must belong to an earlier node");

  m.tie("head.weight", "wte.weight");
  const size_t tied_count = m.parameter_count();
  assert_int_equal(tied_count, count - kV * kC);
  expect_refused(m, "head.weight", "wte.weight", "already tied to \"wte.weight\"");
  // A tied source stands for its own source: head2.weight joins wte.weight.
  m.tie("head2.weight", "head.weight");
  assert_non_null(std::strstr(m.describe().c_str(), "tie:head2.weight=wte.weight"));
  assert_int_equal(m.parameter_count(), tied_count - kV * kC);
  assert_int_equal(m.nodes()[4].param_offsets[0], 0);
  // head2's bias, after the removed matrices, sits at the end of the flat vector.
  assert_int_equal(m.nodes()[4].param_offsets[1], m.parameter_count() - kV);
  expect_refused(m, "wte.weight", "mid.weight", "the parameter is the source of \"head.weight\"");
}

// The network's gradient of the summed loss against central differences of the float64 reference: the
// shared matrix gets the head's contribution and the embedding's.
void test_gradient(void **) {
  const ModelSpec m = tied_lm();
  dpt::MemoryArena arena("test", 0);
  dpt::CpuKernels kernels(arena);
  dpt::Network net(m, kernels);
  const Batch b = batch(4, 21);
  net.reserve(b.n);
  std::memcpy(net.input(), b.tokens.data(), b.tokens.size() * sizeof(int32_t));
  std::memcpy(net.labels(), b.targets.data(), b.targets.size() * sizeof(int32_t));
  TestRng rng(5);
  const std::vector<float> p = rng.vector(m.parameter_count(), -0.8f, 0.8f);
  dpt::PassInfo info;
  info.n = b.n;
  info.training = true;
  const dpt::LossStats stats = net.forward(p.data(), nullptr, net.labels(), info);
  std::vector<float> g(m.parameter_count(), 0.0f);
  net.backward(p.data(), g.data(), info);

  std::vector<double> pd(p.begin(), p.end());
  const double want = reference_loss(pd, b);
  if (std::fabs(stats.loss_sum - want) > 1e-5 * std::fabs(want))
    fail_msg("loss %.9g, float64 reference %.9g", stats.loss_sum, want);
  dpt_test::Comparison cmp("d loss / d parameter (tied)", 2e-4, 1e-2);
  for (size_t i = 0; i < pd.size(); ++i) {
    const double h = 1e-5, x = pd[i];
    pd[i] = x + h;
    const double up = reference_loss(pd, b);
    pd[i] = x - h;
    const double down = reference_loss(pd, b);
    pd[i] = x;
    cmp.add(g[i], (up - down) / (2 * h), "parameter " + std::to_string(i));
  }
  cmp.finish();
}

// Matrices-only decay: the shared matrix is the head's weight matrix, so it decays (nanoGPT's tied GPT
// decays it); untied, the embedding table does not.
void test_decay_group(void **) {
  ModelSpec m = ModelSpec::builtin("gpt-mini");
  dpt::OptimizerConfig config;
  config.decay_matrices_only = true;
  const auto decays_wte = [&](const ModelSpec &spec) {
    for (const dpt::DecaySegment &r : dpt::decayed_segments(spec, config))
      if (r.offset == 0) return true;
    return false;
  };
  size_t untied = 0;
  for (const dpt::DecaySegment &r : dpt::decayed_segments(m, config)) untied += r.count;
  assert_false(decays_wte(m));
  m.tie("lm_head.weight", "transformer.wte.weight");
  assert_int_equal(m.parameter_count(), 3323392 - 256 * 256);
  size_t tied = 0;
  const std::vector<dpt::DecaySegment> runs = dpt::decayed_segments(m, config);
  for (size_t i = 0; i < runs.size(); ++i) {
    tied += runs[i].count;
    if (i > 0) assert_true(runs[i].offset > runs[i - 1].offset + runs[i - 1].count);  // sorted, merged
  }
  assert_true(decays_wte(m));
  assert_int_equal(tied, untied);  // lm_head's 256 x 256 decayed before, wte's now: the same count
}

struct Run {
  size_t devices = 1;
  size_t bucket_bytes = 0;
};

std::vector<float> train(const Run &run, size_t steps, std::vector<float> *start) {
  dpt::TrainerConfig c;
  c.seed = 3;
  c.bucket_bytes = run.bucket_bytes;
  c.optimizer.kind = dpt::OptimizerKind::kAdamW;
  c.optimizer.learning_rate = 1e-2f;
  c.optimizer.weight_decay = 0.1f;
  c.optimizer.decay_matrices_only = true;
  c.optimizer.clip_norm = 1.0f;
  dpt::Trainer t(std::make_shared<dpt::Context>(dpt::ContextConfig{run.devices, 0}), tied_lm(), c);
  if (start != nullptr) {
    start->resize(t.parameter_count());
    t.get_parameters(0, start->data());
  }
  for (size_t s = 0; s < steps; ++s) {
    const Batch b = batch(size_t(17 + 7 * (s % 3)), 100 + s);
    t.step(b.tokens.data(), b.targets.data(), b.n);
  }
  std::vector<float> p(t.parameter_count()), other(t.parameter_count());
  t.get_parameters(0, p.data());
  for (size_t i = 1; i < t.device_count(); ++i) {
    t.get_parameters(i, other.data());
    assert_memory_equal(other.data(), p.data(), p.size() * sizeof(float));
  }
  return p;
}

// K devices = 1 device (relative to how far the parameters moved), and buckets as small as one node's
// gradients give bitwise the same parameters as one all-reduce after backward.
void test_k_devices_and_buckets(void **) {
  for (size_t steps : {1, 10}) {
    std::vector<float> start;
    const std::vector<float> one = train(Run{1, 0}, steps, &start);
    for (size_t k : {2, 3}) {
      const std::vector<float> whole = train(Run{k, 0}, steps, nullptr);
      const std::vector<float> bucketed = train(Run{k, 16}, steps, nullptr);
      assert_memory_equal(bucketed.data(), whole.data(), whole.size() * sizeof(float));
      double diff = 0, moved = 0;
      for (size_t i = 0; i < one.size(); ++i) {
        diff += (double(whole[i]) - one[i]) * (double(whole[i]) - one[i]);
        moved += (double(one[i]) - start[i]) * (double(one[i]) - start[i]);
      }
      const double e = std::sqrt(diff / moved);
      std::printf("tied LM, K=%zu, %zu steps: relative error %.2e (tolerance 1e-5)\n", k, steps, e);
      if (!(e <= 1e-5)) fail_msg("K=%zu, %zu steps: relative error %.3g", k, steps, e);
    }
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_refusals_leave_the_model_unchanged),
      cmocka_unit_test(test_gradient),
      cmocka_unit_test(test_decay_group),
      cmocka_unit_test(test_k_devices_and_buckets),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
