// test_sim_cuda's op cases: the simulator computes with the CPU reference kernels (bit for bit the results
// of dptrain_cpu_ops called here on host buffers, every op of it and both phases of batch_norm), supports
// every op of dptrain_cpu_ops but dropout, and checks op calls by op_call.h's rules for every op and by the
// core's descriptors of the ops; accumulate and the loss are the CPU's too.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "test_sim_cuda.hpp"

namespace sim_test {

namespace {

// One step of an op's run: a forward or backward call, or a copy between buffers (what the executor does
// between the phases of batch_norm: the slice's statistics to the global set).
struct Step {
  enum Kind { kForward, kBackward, kCopy } kind;
  dpt_op_call call;  // kForward, kBackward
  const void *from;  // kCopy
  void *to;
  size_t bytes;
};

Step forward_step(const dpt_op_call &c, int32_t phase = DPT_OP_PHASE_SINGLE) {
  Step s{Step::kForward, c, nullptr, nullptr, 0};
  s.call.phase = phase;
  return s;
}
Step backward_step(const dpt_op_call &c, int32_t phase = DPT_OP_PHASE_SINGLE) {
  Step s{Step::kBackward, c, nullptr, nullptr, 0};
  s.call.phase = phase;
  return s;
}
Step copy_step(const void *from, void *to, size_t bytes) {
  return Step{Step::kCopy, dpt_op_call{}, from, to, bytes};
}

// The steps of one op, run on host buffers through the CPU reference (dpt::cpu::find_op, with host scratch)
// and on device copies of the same buffers through the simulator. Every pointer of a call points into one
// of buffers; each buffer (outputs, saved, statistics and gradients too) starts with the same bits on both
// sides, and after both runs every buffer must be bitwise the same. The simulator's results appear only at
// synchronize.
void expect_steps_same_as_cpu(dpt_backend_context *ctx, const char *what, const std::vector<Step> &steps,
                              const std::vector<std::vector<float> *> &buffers) {
  std::vector<float *> device(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) device[b] = upload(ctx, *buffers[b]);
  const auto to_device = [&](const void *p) -> void * {
    if (p == nullptr) return nullptr;
    for (size_t b = 0; b < buffers.size(); ++b) {
      const char *begin = reinterpret_cast<const char *>(buffers[b]->data());
      const char *at = static_cast<const char *>(p);
      if (at >= begin && at < begin + buffers[b]->size() * sizeof(float))
        return reinterpret_cast<char *>(device[b]) + (at - begin);
    }
    fail_msg("%s: a pointer of the call is not in one of the buffers", what);
    return nullptr;
  };
  const std::vector<std::vector<float>> before = [&] {
    std::vector<std::vector<float>> copy;
    for (const auto *b : buffers) copy.push_back(*b);
    return copy;
  }();

  for (const Step &step : steps) {
    if (step.kind == Step::kCopy) {
      OK(api->copy_device(ctx, to_device(step.to), to_device(step.from), step.bytes, error, sizeof error));
      std::memcpy(step.to, step.from, step.bytes);
      continue;
    }
    const dpt_op_call &host_call = step.call;
    dpt_op_call sim = host_call;
    for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) {
      sim.inputs[i].data = to_device(host_call.inputs[i].data);
      sim.input_grads[i] = to_device(host_call.input_grads[i]);
    }
    sim.output.data = to_device(host_call.output.data);
    for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) {
      sim.params[p].data = to_device(host_call.params[p].data);
      sim.param_grads[p] = static_cast<float *>(to_device(host_call.param_grads[p]));
      sim.buffers[p].data = to_device(host_call.buffers[p].data);
    }
    sim.saved = to_device(host_call.saved);
    sim.statistics = static_cast<double *>(to_device(host_call.statistics));
    sim.output_grad = to_device(host_call.output_grad);
    // (the simulator's forward ignores the backward members: the same call serves both passes)
    const bool backward = step.kind == Step::kBackward;
    OK((backward ? api->op_backward : api->op_forward)(ctx, &sim, error, sizeof error));

    const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op(host_call.op);
    assert_non_null(kernel);
    dpt_op_call cpu = host_call;
    std::vector<float> scratch;
    if (kernel->scratch_bytes != nullptr) {
      scratch.resize(kernel->scratch_bytes(cpu) / sizeof(float) + 1);
      cpu.scratch = scratch.data();
      cpu.scratch_bytes = scratch.size() * sizeof(float);
    }
    if (!backward) {  // a forward call has no backward members
      cpu.output_grad = nullptr;
      for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) cpu.input_grads[i] = nullptr;
      for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) cpu.param_grads[p] = nullptr;
    }
    (backward ? kernel->backward : kernel->forward)(cpu);
  }

  std::vector<std::vector<float>> results;
  for (size_t b = 0; b < buffers.size(); ++b) {
    results.emplace_back(before[b]);
    OK(api->copy_to_host(ctx, results[b].data(), device[b], results[b].size() * sizeof(float), error,
                         sizeof error));
  }
  for (size_t b = 0; b < buffers.size(); ++b)  // nothing has run before the synchronize
    assert_memory_equal(results[b].data(), before[b].data(), before[b].size() * sizeof(float));
  OK(api->context_synchronize(ctx, error, sizeof error));
  size_t changed = 0;
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (std::memcmp(buffers[b]->data(), before[b].data(), before[b].size() * sizeof(float)) != 0) ++changed;
    if (std::memcmp(results[b].data(), buffers[b]->data(), before[b].size() * sizeof(float)) != 0)
      fail_msg("%s: buffer %zu differs between the simulator and the CPU reference", what, b);
  }
  print_message("%-28s %zu buffers bitwise equal to the CPU reference's (%zu written)\n", what,
                buffers.size(), changed);
  assert_true(changed > 0);
  for (float *d : device) OK(api->mem_free(ctx, d, error, sizeof error));
}

// One call's forward, then its backward.
void expect_same_as_cpu(dpt_backend_context *ctx, const dpt_op_call &c,
                        const std::vector<std::vector<float> *> &buffers) {
  expect_steps_same_as_cpu(ctx, c.op, {forward_step(c), backward_step(c)}, buffers);
}

// A call of n samples of op with one input x [dims] and an output y of the same dims, and dy, dx for
// backward.
dpt_op_call unary_call(const char *op, int64_t n, std::initializer_list<int64_t> dims, float *x, float *y,
                       float *dy, float *dx) {
  dpt_op_call c{};
  c.op = op;
  c.n = n;
  c.input_count = 1;
  c.inputs[0] = tensor(x, dims);
  c.output = tensor(y, dims);
  c.output_grad = dy;
  c.input_grads[0] = dx;
  return c;
}

// batch_norm with x [dims] (channels first) of n samples: training (forward STATISTICS, the slice's
// statistics copied to the global set as the executor does for one replica, or a global set given as if
// summed over other replicas, forward APPLY, backward STATISTICS, backward APPLY) and evaluation, against
// the CPU's kernel run the same way.
void check_batch_norm(dpt_backend_context *ctx, int64_t n, std::initializer_list<int64_t> dims, bool sync,
                      const std::vector<double> &global, uint32_t seed) {
  const int64_t channels = *dims.begin();
  size_t per_sample = 1;
  for (const int64_t d : dims) per_sample *= size_t(d);
  const size_t count = size_t(n) * per_sample, set = size_t(2 * channels + 1);  // doubles in one set
  std::vector<float> x = pattern(count + 1, seed), y = pattern(count + 1, seed + 1),
                     dy = pattern(count + 1, seed + 2), dx = pattern(count + 1, seed + 3),
                     w = pattern(size_t(channels), seed + 4), b = pattern(size_t(channels), seed + 5),
                     dw = pattern(size_t(channels), seed + 6), db = pattern(size_t(channels), seed + 7),
                     running = pattern(2 * size_t(channels), seed + 8), saved(2 * set, 0.0f),
                     statistics(4 * set, 0.0f);  // doubles in float-sized pairs
  for (size_t i = size_t(channels); i < running.size(); ++i)
    running[i] = running[i] * 0.5f + 1.0f;  // var > 0
  // What the kernels write starts as something else: the sets -7 (or the global batch's), saved 0.5.
  std::vector<double> sets(2 * set, -7.0), kept(set, 0.5);
  if (!global.empty()) std::copy(global.begin(), global.end(), sets.begin() + std::ptrdiff_t(set));
  std::memcpy(statistics.data(), sets.data(), sets.size() * sizeof(double));
  std::memcpy(saved.data(), kept.data(), kept.size() * sizeof(double));
  dpt_op_call c = unary_call("batch_norm", n, dims, n > 0 ? x.data() : nullptr, n > 0 ? y.data() : nullptr,
                             n > 0 ? dy.data() : nullptr, n > 0 ? dx.data() : nullptr);
  c.reals[0] = 1e-5;
  c.reals[1] = 0.1;
  c.param_count = 2;
  c.params[0] = tensor(w.data(), {channels});
  c.params[1] = tensor(b.data(), {channels});
  c.param_grads[0] = dw.data();
  c.param_grads[1] = db.data();
  c.buffer_count = 2;
  c.buffers[0] = tensor(running.data(), {channels});
  c.buffers[1] = tensor(running.data() + channels, {channels});
  c.saved = saved.data();
  c.saved_bytes = set * sizeof(double);
  c.statistics = reinterpret_cast<double *>(statistics.data());
  c.statistics_count = 2 * set;
  c.sync_statistics = sync ? 1 : 0;
  c.training = 1;
  const std::vector<std::vector<float> *> buffers = {&x,  &y,  &dy,      &dx,    &w,         &b,
                                                     &dw, &db, &running, &saved, &statistics};
  std::vector<Step> steps = {forward_step(c, DPT_OP_PHASE_STATISTICS)};
  if (global.empty()) steps.push_back(copy_step(c.statistics, c.statistics + set, set * sizeof(double)));
  steps.push_back(forward_step(c, DPT_OP_PHASE_APPLY));
  steps.push_back(backward_step(c, DPT_OP_PHASE_STATISTICS));
  steps.push_back(backward_step(c, DPT_OP_PHASE_APPLY));
  char what[64];
  std::snprintf(what, sizeof what, "batch_norm n %d%s%s", int(n), sync ? " sync" : "",
                global.empty() ? "" : " global");
  expect_steps_same_as_cpu(ctx, what, steps, buffers);
  if (n == 0) return;
  c.training = 0;  // evaluation: one call, the running statistics
  std::snprintf(what, sizeof what, "batch_norm n %d evaluation", int(n));
  expect_steps_same_as_cpu(ctx, what, {forward_step(c)}, buffers);
}

}  // namespace

// The simulator computes with the CPU reference kernels: conv2d (stride, padding, with and without bias and
// input gradient) and max_pool2d (overlapping windows, ties: the first maximum) give the CPU's bits, outputs,
// saved indices and gradients (the parameter gradients added to what was there); so do the other ops, add
// and concat (two inputs, an input gradient not needed), global_avg_pool, gelu (both forms), layer_norm
// (saved per row) and batch_norm (both phases of training, synchronized or not, the running statistics,
// n = 0, evaluation).
void test_ops_match_cpu_reference(void **) {
  dpt_backend_context *ctx = context(1);
  {  // conv2d: n 2, x [3, 7, 6], 4 outputs, kernel 3, stride 2, padding 1 -> y [4, 4, 3]
    std::vector<float> x = pattern(2 * 3 * 7 * 6, 1), w = pattern(4 * 3 * 3 * 3, 2), b = pattern(4, 3),
                       y = pattern(2 * 4 * 4 * 3, 4), dy = pattern(2 * 4 * 4 * 3, 5),
                       dx = pattern(x.size(), 6), dw = pattern(w.size(), 7), db = pattern(4, 8);
    dpt_op_call c{};
    c.op = "conv2d";
    c.n = 2;
    c.ints[0] = 4;
    c.ints[1] = 3;
    c.ints[2] = 2;
    c.ints[3] = 1;
    c.input_count = 1;
    c.inputs[0] = tensor(x.data(), {3, 7, 6});
    c.output = tensor(y.data(), {4, 4, 3});
    c.param_count = 2;
    c.params[0] = tensor(w.data(), {4, 3, 3, 3});
    c.params[1] = tensor(b.data(), {4});
    c.output_grad = dy.data();
    c.input_grads[0] = dx.data();
    c.param_grads[0] = dw.data();
    c.param_grads[1] = db.data();
    expect_same_as_cpu(ctx, c, {&x, &w, &b, &y, &dy, &dx, &dw, &db});
    // No bias, no input gradient (a first layer), stride 1, no padding: y [4, 5, 4].
    std::vector<float> y2 = pattern(2 * 4 * 5 * 4, 9), dy2 = pattern(y2.size(), 10);
    c.ints[2] = 1;
    c.ints[3] = 0;
    c.output = tensor(y2.data(), {4, 5, 4});
    c.param_count = 1;
    c.params[1] = dpt_tensor{};
    c.param_grads[1] = nullptr;
    c.output_grad = dy2.data();
    c.input_grads[0] = nullptr;
    expect_same_as_cpu(ctx, c, {&x, &w, &y2, &dy2, &dw});
  }
  {  // max_pool2d: n 2, x [3, 7, 6] of few distinct values (ties), window 3, stride 2 -> y [3, 3, 2]
    std::vector<float> x = pattern(2 * 3 * 7 * 6, 11);
    for (float &v : x) v = std::floor(v * 2.0f) * 0.5f;
    std::vector<float> y = pattern(2 * 3 * 3 * 2, 12), dy = pattern(y.size(), 13), dx = pattern(x.size(), 14),
                       saved(y.size(), -1.0f);  // int32 indices, in float-sized slots
    dpt_op_call c{};
    c.op = "max_pool2d";
    c.n = 2;
    c.ints[0] = 3;
    c.ints[1] = 2;
    c.input_count = 1;
    c.inputs[0] = tensor(x.data(), {3, 7, 6});
    c.output = tensor(y.data(), {3, 3, 2});
    c.saved = saved.data();
    c.saved_bytes = saved.size() * sizeof(int32_t);
    c.output_grad = dy.data();
    c.input_grads[0] = dx.data();
    expect_same_as_cpu(ctx, c, {&x, &y, &saved, &dy, &dx});
    c.op = "avg_pool2d";
    c.saved = nullptr;
    c.saved_bytes = 0;
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &dx});
  }
  {  // dense with bias: n 3, x [2, 5] (flattened: 10), 7 units
    std::vector<float> x = pattern(3 * 10, 21), w = pattern(7 * 10, 22), b = pattern(7, 23),
                       y = pattern(3 * 7, 24), dy = pattern(3 * 7, 25), dx = pattern(x.size(), 26),
                       dw = pattern(w.size(), 27), db = pattern(7, 28);
    dpt_op_call c = dense_call(3, 10, 7, x.data(), w.data(), y.data());
    c.inputs[0] = tensor(x.data(), {2, 5});
    c.param_count = 2;
    c.params[1] = tensor(b.data(), {7});
    c.output_grad = dy.data();
    c.input_grads[0] = dx.data();
    c.param_grads[0] = dw.data();
    c.param_grads[1] = db.data();
    expect_same_as_cpu(ctx, c, {&x, &w, &b, &y, &dy, &dx, &dw, &db});
  }
  for (const char *op : {"relu", "sigmoid", "tanh"}) {
    std::vector<float> x = pattern(2 * 3 * 5, 31), y = pattern(x.size(), 32), dy = pattern(x.size(), 33),
                       dx = pattern(x.size(), 34);
    dpt_op_call c{};
    c.op = op;
    c.n = 2;
    c.input_count = 1;
    c.inputs[0] = tensor(x.data(), {3, 5});
    c.output = tensor(y.data(), {3, 5});
    c.output_grad = dy.data();
    c.input_grads[0] = dx.data();
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &dx});
  }
  for (const int64_t form : {0, 1}) {  // gelu: erf, then the tanh approximation
    std::vector<float> x = pattern(2 * 3 * 5, 35), y = pattern(x.size(), 36), dy = pattern(x.size(), 37),
                       dx = pattern(x.size(), 38);
    for (float &v : x) v *= 4.0f;
    dpt_op_call c = unary_call("gelu", 2, {3, 5}, x.data(), y.data(), dy.data(), dx.data());
    c.ints[0] = form;
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &dx});
  }
  {  // add: n 3, two inputs [2, 4]; then without the second input's gradient
    std::vector<float> a = pattern(3 * 8, 41), b = pattern(3 * 8, 42), y = pattern(3 * 8, 43),
                       dy = pattern(3 * 8, 44), da = pattern(3 * 8, 45), db = pattern(3 * 8, 46);
    dpt_op_call c = unary_call("add", 3, {2, 4}, a.data(), y.data(), dy.data(), da.data());
    c.input_count = 2;
    c.inputs[1] = tensor(b.data(), {2, 4});
    c.input_grads[1] = db.data();
    expect_same_as_cpu(ctx, c, {&a, &b, &y, &dy, &da, &db});
    std::vector<float> dy2 = pattern(3 * 8, 47), da2 = pattern(3 * 8, 48);
    c.output_grad = dy2.data();
    c.input_grads[0] = da2.data();
    c.input_grads[1] = nullptr;
    expect_same_as_cpu(ctx, c, {&a, &b, &y, &dy2, &da2});
  }
  {  // concat: n 2, [2, 3, 3] and [1, 3, 3] -> [3, 3, 3]; three inputs, the middle one's gradient not needed
    std::vector<float> a = pattern(2 * 18, 51), b = pattern(2 * 9, 52), d = pattern(2 * 9, 53),
                       y = pattern(2 * 27, 54), dy = pattern(2 * 27, 55), da = pattern(a.size(), 56),
                       db = pattern(b.size(), 57), y4 = pattern(2 * 36, 58), dy4 = pattern(2 * 36, 59),
                       dd = pattern(d.size(), 60);
    dpt_op_call c = unary_call("concat", 2, {2, 3, 3}, a.data(), y.data(), dy.data(), da.data());
    c.input_count = 2;
    c.inputs[1] = tensor(b.data(), {1, 3, 3});
    c.input_grads[1] = db.data();
    c.output = tensor(y.data(), {3, 3, 3});
    expect_same_as_cpu(ctx, c, {&a, &b, &d, &y, &dy, &da, &db, &dd});
    c.input_count = 3;
    c.inputs[2] = tensor(d.data(), {1, 3, 3});
    c.input_grads[1] = nullptr;
    c.input_grads[2] = dd.data();
    c.output = tensor(y4.data(), {4, 3, 3});
    c.output_grad = dy4.data();
    expect_same_as_cpu(ctx, c, {&a, &b, &d, &y4, &dy4, &da, &dd});
  }
  {  // global_avg_pool: n 2, x [3, 4, 5] -> y [3]
    std::vector<float> x = pattern(2 * 60, 61), y = pattern(2 * 3, 62), dy = pattern(2 * 3, 63),
                       dx = pattern(x.size(), 64);
    dpt_op_call c = unary_call("global_avg_pool", 2, {3, 4, 5}, x.data(), y.data(), dy.data(), dx.data());
    c.output = tensor(y.data(), {3});
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &dx});
  }
  {  // layer_norm: n 2, x [3, 5] (rows of 5), weight and bias [5]; saved: mean and 1/std of each row
    std::vector<float> x = pattern(2 * 15, 71), y = pattern(x.size(), 72), dy = pattern(x.size(), 73),
                       dx = pattern(x.size(), 74), w = pattern(5, 75), b = pattern(5, 76),
                       dw = pattern(5, 77), db = pattern(5, 78), saved(2 * 2 * 3, -1.0f);
    dpt_op_call c = unary_call("layer_norm", 2, {3, 5}, x.data(), y.data(), dy.data(), dx.data());
    c.reals[0] = 1e-5;
    c.param_count = 2;
    c.params[0] = tensor(w.data(), {5});
    c.params[1] = tensor(b.data(), {5});
    c.param_grads[0] = dw.data();
    c.param_grads[1] = db.data();
    c.saved = saved.data();
    c.saved_bytes = saved.size() * sizeof(float);
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &dx, &w, &b, &dw, &db, &saved});
    c.input_grads[0] = nullptr;  // a first layer: only the parameter gradients
    c.param_grads[1] = nullptr;
    expect_same_as_cpu(ctx, c, {&x, &y, &dy, &w, &b, &dw, &saved});
  }
  // batch_norm: x [c, h, w] and x [c]; local statistics (one replica: the executor's copy) and the global
  // batch's (as if summed over other replicas: normalised with them when synchronized, the running
  // statistics follow them either way), a slice of no samples.
  const std::vector<double> global3 = {1.5,  -2.0, 0.25, 9.0,
                                       14.0, 3.0,  40.0},         // 3 channels: sums, squares, count
      global4 = {0.5, 1.0, -1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 12.0};  // 4 channels of [4]
  check_batch_norm(ctx, 2, {3, 4, 5}, false, {}, 81);
  check_batch_norm(ctx, 3, {4}, true, {}, 82);
  check_batch_norm(ctx, 2, {3, 4, 5}, true, global3, 83);
  check_batch_norm(ctx, 3, {4}, false, global4, 84);
  check_batch_norm(ctx, 0, {3, 4, 5}, true, global3, 85);
  check_batch_norm(ctx, 0, {4}, false, global4, 86);
  api->context_destroy(ctx);
}

// op_supported: every op the CPU reference has (dpt::cpu::find_op) but those the real CUDA module does not
// run (yet: dropout), and flatten (a view no
// kernel runs), F32 only. Those are refused by op_forward and op_backward too.
void test_op_supported(void **) {
  const std::vector<std::string> not_on_cuda{"dropout"};
  for (const char *op : {"dense", "linear", "conv2d", "avg_pool2d", "max_pool2d", "relu", "sigmoid", "tanh",
                         "add", "concat", "global_avg_pool", "gelu", "layer_norm", "batch_norm", "dropout",
                         "causal_self_attention", "position_embedding", "token_embedding"}) {
    assert_non_null(dpt::cpu::find_op(op));
    const int want = std::find(not_on_cuda.begin(), not_on_cuda.end(), op) == not_on_cuda.end() ? 1 : 0;
    if (api->op_supported(op, DPT_DTYPE_F32, DPT_DTYPE_F32) != want)
      fail_msg("op_supported(%s, F32) is not %d", op, want);
    for (const int32_t dtype :
         std::initializer_list<int32_t>{DPT_DTYPE_BF16, DPT_DTYPE_F16, DPT_DTYPE_I32, 99})
      assert_int_equal(api->op_supported(op, dtype, DPT_DTYPE_F32), 0);
  }
  // Matrix products on 16-bit inputs (dpt_op_call::matmul_dtype), as the real module; no other types.
  for (const int32_t matmul : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    assert_int_equal(api->op_supported("dense", DPT_DTYPE_F32, matmul), 1);
    assert_int_equal(api->op_supported("relu", DPT_DTYPE_F32, matmul), 1);
  }
  assert_int_equal(api->op_supported("dense", DPT_DTYPE_F32, DPT_DTYPE_I32), 0);
  assert_int_equal(api->op_supported("dense", DPT_DTYPE_F32, 99), 0);
  assert_int_equal(api->op_supported("flatten", DPT_DTYPE_F32, DPT_DTYPE_F32), 1);
  assert_int_equal(api->op_supported("flatten", DPT_DTYPE_BF16, DPT_DTYPE_F32), 0);
  assert_int_equal(api->op_supported("softmax", DPT_DTYPE_F32, DPT_DTYPE_F32), 0);
  assert_int_equal(api->op_supported("Dense", DPT_DTYPE_F32, DPT_DTYPE_F32), 0);
  assert_int_equal(api->op_supported("", DPT_DTYPE_F32, DPT_DTYPE_F32), 0);
  assert_int_equal(api->op_supported(nullptr, DPT_DTYPE_F32, DPT_DTYPE_F32), 0);

  dpt_backend_context *ctx = context(0);
  float *d = alloc_floats(ctx, 64);
  dpt_op_call c{};
  c.op = "dropout";
  c.n = 2;
  c.reals[0] = 0.5;
  c.training = 1;
  c.input_count = 1;
  c.inputs[0] = tensor(d, {4});
  c.output = tensor(d + 8, {4});
  c.saved = d + 16;
  c.output_grad = d + 24;
  c.input_grads[0] = d + 32;
  const int kInvalid = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  EXPECT_ERROR(kInvalid, "cuda:0: op_forward: op 'dropout' is not supported by the CUDA module",
               api->op_forward(ctx, &c, error, sizeof error));
  EXPECT_ERROR(kInvalid, "cuda:0: op_backward: op 'dropout' is not supported",
               api->op_backward(ctx, &c, error, sizeof error));
  c.op = "flatten";
  EXPECT_ERROR(kInvalid, "flatten is a view", api->op_forward(ctx, &c, error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  api->context_destroy(ctx);
}

// Op calls are checked at the call by the rules of op_call.h that hold for every op: the op, n, the phase,
// the counts, every tensor's rank, dims and dtype; then every buffer (device memory of the context's device,
// inside one live allocation, sized from the shapes, saved_bytes and statistics_count), and the shapes by the
// core's descriptor of the op (src/ops). Queued work re-checks its buffers when it runs.
void test_op_checks(void **) {
  dpt_backend_context *ctx = context(0), *other = context(0);
  float *d = alloc_floats(ctx, 64);
  float host[16] = {};
  const int kInvalid = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  dpt_op_call relu{};
  relu.op = "relu";
  relu.n = 2;
  relu.input_count = 1;
  relu.inputs[0] = tensor(d, {4});
  relu.output = tensor(d + 8, {4});
  relu.output_grad = d + 16;
  relu.input_grads[0] = d + 24;
  OK(api->op_forward(ctx, &relu, error, sizeof error));
  OK(api->op_backward(ctx, &relu, error, sizeof error));
  EXPECT_ERROR(kInvalid, "op_forward(relu): NULL context",
               api->op_forward(nullptr, &relu, error, sizeof error));
  EXPECT_ERROR(kInvalid, "cuda:0: op_forward: NULL call", api->op_forward(ctx, nullptr, error, sizeof error));
  EXPECT_ERROR(kInvalid, "cuda:0: op_backward: NULL call",
               api->op_backward(ctx, nullptr, error, sizeof error));
  const auto expect_refused = [&](const char *text, auto change) {
    dpt_op_call c = relu;
    change(c);
    EXPECT_ERROR(kInvalid, text, api->op_forward(ctx, &c, error, sizeof error));
  };
  expect_refused("cuda:0: op_forward: NULL op name", [](dpt_op_call &c) { c.op = nullptr; });
  expect_refused("cuda:0: op_forward: unknown op 'softmax'", [](dpt_op_call &c) { c.op = "softmax"; });
  expect_refused("cuda:0: op_forward(relu): n -1 samples", [](dpt_op_call &c) { c.n = -1; });
  expect_refused("op_forward(relu): n 2147483648 samples",
                 [](dpt_op_call &c) { c.n = int64_t(INT32_MAX) + 1; });
  expect_refused("op_forward(relu): phase 3", [](dpt_op_call &c) { c.phase = 3; });
  expect_refused("op_forward(relu): input_count 0 (1 .. 4)", [](dpt_op_call &c) { c.input_count = 0; });
  expect_refused("op_forward(relu): input_count 5 (1 .. 4)", [](dpt_op_call &c) { c.input_count = 5; });
  expect_refused("op_forward(relu): inputs[1] has rank 0", [](dpt_op_call &c) { c.input_count = 2; });
  expect_refused("op_forward(relu): param_count -1 (0 .. 4)", [](dpt_op_call &c) { c.param_count = -1; });
  expect_refused("op_forward(relu): param_count 5 (0 .. 4)", [](dpt_op_call &c) { c.param_count = 5; });
  expect_refused("op_forward(relu): params[0] has rank 0", [](dpt_op_call &c) { c.param_count = 1; });
  expect_refused("op_forward(relu): buffer_count 5 (0 .. 4)", [](dpt_op_call &c) { c.buffer_count = 5; });
  expect_refused("op_forward(relu): buffers[0] has rank 0", [](dpt_op_call &c) { c.buffer_count = 1; });
  expect_refused("op_forward(relu): inputs[0] has rank 0", [](dpt_op_call &c) { c.inputs[0].rank = 0; });
  expect_refused("output has rank 5", [](dpt_op_call &c) { c.output.rank = 5; });
  expect_refused("inputs[0] has dims [0]", [](dpt_op_call &c) { c.inputs[0].dims[0] = 0; });
  expect_refused("inputs[0] has dims [65536, 65536]", [](dpt_op_call &c) {
    c.inputs[0] = tensor(c.inputs[0].data, {65536, 65536});  // more than INT_MAX elements
  });
  expect_refused("inputs[0] has dtype 1 (bf16): this module runs f32 only",
                 [](dpt_op_call &c) { c.inputs[0].dtype = DPT_DTYPE_BF16; });
  expect_refused("op_forward(relu): matmul_dtype 3 (float32, bfloat16 or float16)",
                 [](dpt_op_call &c) { c.matmul_dtype = DPT_DTYPE_I32; });
  expect_refused("inputs[0] 0x", [&](dpt_op_call &c) { c.inputs[0].data = host; });
  expect_refused("not device memory", [&](dpt_op_call &c) { c.inputs[0].data = host; });
  expect_refused("op_forward(relu): output [", [&](dpt_op_call &c) { c.output.data = d + 60; });
  expect_refused("runs past the end", [&](dpt_op_call &c) { c.output.data = d + 60; });
  expect_refused("NULL pointer (output)", [](dpt_op_call &c) { c.output.data = nullptr; });
  expect_refused("op_forward(relu): output",
                 [](dpt_op_call &c) { c.output.data = reinterpret_cast<char *>(c.output.data) + 2; });
  {  // no samples: a no-op, whatever the pointers
    dpt_op_call c = relu;
    c.n = 0;
    c.inputs[0].data = c.output.data = nullptr;
    c.saved = host;
    c.saved_bytes = 64;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    OK(api->op_backward(ctx, &c, error, sizeof error));
    c.inputs[0].rank = 0;  // but the call itself is checked
    EXPECT_ERROR(kInvalid, "inputs[0] has rank 0", api->op_forward(ctx, &c, error, sizeof error));
  }
  {  // backward needs dy; dx is optional but checked when given
    dpt_op_call c = relu;
    c.output_grad = nullptr;
    EXPECT_ERROR(kInvalid, "op_backward(relu): NULL pointer (output_grad)",
                 api->op_backward(ctx, &c, error, sizeof error));
    OK(api->op_forward(ctx, &c, error, sizeof error));  // forward does not read it
    c = relu;
    c.input_grads[0] = d + 57;
    EXPECT_ERROR(kInvalid, "input_grads[0] [", api->op_backward(ctx, &c, error, sizeof error));
    c.input_grads[0] = nullptr;
    OK(api->op_backward(ctx, &c, error, sizeof error));
  }
  {  // parameters and buffers: their whole shape, required; parameter gradients optional, checked when given
    dpt_op_call c{};
    c.op = "layer_norm";
    c.n = 2;
    c.reals[0] = 1e-5;
    c.input_count = 1;
    c.inputs[0] = tensor(d, {4});
    c.output = tensor(d + 8, {4});
    c.param_count = 2;
    c.params[0] = tensor(d + 16, {4});
    c.params[1] = tensor(d + 20, {4});
    c.saved = d + 24;
    c.saved_bytes = 2 * 2 * sizeof(float);
    c.output_grad = d + 32;
    c.input_grads[0] = d + 40;
    c.param_grads[0] = d + 48;
    c.param_grads[1] = nullptr;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    OK(api->op_backward(ctx, &c, error, sizeof error));
    dpt_op_call bad = c;
    bad.params[1].data = nullptr;
    EXPECT_ERROR(kInvalid, "op_forward(layer_norm): NULL pointer (params[1])",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.params[1].data = d + 62;
    EXPECT_ERROR(kInvalid, "params[1] [", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.param_grads[0] = d + 61;
    EXPECT_ERROR(kInvalid, "op_backward(layer_norm): param_grads[0] [",
                 api->op_backward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.buffer_count = 1;
    bad.buffers[0] = tensor(d + 60, {4});
    OK(api->op_forward(ctx, &bad, error, sizeof error));  // (layer_norm does not read it)
    bad.buffers[0].dims[0] = 5;
    EXPECT_ERROR(kInvalid, "buffers[0] [", api->op_forward(ctx, &bad, error, sizeof error));
    bad.buffers[0].data = nullptr;
    EXPECT_ERROR(kInvalid, "NULL pointer (buffers[0])", api->op_forward(ctx, &bad, error, sizeof error));
  }
  {  // saved: saved_bytes bytes, aligned to 8, required in both passes when saved_bytes > 0
    dpt_op_call c{};
    c.op = "max_pool2d";
    c.n = 2;
    c.ints[0] = 2;
    c.ints[1] = 2;
    c.input_count = 1;
    c.inputs[0] = tensor(d, {1, 4, 4});  // 32 floats
    c.output = tensor(d + 32, {1, 2, 2});
    c.saved = d + 40;
    c.saved_bytes = 8 * sizeof(int32_t);
    c.output_grad = d + 48;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    OK(api->op_backward(ctx, &c, error, sizeof error));
    c.saved = nullptr;
    EXPECT_ERROR(kInvalid, "op_forward(max_pool2d): NULL pointer (saved)",
                 api->op_forward(ctx, &c, error, sizeof error));
    EXPECT_ERROR(kInvalid, "op_backward(max_pool2d): NULL pointer (saved)",
                 api->op_backward(ctx, &c, error, sizeof error));
    c.saved = d + 58;
    EXPECT_ERROR(kInvalid, "saved [", api->op_forward(ctx, &c, error, sizeof error));
    c.saved = reinterpret_cast<char *>(d + 40) + 4;
    EXPECT_ERROR(kInvalid, "saved 0x", api->op_forward(ctx, &c, error, sizeof error));
    EXPECT_ERROR(kInvalid, "is not aligned to 8 bytes", api->op_forward(ctx, &c, error, sizeof error));
    c.saved = host;
    EXPECT_ERROR(kInvalid, "saved 0x", api->op_forward(ctx, &c, error, sizeof error));
    EXPECT_ERROR(kInvalid, "not device memory", api->op_forward(ctx, &c, error, sizeof error));
  }
  {  // statistics: statistics_count doubles, aligned to 8, required when statistics_count > 0, also at n = 0
    // in a phase of batch_norm; the parameters and buffers are checked then too, the tensors of samples not
    float *s = alloc_floats(ctx, 4 * 7);  // 2 x (2c + 1) doubles for 3 channels
    dpt_op_call c{};
    c.op = "batch_norm";
    c.n = 0;
    c.reals[0] = 1e-5;
    c.reals[1] = 0.1;
    c.input_count = 1;
    c.inputs[0] = tensor(nullptr, {3, 2, 2});
    c.output = tensor(nullptr, {3, 2, 2});
    c.param_count = 2;
    c.params[0] = tensor(d, {3});
    c.params[1] = tensor(d + 4, {3});
    c.buffer_count = 2;
    c.buffers[0] = tensor(d + 8, {3});
    c.buffers[1] = tensor(d + 12, {3});
    c.saved = d + 16;  // (2c + 1) doubles
    c.saved_bytes = 7 * sizeof(double);
    c.statistics = reinterpret_cast<double *>(s);
    c.statistics_count = 14;
    c.training = 1;
    c.phase = DPT_OP_PHASE_STATISTICS;
    c.param_grads[0] = d + 40;
    c.param_grads[1] = d + 44;
    OK(api->mem_set(ctx, s, 0x40, 4 * 7 * sizeof(float), error, sizeof error));
    OK(api->op_forward(ctx, &c, error, sizeof error));
    c.phase = DPT_OP_PHASE_APPLY;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    c.phase = DPT_OP_PHASE_STATISTICS;
    OK(api->op_backward(ctx, &c, error, sizeof error));
    c.phase = DPT_OP_PHASE_APPLY;
    OK(api->op_backward(ctx, &c, error, sizeof error));
    OK(api->context_synchronize(ctx, error, sizeof error));
    // n = 0 wrote this slice's statistics: zero sums and count (the first set; the second is untouched).
    std::vector<double> statistics(14, -1.0), untouched(7);
    std::memset(untouched.data(), 0x40, untouched.size() * sizeof(double));
    OK(api->copy_to_host(ctx, statistics.data(), s, sizeof(double) * 14, error, sizeof error));
    OK(api->context_synchronize(ctx, error, sizeof error));
    for (size_t i = 0; i < 7; ++i) assert_true(statistics[i] == 0.0);
    assert_memory_equal(statistics.data() + 7, untouched.data(), 7 * sizeof(double));
    dpt_op_call bad = c;
    bad.statistics = nullptr;
    EXPECT_ERROR(kInvalid, "op_backward(batch_norm): NULL pointer (statistics)",
                 api->op_backward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.statistics_count = 10;
    EXPECT_ERROR(kInvalid, "op_forward(batch_norm): statistics_count 10: the op has 14 (its descriptor)",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad.statistics_count = 0;  // the descriptor's extent then
    OK(api->op_forward(ctx, &bad, error, sizeof error));
    bad.statistics = nullptr;
    EXPECT_ERROR(kInvalid, "NULL pointer (statistics)", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.buffer_count = 1;
    EXPECT_ERROR(kInvalid,
                 "buffer_count 1: the descriptor of batch_norm lays out 2 (buffers[1]: running_var [3])",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.statistics_count = 15;
    EXPECT_ERROR(kInvalid, "statistics [", api->op_forward(ctx, &bad, error, sizeof error));
    EXPECT_ERROR(kInvalid, "runs past the end", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.statistics = reinterpret_cast<double *>(s + 1);
    EXPECT_ERROR(kInvalid, "is not aligned to 8 bytes", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.saved = nullptr;
    EXPECT_ERROR(kInvalid, "NULL pointer (saved)", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.buffers[1].data = host;
    EXPECT_ERROR(kInvalid, "buffers[1] 0x", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.params[0].dtype = DPT_DTYPE_F16;
    EXPECT_ERROR(kInvalid, "params[0] has dtype 2 (f16)", api->op_forward(ctx, &bad, error, sizeof error));
    OK(api->mem_free(ctx, s, error, sizeof error));
  }
  {  // the shapes, by the core's descriptor of the op (src/ops): what the CPU kernel will read and write
    expect_refused("op_forward(relu): output is [5], the descriptor of relu lays out [4]",
                   [](dpt_op_call &c) { c.output.dims[0] = 5; });
    expect_refused("op_forward(relu): input_count 2: relu takes 1 .. 1 inputs", [&](dpt_op_call &c) {
      c.input_count = 2;
      c.inputs[1] = tensor(d + 32, {4});
    });
    dpt_op_call dense = dense_call(2, 8, 4, d, d + 16, d + 48);  // x [8], weight [4, 8], y [4]
    OK(api->op_forward(ctx, &dense, error, sizeof error));
    dpt_op_call bad = dense;
    bad.param_count =
        2;  // a bias without ints[1] set: more parameters than laid out are the kernel's to read
    bad.params[1] = tensor(d + 56, {4});
    OK(api->op_forward(ctx, &bad, error, sizeof error));
    bad = dense;
    bad.param_count = 0;
    EXPECT_ERROR(
        kInvalid,
        "op_forward(dense): param_count 0: the descriptor of dense lays out 1 (params[0]: weight [4, 8])",
        api->op_forward(ctx, &bad, error, sizeof error));
    bad = dense;
    bad.params[0].dims[1] = 7;
    EXPECT_ERROR(kInvalid,
                 "op_forward(dense): params[0] is [4, 7], the descriptor of dense lays out weight [4, 8]",
                 api->op_forward(ctx, &bad, error, sizeof error));
    dpt_op_call conv = dense;
    conv.op = "conv2d";
    conv.ints[0] = 2;  // out_c
    conv.ints[1] = 3;  // kernel
    conv.ints[2] = 1;  // stride
    conv.ints[3] = 0;  // padding
    conv.inputs[0] = tensor(d, {1, 4, 4});
    conv.output = tensor(d + 16, {2, 2, 2});
    conv.params[0] = tensor(d + 32, {2, 1, 3, 3});
    conv.n = 1;
    OK(api->op_forward(ctx, &conv, error, sizeof error));
    bad = conv;
    bad.output.dims[1] = 3;
    EXPECT_ERROR(kInvalid,
                 "op_forward(conv2d): output is [2, 3, 2], the descriptor of conv2d lays out [2, 2, 2]",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad = conv;
    bad.ints[1] = 5;
    EXPECT_ERROR(kInvalid, "conv2d kernel 5 does not fit the padded input 1x4x4 (the descriptor of conv2d)",
                 api->op_forward(ctx, &bad, error, sizeof error));
    // saved: the descriptor's extent also when saved_bytes is 0; less than the descriptor's is refused
    dpt_op_call pool{};
    pool.op = "max_pool2d";
    pool.n = 2;
    pool.ints[0] = 2;
    pool.ints[1] = 2;
    pool.input_count = 1;
    pool.inputs[0] = tensor(d, {1, 4, 4});
    pool.output = tensor(d + 32, {1, 2, 2});
    pool.saved = d + 40;  // 8 int32
    OK(api->op_forward(ctx, &pool, error, sizeof error));
    pool.saved = d + 58;
    EXPECT_ERROR(kInvalid, "saved [", api->op_forward(ctx, &pool, error, sizeof error));
    pool.saved = nullptr;
    EXPECT_ERROR(kInvalid, "NULL pointer (saved)", api->op_forward(ctx, &pool, error, sizeof error));
    pool.saved = d + 40;
    pool.saved_bytes = 16;
    EXPECT_ERROR(kInvalid, "op_forward(max_pool2d): saved_bytes 16: the op keeps 32 (its descriptor)",
                 api->op_forward(ctx, &pool, error, sizeof error));
    pool.ints[0] = 5;
    EXPECT_ERROR(kInvalid, "(the descriptor of max_pool2d)",
                 api->op_forward(ctx, &pool, error, sizeof error));
    dpt_op_call norm{};
    norm.op = "layer_norm";
    norm.n = 1;
    norm.input_count = 1;
    norm.inputs[0] = tensor(d, {4});
    norm.output = tensor(d + 8, {4});
    norm.param_count = 2;
    norm.params[0] = tensor(d + 16, {4});
    norm.params[1] = tensor(d + 20, {4});
    norm.saved = d + 24;
    EXPECT_ERROR(kInvalid, "layer_norm eps must be positive (the descriptor of layer_norm)",
                 api->op_forward(ctx, &norm, error, sizeof error));
  }
  {  // flatten is a view: supported, never called
    dpt_op_call c = relu;
    c.op = "flatten";
    EXPECT_ERROR(kInvalid, "cuda:0: op_forward(flatten): flatten is a view",
                 api->op_forward(ctx, &c, error, sizeof error));
    EXPECT_ERROR(kInvalid, "cuda:0: op_backward(flatten): flatten is a view",
                 api->op_backward(ctx, &c, error, sizeof error));
  }
  OK(api->context_synchronize(ctx, error, sizeof error));
  // Use after free: an op queued on ctx reads a buffer of other, which other frees before ctx runs it.
  float *theirs = alloc_floats(other, 8);
  dpt_op_call c = relu;
  c.inputs[0].data = theirs;
  OK(api->op_forward(ctx, &c, error, sizeof error));
  OK(api->mem_free(other, theirs, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:0: op_forward(relu): inputs[0]",
               api->context_synchronize(ctx, error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  api->context_destroy(other);
  api->context_destroy(ctx);
}

// accumulate (y += x) and softmax_cross_entropy: the CPU reference's bits; a label outside [0, classes)
// gives a NaN loss, counts as wrong and gets no -1 in dlogits; DPT_BACKEND_IGNORE_LABEL adds nothing and
// gets a zero row.
void test_accumulate_and_loss(void **) {
  dpt_backend_context *ctx = context(0);
  float *y = upload(ctx, {1, 2, 3, 4}), *x = upload(ctx, {10, 20, 30, 40});
  OK(api->accumulate(ctx, y, x, 4, error, sizeof error));
  OK(api->accumulate(ctx, y, x, 0, error, sizeof error));
  const std::vector<float> sums = {11, 22, 33, 44};
  assert_memory_equal(download(ctx, y, 4).data(), sums.data(), 4 * sizeof(float));
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "overlap",
               api->accumulate(ctx, y + 1, y, 3, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "runs past the end",
               api->accumulate(ctx, y, x + 1, 4, error, sizeof error));

  constexpr size_t n = 4, classes = 5;
  const std::vector<float> logits = pattern(n * classes, 41);
  const int32_t labels[n] = {1, 5, -2, 0};
  float *dz = upload(ctx, logits), *dd = alloc_floats(ctx, n * classes);
  void *memory = nullptr;
  OK(api->mem_alloc(ctx, n * sizeof(int32_t) + sizeof(dpt_backend_loss), &memory, error, sizeof error));
  auto *dloss = static_cast<dpt_backend_loss *>(memory);
  auto *dlabels = reinterpret_cast<int32_t *>(dloss + 1);
  OK(api->copy_to_device(ctx, dlabels, labels, sizeof labels, error, sizeof error));
  OK(api->softmax_cross_entropy(ctx, n, classes, dz, dlabels, dd, dloss, error, sizeof error));
  dpt_backend_loss got{};
  std::vector<float> dlogits(n * classes);
  OK(api->copy_to_host(ctx, &got, dloss, sizeof got, error, sizeof error));
  OK(api->copy_to_host(ctx, dlogits.data(), dd, dlogits.size() * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  assert_true(std::isnan(got.loss_sum));
  // The CPU's rows of the valid labels, and of each invalid row with two valid labels: every entry but the
  // label's is softmax(z), so each entry of the invalid row is the CPU's for one of them.
  const int32_t valid[2] = {labels[0], labels[3]};
  std::vector<float> cpu_d(n * classes), row0(classes), row1(classes);
  uint64_t correct = 0;
  for (size_t s : {size_t(0), size_t(3)}) {
    const dpt::cpu::LossStats st = dpt::cpu::softmax_cross_entropy(
        &logits[s * classes], &valid[s == 0 ? 0 : 1], 1, classes, &cpu_d[s * classes]);
    correct += st.correct;
    assert_memory_equal(&dlogits[s * classes], &cpu_d[s * classes], classes * sizeof(float));
  }
  assert_int_equal(got.correct, correct);
  for (size_t s : {size_t(1), size_t(2)}) {
    const int32_t zero = 0, one = 1;
    dpt::cpu::softmax_cross_entropy(&logits[s * classes], &zero, 1, classes, row0.data());
    dpt::cpu::softmax_cross_entropy(&logits[s * classes], &one, 1, classes, row1.data());
    for (size_t k = 0; k < classes; ++k) {
      const float want = k == 0 ? row1[k] : row0[k];
      assert_memory_equal(&dlogits[s * classes + k], &want, sizeof want);
    }
  }
  // Valid labels only: the loss is the CPU's whole-batch sum, bit for bit.
  std::vector<float> two(logits.begin(), logits.begin() + classes);
  two.insert(two.end(), logits.begin() + 3 * classes, logits.end());
  OK(api->copy_to_device(ctx, dz, two.data(), two.size() * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(ctx, dlabels, valid, sizeof valid, error, sizeof error));
  OK(api->softmax_cross_entropy(ctx, 2, classes, dz, dlabels, nullptr, dloss, error, sizeof error));
  OK(api->copy_to_host(ctx, &got, dloss, sizeof got, error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  const dpt::cpu::LossStats want = dpt::cpu::softmax_cross_entropy(two.data(), valid, 2, classes, nullptr);
  assert_memory_equal(&got.loss_sum, &want.loss_sum, sizeof(double));
  assert_int_equal(got.correct, want.correct);

  // An ignored row between them: the same sum, the same counts, a zero gradient row.
  std::vector<float> three(two.begin(), two.begin() + classes);
  three.insert(three.end(), logits.begin() + classes, logits.begin() + 2 * classes);
  three.insert(three.end(), two.begin() + classes, two.end());
  const int32_t with_ignored[3] = {valid[0], DPT_BACKEND_IGNORE_LABEL, valid[1]};
  OK(api->copy_to_device(ctx, dz, three.data(), three.size() * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(ctx, dlabels, with_ignored, sizeof with_ignored, error, sizeof error));
  OK(api->softmax_cross_entropy(ctx, 3, classes, dz, dlabels, dd, dloss, error, sizeof error));
  OK(api->copy_to_host(ctx, &got, dloss, sizeof got, error, sizeof error));
  OK(api->copy_to_host(ctx, dlogits.data(), dd, 3 * classes * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  assert_memory_equal(&got.loss_sum, &want.loss_sum, sizeof(double));
  assert_int_equal(got.correct, want.correct);
  for (size_t k = 0; k < classes; ++k) assert_true(dlogits[classes + k] == 0.0f);
  api->context_destroy(ctx);
}

}  // namespace sim_test
