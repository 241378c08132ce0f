// What a pipeline's automatic cuts balance (TrainerConfig::pipeline_balance, parallel/pipeline_balance.hpp):
// the parameter balance minimises the largest stage's parameters (checked against every possible pair of
// cuts); the measured times rank layers by their work and free their memory; the cuts a time balance
// chose, named in a second trainer, train to the same bits; the trainer reports its cuts; what cannot be
// measured or combined is refused.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/context.hpp"
#include "core/error.hpp"
#include "parallel/pipeline_balance.hpp"
#include "parallel/pipeline_plan.hpp"
#include "parallel/trainer.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

// Four dense layers of very different sizes (multiply-adds per sample: 16K, 256K, 16K, 1K).
dpt::ModelSpec uneven_mlp() {
  dpt::ModelSpec m(dpt::Shape{64});
  m.add_dense(256);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(1024);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(16);
  m.add_activation(dpt::Activation::kRelu);
  m.add_dense(64);
  return m;
}

// A node's own parameters, counted from its slots (a tied slot is its source's).
double own_parameters(const dpt::Node &node) {
  double floats = 0;
  for (size_t k = 0; k < node.layout.params.size(); ++k)
    if (!node.tied[k]) floats += double(node.layout.params[k].size());
  return floats;
}

// The smallest possible largest stage's parameters with two cuts, trying every pair of candidates.
double best_largest_of_three(const dpt::ModelSpec &m) {
  const std::vector<size_t> cand = dpt::cut_candidates(m);
  std::vector<double> prefix{0};
  for (const dpt::Node &node : m.nodes()) prefix.push_back(prefix.back() + own_parameters(node));
  double best = 1e300;
  for (size_t a = 0; a < cand.size(); ++a)
    for (size_t b = a + 1; b < cand.size(); ++b)
      best = std::min(best, std::max({prefix[cand[a]], prefix[cand[b]] - prefix[cand[a]],
                                      prefix.back() - prefix[cand[b]]}));
  return best;
}

double largest_stage(const dpt::ModelSpec &m, const std::vector<size_t> &cuts) {
  std::vector<size_t> bounds{0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(m.nodes().size());
  double largest = 0;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    double sum = 0;
    for (size_t j = bounds[s]; j < bounds[s + 1]; ++j) sum += own_parameters(m.nodes()[j]);
    largest = std::max(largest, sum);
  }
  return largest;
}

dpt::TrainerConfig pipelined(size_t stages, dpt::PipelineBalance balance) {
  dpt::TrainerConfig c;
  c.seed = 5;
  c.pipeline_stages = stages;
  c.micro_batches = 2;
  c.pipeline_balance = balance;
  c.optimizer.learning_rate = 0.05f;
  c.optimizer.momentum = 0.9f;
  return c;
}

std::vector<size_t> cut_nodes(const dpt::ModelSpec &m, const dpt::Trainer &t) {
  return dpt::named_cuts(m, t.pipeline_cut_names());
}

// ResNet-18 in three stages by parameters: the largest stage is as small as any two cuts make it, and it
// is not where the work balance cuts (its last block holds 42% of the parameters, 16% of the work).
void test_parameter_balance_minimises_the_largest_stage(void **) {
  const dpt::ModelSpec m = dpt::ModelSpec::builtin("resnet18");
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{3, 0});
  const dpt::Trainer by_parameters(context, m, pipelined(3, dpt::PipelineBalance::kParameters));
  const std::vector<size_t> cuts = cut_nodes(m, by_parameters);
  assert_int_equal(cuts.size(), 2);
  assert_true(largest_stage(m, cuts) == best_largest_of_three(m));
  const dpt::Trainer by_work(context, m, pipelined(3, dpt::PipelineBalance::kWork));
  assert_true(largest_stage(m, cut_nodes(m, by_work)) > 1.2 * largest_stage(m, cuts));
  // The stages' parameter bytes, as the replicas hold them: none above the balanced largest stage.
  for (size_t r = 0; r < 3; ++r)
    assert_true(double(by_parameters.replica_memory(r).parameters) <= 4 * largest_stage(m, cuts));
}

// The measured times: every layer's positive; the 256K multiply-add layer above the 16K ones, which are
// above the 1K one (by far less than their ratios, so that a noisy machine passes); the probe's memory
// given back.
void test_measured_times_rank_the_layers(void **) {
  const dpt::ModelSpec m = uneven_mlp();
  dpt::Context context(dpt::ContextConfig{1, 0});
  dpt::Device &device = context.device(0);
  const uint64_t free_before = device.details().free_memory;
  const std::vector<double> t =
      dpt::measured_times(m, device, dpt::KernelOptions{}, dpt::DType::kF32, dpt::DType::kF32, 32, 1);
  assert_int_equal(t.size(), m.nodes().size());
  for (double seconds : t) assert_true(seconds > 0.0 && seconds < 10.0);
  assert_true(t[2] > 3.0 * t[0]);  // dense 256 -> 1024 over dense 64 -> 256 (16x the work)
  assert_true(t[2] > 3.0 * t[4]);  // and over dense 1024 -> 16
  assert_true(t[0] > 2.0 * t[6]);  // dense 64 -> 256 over dense 16 -> 64 (16x)
  assert_int_equal(device.details().free_memory, free_before);
}

// Two stages cut by measured time; a second trainer given those cuts by name holds the same stages, reports
// the same cuts and trains to the same bits; without a pipeline there are no cuts.
void test_time_balance_cuts_can_be_named(void **) {
  const dpt::ModelSpec m = uneven_mlp();
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  dpt::TrainerConfig c = pipelined(2, dpt::PipelineBalance::kTime);
  c.pipeline_balance_batch = 24;
  dpt::Trainer measured(context, m, c);
  const std::vector<std::string> names = measured.pipeline_cut_names();
  assert_int_equal(names.size(), 1);
  // The largest layer (node 2) and the ones around it: a cut after the first dense layer or after the
  // large one's ReLU, whatever the machine measured.
  const size_t cut = dpt::named_cuts(m, names)[0];
  assert_true(cut >= 1 && cut <= 4);
  c.pipeline_balance = dpt::PipelineBalance::kWork;
  c.pipeline_cuts = names;
  dpt::Trainer named(context, m, c);
  assert_true(named.pipeline_cut_names() == names);
  for (size_t r = 0; r < 2; ++r)  // the same stages
    assert_int_equal(named.replica_memory(r).parameters, measured.replica_memory(r).parameters);
  dpt_test::TestRng rng(3);
  for (int s = 0; s < 3; ++s) {
    const std::vector<float> x = rng.vector(24 * 64, -1.0f, 1.0f);
    std::vector<int32_t> y(24);
    for (auto &label : y) label = int32_t(rng.below(64));
    measured.step(x.data(), y.data(), 24);
    named.step(x.data(), y.data(), 24);
  }
  assert_int_equal(measured.parameter_checksum(), named.parameter_checksum());
  dpt::TrainerConfig plain;
  plain.devices = {0};
  assert_true(dpt::Trainer(context, m, plain).pipeline_cut_names().empty());
}

// Named cuts with a balance, an unknown balance: refused. A model that does not fit the first device
// cannot be measured (its error names the device), where the estimated work cuts it across capped devices.
void test_refusals(void **) {
  const dpt::ModelSpec m = uneven_mlp();
  auto context = std::make_shared<dpt::Context>(dpt::ContextConfig{2, 0});
  dpt::TrainerConfig c = pipelined(2, dpt::PipelineBalance::kParameters);
  c.pipeline_cuts = {"2"};
  std::string message = dpt_test::expect_error([&] { dpt::Trainer(context, m, c); },
                                               DPT_ERROR_INVALID_ARGUMENT, "named cuts and a balance");
  assert_non_null(std::strstr(message.c_str(), "one or the other"));
  c.pipeline_cuts.clear();
  c.pipeline_balance = dpt::PipelineBalance(7);
  dpt_test::expect_error([&] { dpt::Trainer(context, m, c); }, DPT_ERROR_INVALID_ARGUMENT, "balance 7");
  // Four wide layers: the whole model's parameters and gradients take 8 bytes per parameter on the one
  // device that measures; each of four stages' replicas (SGD with momentum: 12 bytes per parameter) about
  // a third of that.
  dpt::ModelSpec wide(dpt::Shape{64});
  for (int i = 0; i < 4; ++i) {
    wide.add_dense(512);
    wide.add_activation(dpt::Activation::kRelu);
  }
  wide.add_dense(5);
  const uint64_t cap = uint64_t(wide.parameter_count()) * 5;
  auto capped = std::make_shared<dpt::Context>(dpt::ContextConfig{4, cap});
  c = pipelined(4, dpt::PipelineBalance::kTime);
  message = dpt_test::expect_error([&] { dpt::Trainer(capped, wide, c); }, DPT_ERROR_OUT_OF_MEMORY,
                                   "the whole model on one capped device");
  assert_non_null(std::strstr(message.c_str(), "cpu:0"));
  assert_non_null(std::strstr(message.c_str(), "measured time"));
  c.pipeline_balance = dpt::PipelineBalance::kParameters;
  dpt::Trainer t(capped, wide, c);
  dpt_test::TestRng rng(4);
  const std::vector<float> x = rng.vector(8 * 64, -1.0f, 1.0f);
  const std::vector<int32_t> y(8, 1);
  assert_true(t.step(x.data(), y.data(), 8).applied);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parameter_balance_minimises_the_largest_stage),
      cmocka_unit_test(test_measured_times_rank_the_layers),
      cmocka_unit_test(test_time_balance_cuts_can_be_named),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
