// The test extension's self_test: a small "dense" op, forward and backward, through the simulator's own
// members (mem_alloc, mem_set, the copies, op_forward, op_backward) and its queue, checked against values
// computed here. Every input is a small multiple of 1/8, so each product and sum is exact in FP32 and the
// expected values do not depend on the order in which the kernel sums.
#include <cstring>
#include <initializer_list>
#include <vector>

#include "sim.hpp"

#define DPT_SIM_CHECK(call_expression)                 \
  do {                                                 \
    if (const int rc_ = (call_expression)) return rc_; \
  } while (0)

namespace dpt_sim {

namespace {

dpt_tensor tensor(float *data, std::initializer_list<int64_t> dims) {
  dpt_tensor t{};
  t.data = data;
  t.dtype = DPT_DTYPE_F32;
  for (const int64_t d : dims) t.dims[t.rank++] = d;
  return t;
}

int compare(const Error &e, int ordinal, const char *what, const float *got, const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return report(e, DPT_BACKEND_ERROR, "cuda:%d: self_test: dense %s gave %.9g at %zu, expected %.9g",
                    ordinal, what, double(got[i]), i, double(want[i]));
  return 0;
}

// The self-test proper on a context of the device.
int self_test_on(dpt_backend_context *ctx, int ordinal, const Error &e) {
  constexpr size_t n = 3, in = 5, units = 4;
  // One device buffer: inputs x, w, b, dy, then outputs y, dx, dw, db.
  constexpr size_t kX = 0, kW = kX + n * in, kB = kW + units * in, kDy = kB + units, kY = kDy + n * units,
                   kDx = kY + n * units, kDw = kDx + n * in, kDb = kDw + units * in, kTotal = kDb + units;
  std::vector<float> host(kTotal, 0.0f);
  for (size_t i = 0; i < n * in; ++i) host[kX + i] = float(int(i % 7) - 3) * 0.5f;
  for (size_t i = 0; i < units * in + units; ++i) host[kW + i] = float(int(i % 5) - 2) * 0.25f;  // w, then b
  for (size_t i = 0; i < n * units; ++i) host[kDy + i] = float(int(i % 3) - 1) * 0.5f;
  const float *x = &host[kX], *w = &host[kW], *b = &host[kB], *dy = &host[kDy];
  std::vector<float> y(n * units), dx(n * in), dw(units * in), db(units);
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < units; ++o) {
      float acc = b[o];
      for (size_t i = 0; i < in; ++i) acc += x[s * in + i] * w[o * in + i];
      y[s * units + o] = acc;
      db[o] += dy[s * units + o];
      for (size_t i = 0; i < in; ++i) {
        dw[o * in + i] += dy[s * units + o] * x[s * in + i];
        dx[s * in + i] += dy[s * units + o] * w[o * in + i];
      }
    }

  void *device = nullptr;
  DPT_SIM_CHECK(mem_alloc(ctx, kTotal * sizeof(float), &device, e.text, e.size));
  float *d = static_cast<float *>(device);
  DPT_SIM_CHECK(copy_to_device(ctx, d, host.data(), kY * sizeof(float), e.text, e.size));
  DPT_SIM_CHECK(mem_set(ctx, d + kDw, 0, (units * in + units) * sizeof(float), e.text, e.size));  // dw, db
  dpt_op_call call{};
  call.op = "dense";
  call.n = int64_t(n);
  call.ints[0] = int64_t(units);
  call.input_count = 1;
  call.inputs[0] = tensor(d + kX, {int64_t(in)});
  call.output = tensor(d + kY, {int64_t(units)});
  call.param_count = 2;
  call.params[0] = tensor(d + kW, {int64_t(units), int64_t(in)});
  call.params[1] = tensor(d + kB, {int64_t(units)});
  DPT_SIM_CHECK(op_forward(ctx, &call, e.text, e.size));
  call.output_grad = d + kDy;
  call.input_grads[0] = d + kDx;
  call.param_grads[0] = d + kDw;
  call.param_grads[1] = d + kDb;
  DPT_SIM_CHECK(op_backward(ctx, &call, e.text, e.size));
  DPT_SIM_CHECK(copy_to_host(ctx, host.data() + kY, d + kY, (kTotal - kY) * sizeof(float), e.text, e.size));
  DPT_SIM_CHECK(context_synchronize(ctx, e.text, e.size));
  DPT_SIM_CHECK(compare(e, ordinal, "forward y", &host[kY], y));
  DPT_SIM_CHECK(compare(e, ordinal, "backward dx", &host[kDx], dx));
  DPT_SIM_CHECK(compare(e, ordinal, "backward dweights", &host[kDw], dw));
  DPT_SIM_CHECK(compare(e, ordinal, "backward dbias", &host[kDb], db));
  return 0;
}

}  // namespace

int self_test(int ordinal, char *error, size_t error_size) {
  const Error e{error, error_size};
  try {
    DPT_SIM_CHECK(check_ordinal(e, ordinal, "self_test"));
    dpt_backend_context *ctx = nullptr;
    DPT_SIM_CHECK(context_create(ordinal, nullptr, &ctx, error, error_size));
    const int rc = self_test_on(ctx, ordinal, e);
    context_destroy(ctx);
    return rc;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: self_test: unexpected C++ exception", ordinal);
  }
}

}  // namespace dpt_sim
