#include "gpu_training_fixtures.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "../capi/relative_error.h"
#include "cuda_harness.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
extern "C" {
#include <cmocka.h>
}

#include "../core/core_test_util.hpp"

namespace gpu_test {

Batch batch(size_t n, uint64_t seed) {
  dpt_test::TestRng rng(seed);
  Batch b;
  b.n = n;
  b.x = rng.vector(n * 28 * 28, 0.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) b.y.push_back(int32_t(rng.below(10)));
  return b;
}

std::shared_ptr<dpt::Context> gpu_context() {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  cuda_test::gpu_count_or_skip(api);
  dpt::ContextConfig c;
  c.want_cpu = false;
  c.want_cuda = true;
  auto context = std::make_shared<dpt::Context>(c);
  if (context->device_count() == 0) {
    print_message("no CUDA device (%s): skipped\n", context->backend_report(DPT_DEVICE_CUDA).reason.c_str());
    skip();
  }
  return context;
}

std::shared_ptr<dpt::Context> cpu_context() {
  dpt::ContextConfig c;
  c.cpu_devices = 1;
  return std::make_shared<dpt::Context>(c);
}

bool simulated() {
  dpt_backend_versions v;
  cuda_test::module_or_skip().versions(&v);
  return std::strstr(v.text, "simulated") != nullptr;
}

void need_gpus(const dpt::Context &context, size_t count) {
  if (context.device_count() < count) {
    print_message("%zu GPUs needed, %zu present: skipped\n", count, context.device_count());
    skip();
  }
}

dpt::TrainerConfig config(std::vector<size_t> devices, dpt::OptimizerKind kind) {
  dpt::TrainerConfig c;
  c.devices = std::move(devices);
  c.seed = 11;
  c.timeout_seconds = 60;
  c.optimizer.kind = kind;
  c.optimizer.learning_rate = kind == dpt::OptimizerKind::kSgd ? 0.05f : 0.002f;
  if (kind == dpt::OptimizerKind::kSgd) c.optimizer.momentum = 0.9f;
  c.optimizer.weight_decay = 1e-4f;
  // Bitwise comparisons of two trainers need the same convolution algorithms in both: without
  // DPT_GPU_DETERMINISTIC each trainer's contexts time cuDNN's algorithms and may keep different ones
  // (docs/cuda.md). test_gpu_matches_cpu and test_gpu_mixed_precision also run the timed choice.
  c.kernels.deterministic = true;
  return c;
}

std::unique_ptr<dpt::Trainer> trainer(std::shared_ptr<dpt::Context> context, dpt::TrainerConfig c) {
  return std::make_unique<dpt::Trainer>(std::move(context), dpt::ModelSpec::builtin("lenet"), std::move(c));
}

std::vector<float> parameters(const dpt::Trainer &t, size_t replica) {
  std::vector<float> p(t.parameter_count());
  t.get_parameters(replica, p.data());
  return p;
}

// Four steps, the last on a batch that does not divide evenly.
void train(dpt::Trainer &t) {
  for (int s = 0; s < 3; ++s) {
    const Batch b = batch(32, 100 + uint64_t(s));
    t.step(b.x.data(), b.y.data(), b.n);
  }
  const Batch b = batch(29, 200);
  t.step(b.x.data(), b.y.data(), b.n);
}

void expect_equivalent(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                       const std::vector<float> &start, double tolerance) {
  const double err = tu_relative_error(got.data(), want.data(), start.data(), want.size());
  print_message("%s: relative error %.3g (tolerance %.0e)\n", what, err, tolerance);
  if (!(err <= tolerance)) fail_msg("%s: relative error %.3g exceeds %.0e", what, err, tolerance);
}

dpt::ModelSpec batch_norm_model() {
  dpt::ModelSpec m(dpt::Shape{1, 28, 28});
  const size_t a = m.add_conv2d(8, 3, 2, 1, false);
  const size_t b = m.add_op("relu", {m.add_batch_norm(a)});
  m.add_conv2d(8, 3, 1, 1, false);
  const size_t c = m.add_batch_norm(m.output_tensor());
  m.add_op("relu", {m.add_op("add", {b, c})});
  m.add_op("global_avg_pool", {m.output_tensor()});
  m.add_dense(10);
  return m;
}

dpt::ModelSpec token_model() {
  auto ints = [](std::initializer_list<int64_t> v) {
    dpt::OpAttrs a;
    size_t i = 0;
    for (int64_t x : v) a.ints[i++] = x;
    return a;
  };
  dpt::OpAttrs eps;
  eps.reals[0] = 1e-5;
  dpt::ModelSpec m(dpt::Shape{12}, dpt::DType::kI32);
  size_t x = m.add(dpt::op_def("token_embedding"), {0}, ints({17, 16}), "wte");
  x = m.add(dpt::op_def("position_embedding"), {x}, {}, "wpe");
  size_t h = m.add(dpt::op_def("layer_norm"), {x}, eps, "ln_1");
  h = m.add(dpt::op_def("linear"), {h}, ints({48, 0}), "c_attn");
  h = m.add(dpt::op_def("causal_self_attention"), {h}, ints({2}), "attn");
  x = m.add_op("add", {x, m.add(dpt::op_def("linear"), {h}, ints({16, 1}), "c_proj")}, "res");
  h = m.add(dpt::op_def("gelu"), {m.add(dpt::op_def("linear"), {x}, ints({32, 1}), "c_fc")}, ints({1}),
            "gelu");
  x = m.add_op("add", {x, m.add(dpt::op_def("linear"), {h}, ints({16, 1}), "mlp_proj")}, "res_2");
  x = m.add(dpt::op_def("layer_norm"), {x}, eps, "ln_f");
  m.add(dpt::op_def("linear"), {x}, ints({17, 0}), "lm_head");
  return m;
}

dpt::ModelSpec tied_head_model() {
  dpt::ModelSpec m(dpt::Shape{12}, dpt::DType::kI32);
  dpt::OpAttrs embed, mid, head;
  embed.ints[0] = 17, embed.ints[1] = 16;
  mid.ints[0] = 16, mid.ints[1] = 1;
  head.ints[0] = 17, head.ints[1] = 0;
  m.add(dpt::op_def("token_embedding"), {0}, embed, "wte");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, mid, "mid");
  m.add(dpt::op_def("linear"), {m.output_tensor()}, head, "head");
  m.tie("head.weight", "wte.weight");
  return m;
}

void train_tokens(dpt::Trainer &t) {
  for (uint64_t s = 0; s < 4; ++s) {
    const size_t n = s == 3 ? 7 : 10;
    std::vector<int32_t> x(n * 12), y(n * 12);
    uint64_t state = 500 + s;
    auto next = [&state] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
    for (auto &v : x) v = int32_t(next() % 17);
    for (size_t i = 0; i < y.size(); ++i) y[i] = i % 7 == 3 ? -1 : int32_t(next() % 17);
    const dpt::StepStats st = t.step(x.data(), y.data(), n);
    assert_true(st.applied && std::isfinite(st.loss));
  }
}

std::string trace_of(dpt::Trainer &t, const char *name) {
  const std::string path =
      std::string(P_tmpdir) + "/dptrain_gpu_trace_" + std::to_string(getpid()) + "_" + name + ".json";
  t.write_trace(path);
  const std::string text = dpt_test::read_file(path);
  std::remove(path.c_str());
  return text;
}

size_t occurrences(const std::string &content, const char *text) {
  size_t count = 0;
  for (size_t at = content.find(text); at != std::string::npos; at = content.find(text, at + 1)) ++count;
  return count;
}

}  // namespace gpu_test
