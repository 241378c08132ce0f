// test_sim_cuda's op cases: the simulator computes with the CPU reference kernels (bit for bit the results
// of dptrain_cpu_ops called here on host buffers), supports exactly the real CUDA module's ops, and checks
// op calls against op_call.h; accumulate and the loss are the CPU's too.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "test_sim_cuda.hpp"

namespace sim_test {

namespace {

// One op's forward and backward calls, run on host buffers through the CPU reference (dptrain_cpu_ops, with
// host scratch) and on device copies of the same buffers through the simulator. Every pointer of the call
// points at the start of one of buffers; each buffer (outputs and gradients too) starts with the same bits
// on both sides, and after both runs every buffer must be bitwise the same. The simulator's results appear
// only at synchronize.
void expect_same_as_cpu(dpt_backend_context *ctx, const dpt_op_call &host_call,
                        const std::vector<std::vector<float> *> &buffers) {
  std::vector<float *> device(buffers.size());
  for (size_t b = 0; b < buffers.size(); ++b) device[b] = upload(ctx, *buffers[b]);
  const auto to_device = [&](const void *p) -> float * {
    if (p == nullptr) return nullptr;
    for (size_t b = 0; b < buffers.size(); ++b)
      if (p == buffers[b]->data()) return device[b];
    fail_msg("a pointer of the call is not one of the buffers");
    return nullptr;
  };
  dpt_op_call sim = host_call;
  for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) {
    sim.inputs[i].data = to_device(host_call.inputs[i].data);
    sim.input_grads[i] = to_device(host_call.input_grads[i]);
  }
  sim.output.data = to_device(host_call.output.data);
  for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) {
    sim.params[p].data = to_device(host_call.params[p].data);
    sim.param_grads[p] = to_device(host_call.param_grads[p]);
  }
  sim.saved = to_device(host_call.saved);
  sim.output_grad = to_device(host_call.output_grad);
  // (the simulator's forward ignores the backward members: the same call serves both passes)
  OK(api->op_forward(ctx, &sim, error, sizeof error));
  OK(api->op_backward(ctx, &sim, error, sizeof error));

  const std::vector<std::vector<float>> before = [&] {
    std::vector<std::vector<float>> copy;
    for (const auto *b : buffers) copy.push_back(*b);
    return copy;
  }();
  const dpt::cpu::OpKernel *kernel = dpt::cpu::find_op(host_call.op);
  assert_non_null(kernel);
  dpt_op_call cpu = host_call;
  std::vector<float> scratch;
  if (kernel->scratch_bytes != nullptr) {
    scratch.resize(kernel->scratch_bytes(cpu) / sizeof(float) + 1);
    cpu.scratch = scratch.data();
    cpu.scratch_bytes = scratch.size() * sizeof(float);
  }
  dpt_op_call forward = cpu;  // a forward call has no backward members
  forward.output_grad = nullptr;
  for (int i = 0; i < DPT_OP_MAX_INPUTS; ++i) forward.input_grads[i] = nullptr;
  for (int p = 0; p < DPT_OP_MAX_PARAMS; ++p) forward.param_grads[p] = nullptr;
  kernel->forward(forward);
  kernel->backward(cpu);

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
      fail_msg("%s: buffer %zu differs between the simulator and the CPU reference", host_call.op, b);
  }
  print_message("%-10s %zu buffers bitwise equal to the CPU reference's (%zu written)\n", host_call.op,
                buffers.size(), changed);
  assert_true(changed > 0);
  for (float *d : device) OK(api->mem_free(ctx, d, error, sizeof error));
}

}  // namespace

// The simulator computes with the CPU reference kernels: conv2d (stride, padding, with and without bias and
// input gradient) and max_pool2d (overlapping windows, ties: the first maximum) give the CPU's bits, outputs,
// saved indices and gradients (the parameter gradients added to what was there); so do the other ops.
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
    c.output_grad = dy.data();
    c.input_grads[0] = dx.data();
    expect_same_as_cpu(ctx, c, {&x, &y, &saved, &dy, &dx});
    c.op = "avg_pool2d";
    c.saved = nullptr;
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
  api->context_destroy(ctx);
}

// op_supported: the ops of the real CUDA module, every op the CPU reference has but dropout (and flatten, a
// view no kernel runs), F32 only. Dropout is refused by op_forward and op_backward too.
void test_op_supported(void **) {
  for (const char *op :
       {"dense", "conv2d", "avg_pool2d", "max_pool2d", "relu", "sigmoid", "tanh", "dropout"}) {
    assert_non_null(dpt::cpu::find_op(op));
    const int want = std::strcmp(op, "dropout") != 0 ? 1 : 0;
    if (api->op_supported(op, DPT_DTYPE_F32) != want) fail_msg("op_supported(%s, F32) is not %d", op, want);
    for (const int32_t dtype :
         std::initializer_list<int32_t>{DPT_DTYPE_BF16, DPT_DTYPE_F16, DPT_DTYPE_I32, 99})
      assert_int_equal(api->op_supported(op, dtype), 0);
  }
  assert_int_equal(api->op_supported("flatten", DPT_DTYPE_F32), 1);
  assert_int_equal(api->op_supported("softmax", DPT_DTYPE_F32), 0);
  assert_int_equal(api->op_supported(nullptr, DPT_DTYPE_F32), 0);

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

// Op calls are checked at the call: the op, its counts, dtypes and shapes (op_call.h), then every buffer
// (device memory of the context's device, inside one live allocation, sized from the shapes); queued work
// re-checks its buffers when it runs.
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
  expect_refused("op_forward(relu): input_count 2, expected 1", [](dpt_op_call &c) { c.input_count = 2; });
  expect_refused("op_forward(relu): param_count 1, expected 0 .. 0",
                 [](dpt_op_call &c) { c.param_count = 1; });
  expect_refused("op_forward(relu): inputs[0] has rank 0", [](dpt_op_call &c) { c.inputs[0].rank = 0; });
  expect_refused("output has rank 5", [](dpt_op_call &c) { c.output.rank = 5; });
  expect_refused("inputs[0] has dims [0]", [](dpt_op_call &c) { c.inputs[0].dims[0] = 0; });
  expect_refused("inputs[0] has dtype 1 (bf16): this module runs f32 only",
                 [](dpt_op_call &c) { c.inputs[0].dtype = DPT_DTYPE_BF16; });
  expect_refused("output is [5], expected the input's [4]", [](dpt_op_call &c) { c.output.dims[0] = 5; });
  expect_refused("inputs[0] 0x", [&](dpt_op_call &c) { c.inputs[0].data = host; });
  expect_refused("not device memory", [&](dpt_op_call &c) { c.inputs[0].data = host; });
  expect_refused("op_forward(relu): output [", [&](dpt_op_call &c) { c.output.data = d + 60; });
  expect_refused("runs past the end", [&](dpt_op_call &c) { c.output.data = d + 60; });
  expect_refused("NULL pointer (output)", [](dpt_op_call &c) { c.output.data = nullptr; });
  {  // no samples: a no-op, whatever the pointers
    dpt_op_call c = relu;
    c.n = 0;
    c.inputs[0].data = c.output.data = nullptr;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    OK(api->op_backward(ctx, &c, error, sizeof error));
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
  {  // conv2d's shapes: the output and the weight from the input and ints
    dpt_op_call c{};
    c.op = "conv2d";
    c.n = 1;
    c.ints[0] = 2;  // out_c
    c.ints[1] = 3;  // kernel
    c.ints[2] = 1;  // stride
    c.ints[3] = 0;  // padding
    c.input_count = 1;
    c.inputs[0] = tensor(d, {1, 4, 4});
    c.output = tensor(d + 16, {2, 2, 2});
    c.param_count = 1;
    c.params[0] = tensor(d + 32, {2, 1, 3, 3});
    OK(api->op_forward(ctx, &c, error, sizeof error));
    dpt_op_call bad = c;
    bad.output.dims[1] = 3;
    EXPECT_ERROR(kInvalid, "op_forward(conv2d): output is [2, 3, 2], expected [2, 2, 2]",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.params[0].dims[3] = 2;
    EXPECT_ERROR(kInvalid, "params[0] (weight) is [2, 1, 3, 2], expected [2, 1, 3, 3]",
                 api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.ints[1] = 5;
    EXPECT_ERROR(kInvalid, "kernel 5 does not fit", api->op_forward(ctx, &bad, error, sizeof error));
    bad = c;
    bad.param_count = 3;
    EXPECT_ERROR(kInvalid, "param_count 3, expected 1 .. 2", api->op_forward(ctx, &bad, error, sizeof error));
  }
  {  // max_pool2d's saved indices: one int32 per output element, required
    dpt_op_call c{};
    c.op = "max_pool2d";
    c.n = 2;
    c.ints[0] = 2;
    c.ints[1] = 2;
    c.input_count = 1;
    c.inputs[0] = tensor(d, {1, 4, 4});  // 32 floats
    c.output = tensor(d + 32, {1, 2, 2});
    c.saved = d + 40;
    OK(api->op_forward(ctx, &c, error, sizeof error));
    c.saved = nullptr;
    EXPECT_ERROR(kInvalid, "op_forward(max_pool2d): NULL pointer (saved)",
                 api->op_forward(ctx, &c, error, sizeof error));
    c.saved = d + 58;
    EXPECT_ERROR(kInvalid, "saved [", api->op_forward(ctx, &c, error, sizeof error));
    c.saved = reinterpret_cast<char *>(d + 40) + 2;
    EXPECT_ERROR(kInvalid, "not aligned", api->op_forward(ctx, &c, error, sizeof error));
    c.ints[0] = 5;
    EXPECT_ERROR(kInvalid, "window 5 does not fit the input [1, 4, 4]",
                 api->op_forward(ctx, &c, error, sizeof error));
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
// gives a NaN loss, counts as wrong and gets no -1 in dlogits.
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
  const int32_t labels[n] = {1, 5, -1, 0};
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
  api->context_destroy(ctx);
}

}  // namespace sim_test
