// The op runner of the CUDA conformance tests: one op's dpt_op_call (Spec: its shapes and attributes; Data:
// every buffer it reads or writes, on the host), run by the CPU reference kernel (CpuRunner) on the host
// copy and by the CUDA module (GpuRunner) on device copies, and the comparisons of their results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "cuda_harness.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace cuda_test {

using Dims = std::vector<int64_t>;

inline size_t elements(const Dims &dims) {
  size_t size = 1;
  for (const int64_t d : dims) size *= size_t(d);
  return size;
}

// One op's call without its data: inputs' and output's dims are one sample's, parameters' and buffers' whole.
struct Spec {
  const char *op;
  int64_t n;
  Dims ints;
  std::vector<double> reals;
  std::vector<Dims> in;
  Dims out;
  std::vector<Dims> params, buffers;
  size_t saved_bytes = 0;
  size_t statistics = 0;     // doubles at dpt_op_call::statistics (both sets)
  bool token_input = false;  // inputs[0] is int32 tokens below ints[0] (token_embedding), in x[0]'s floats
  int32_t matmul_dtype = DPT_DTYPE_F32;  // the inputs of the op's matrix products (dpt_op_call::matmul_dtype)
  double statistics_momentum = 0;        // dpt_op_call::statistics_momentum (0: reals' momentum)

  size_t in_size(size_t i) const { return size_t(n) * elements(in[i]); }
  size_t out_size() const { return size_t(n) * elements(out); }
};

// Everything a call reads or writes, on the host.
struct Data {
  std::vector<std::vector<float>> x, dx;
  std::vector<float> y, dy;
  std::vector<std::vector<float>> params, dparams, buffers;
  std::vector<double> saved;  // saved_bytes, in doubles (batch_norm's layout; layer_norm's floats inside)
  std::vector<double> statistics;
};

// Seeded data: inputs, dy, parameters and gradient starts uniform in [-1, 1); buffers zero; what the call
// writes (y, dx, saved, statistics) NaN, so that anything not written shows.
inline Data make_data(const Spec &s, uint64_t seed) {
  Data d;
  for (size_t i = 0; i < s.in.size(); ++i) {
    d.x.push_back(uniform(s.in_size(i), seed + 1 + i, -1.0f, 1.0f));
    d.dx.push_back(std::vector<float>(s.in_size(i), NAN));
  }
  if (s.token_input)  // tokens below the vocabulary, as their bits in the float slots
    for (float &v : d.x[0]) {
      const int32_t token = int32_t(std::fabs(v) * float(s.ints[0])) % int32_t(s.ints[0]);
      std::memcpy(&v, &token, sizeof token);
    }
  d.y.assign(s.out_size(), NAN);
  d.dy = uniform(s.out_size(), seed + 9, -1.0f, 1.0f);
  for (size_t p = 0; p < s.params.size(); ++p) {
    d.params.push_back(uniform(elements(s.params[p]), seed + 10 + p, -1.0f, 1.0f));
    d.dparams.push_back(uniform(elements(s.params[p]), seed + 20 + p, -1.0f, 1.0f));
  }
  for (const Dims &b : s.buffers) d.buffers.push_back(std::vector<float>(elements(b), 0.0f));
  d.saved.assign((s.saved_bytes + sizeof(double) - 1) / sizeof(double), NAN);
  d.statistics.assign(s.statistics, NAN);
  return d;
}

inline std::vector<float> absolute(std::vector<float> v) {
  for (float &x : v) x = std::fabs(x);
  return v;
}

// The floats at the start of saved (layer_norm's mean and 1/sqrt(var + eps) per row).
inline std::vector<float> saved_floats(const Data &d, size_t count) {
  std::vector<float> f(count);
  std::memcpy(f.data(), d.saved.data(), count * sizeof(float));
  return f;
}

// expect_close for doubles: |got - want| <= rel * scale[i] (scale 0: exact); prints the worst element.
inline void expect_doubles(const char *what, const std::vector<double> &got, const std::vector<double> &want,
                           const std::vector<double> &scale, double rel) {
  assert_int_equal(got.size(), want.size());
  assert_int_equal(scale.size(), want.size());
  double worst = 0.0;
  size_t worst_at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - want[i]), bound = rel * scale[i];
    const double ratio = bound > 0.0 ? error / bound : (error > 0.0 || std::isnan(error) ? INFINITY : 0.0);
    if (!(ratio <= worst) || std::isnan(error)) {
      worst = std::isnan(error) ? INFINITY : ratio;
      worst_at = i;
    }
  }
  print_message("%-44s %8zu values, worst error %.3g of its bound (at %zu: %.17g vs %.17g)\n", what,
                got.size(), worst, worst_at, got.empty() ? 0.0 : got[worst_at],
                want.empty() ? 0.0 : want[worst_at]);
  if (!(worst <= 1.0))
    fail_msg("%s: element %zu is %.17g, expected %.17g (bound %.3g * %.3g)", what, worst_at, got[worst_at],
             want[worst_at], rel, scale[worst_at]);
}

inline void expect_doubles_bitwise(const char *what, const std::vector<double> &got,
                                   const std::vector<double> &want) {
  assert_int_equal(got.size(), want.size());
  if (!got.empty() && std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) != 0)
    fail_msg("%s: not the same bits", what);
  print_message("%-44s %8zu values, bitwise equal\n", what, got.size());
}

// ---- running a call on the CPU reference and on the GPU --------------------------------------------------

// One op on one backend: the host copy of its data, and its passes. The CPU works on the host copy itself;
// the GPU on device copies, exchanged with the host copy by to_device and to_host.
class Runner {
 public:
  Runner(const Spec &s, const Data &d)
      : spec(s), data(d), want_dx(s.in.size(), true), want_dparams(s.params.size(), true) {}
  virtual ~Runner() = default;
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  virtual void to_device() {}
  virtual void to_host() {}
  void forward(int32_t phase = DPT_OP_PHASE_SINGLE, int32_t training = 1, int32_t sync = 0) {
    run(call(false, phase, training, sync), false);
  }
  void backward(int32_t phase = DPT_OP_PHASE_SINGLE, int32_t sync = 0) {
    run(call(true, phase, 1, sync), true);
  }

  const Spec spec;
  Data data;
  std::vector<bool> want_dx, want_dparams;  // the gradients backward asks for (the others NULL)

 protected:
  // Where the backend's copy of each member of data is.
  struct Pointers {
    std::vector<void *> x, dx, params, dparams, buffers;
    void *y = nullptr, *dy = nullptr, *saved = nullptr;
    double *statistics = nullptr;
  };
  virtual Pointers pointers() = 0;
  virtual void run(const dpt_op_call &c, bool backward) = 0;

 private:
  dpt_op_call call(bool backward, int32_t phase, int32_t training, int32_t sync) {
    const Pointers p = pointers();
    dpt_op_call c = cuda_test::op_call(spec.op, spec.n, spec.ints);
    for (size_t i = 0; i < spec.reals.size(); ++i) c.reals[i] = spec.reals[i];
    c.input_count = int32_t(spec.in.size());
    for (size_t i = 0; i < spec.in.size(); ++i) c.inputs[i] = cuda_test::tensor(p.x[i], spec.in[i]);
    if (spec.token_input) c.inputs[0].dtype = DPT_DTYPE_I32;
    c.output = cuda_test::tensor(p.y, spec.out);
    c.param_count = int32_t(spec.params.size());
    for (size_t k = 0; k < spec.params.size(); ++k)
      c.params[k] = cuda_test::tensor(p.params[k], spec.params[k]);
    c.buffer_count = int32_t(spec.buffers.size());
    for (size_t k = 0; k < spec.buffers.size(); ++k)
      c.buffers[k] = cuda_test::tensor(p.buffers[k], spec.buffers[k]);
    c.saved = spec.saved_bytes > 0 ? p.saved : nullptr;
    c.saved_bytes = spec.saved_bytes;
    c.statistics = spec.statistics > 0 ? p.statistics : nullptr;
    c.statistics_count = spec.statistics;
    c.phase = phase;
    c.training = training;
    c.sync_statistics = sync;
    c.seed = 7;
    c.matmul_dtype = spec.matmul_dtype;
    c.statistics_momentum = spec.statistics_momentum;
    if (backward) {
      c.output_grad = p.dy;
      for (size_t i = 0; i < spec.in.size(); ++i) c.input_grads[i] = want_dx[i] ? p.dx[i] : nullptr;
      for (size_t k = 0; k < spec.params.size(); ++k)
        c.param_grads[k] = want_dparams[k] ? static_cast<float *>(p.dparams[k]) : nullptr;
    }
    return c;
  }
};

class CpuRunner : public Runner {
 public:
  CpuRunner(const Spec &s, const Data &d) : Runner(s, d), kernel_(dpt::cpu::find_op(s.op)) {
    if (kernel_ == nullptr) fail_msg("no CPU kernel of %s", s.op);
  }

 protected:
  Pointers pointers() override {
    Pointers p;
    for (std::vector<float> &v : data.x) p.x.push_back(v.data());
    for (std::vector<float> &v : data.dx) p.dx.push_back(v.data());
    for (std::vector<float> &v : data.params) p.params.push_back(v.data());
    for (std::vector<float> &v : data.dparams) p.dparams.push_back(v.data());
    for (std::vector<float> &v : data.buffers) p.buffers.push_back(v.data());
    p.y = data.y.data();
    p.dy = data.dy.data();
    p.saved = data.saved.data();
    p.statistics = data.statistics.data();
    return p;
  }
  void run(const dpt_op_call &call, bool backward) override {
    dpt_op_call c = call;
    std::vector<unsigned char> scratch(kernel_->scratch_bytes != nullptr ? kernel_->scratch_bytes(c) : 0);
    c.scratch = scratch.data();
    c.scratch_bytes = scratch.size();
    (backward ? kernel_->backward : kernel_->forward)(c);
  }

 private:
  const dpt::cpu::OpKernel *kernel_;
};

class GpuRunner : public Runner {
 public:
  GpuRunner(Gpu &gpu, const Spec &s, const Data &d) : Runner(s, d), gpu_(gpu) {
    for (const std::vector<float> &v : data.x) p_.x.push_back(alloc(v.size()));
    for (const std::vector<float> &v : data.dx) p_.dx.push_back(alloc(v.size()));
    for (const std::vector<float> &v : data.params) p_.params.push_back(alloc(v.size()));
    for (const std::vector<float> &v : data.dparams) p_.dparams.push_back(alloc(v.size()));
    for (const std::vector<float> &v : data.buffers) p_.buffers.push_back(alloc(v.size()));
    p_.y = alloc(data.y.size());
    p_.dy = alloc(data.dy.size());
    p_.saved = alloc(2 * data.saved.size());
    p_.statistics = static_cast<double *>(alloc(2 * data.statistics.size()));
    to_device();
  }

  void to_device() override { exchange(true); }
  void to_host() override { exchange(false); }

 protected:
  Pointers pointers() override { return p_; }
  void run(const dpt_op_call &c, bool backward) override {
    const dpt_backend_v2 &api = gpu_.api();
    const std::string what = std::string(backward ? "op_backward(" : "op_forward(") + spec.op + ")";
    check((backward ? api.op_backward : api.op_forward)(gpu_.ctx(), &c, gpu_.error, sizeof gpu_.error),
          what.c_str(), gpu_.error);
  }

 private:
  void *alloc(size_t floats) { return gpu_.alloc(std::max<size_t>(1, floats) * sizeof(float)); }

  void copy(bool up, void *device, void *host, size_t bytes) {
    if (bytes == 0) return;
    const dpt_backend_v2 &api = gpu_.api();
    if (up)
      check(api.copy_to_device(gpu_.ctx(), device, host, bytes, gpu_.error, sizeof gpu_.error),
            "copy_to_device", gpu_.error);
    else
      check(api.copy_to_host(gpu_.ctx(), host, device, bytes, gpu_.error, sizeof gpu_.error), "copy_to_host",
            gpu_.error);
  }
  void copy(bool up, void *device, std::vector<float> &host) {
    copy(up, device, host.data(), host.size() * sizeof(float));
  }

  void exchange(bool up) {
    gpu_.sync();
    for (size_t i = 0; i < data.x.size(); ++i) copy(up, p_.x[i], data.x[i]);
    for (size_t i = 0; i < data.dx.size(); ++i) copy(up, p_.dx[i], data.dx[i]);
    for (size_t k = 0; k < data.params.size(); ++k) copy(up, p_.params[k], data.params[k]);
    for (size_t k = 0; k < data.dparams.size(); ++k) copy(up, p_.dparams[k], data.dparams[k]);
    for (size_t k = 0; k < data.buffers.size(); ++k) copy(up, p_.buffers[k], data.buffers[k]);
    copy(up, p_.y, data.y);
    copy(up, p_.dy, data.dy);
    copy(up, p_.saved, data.saved.data(), data.saved.size() * sizeof(double));
    copy(up, p_.statistics, data.statistics.data(), data.statistics.size() * sizeof(double));
    gpu_.sync();
  }

  Gpu &gpu_;
  Pointers p_;
};

// forward, then backward (one phase), then the results on the host.
inline void train_pass(Runner &r) {
  r.forward();
  r.backward();
  r.to_host();
}

// Both runners' results the same bits.
inline void expect_same_bits(const std::string &what, const Data &got, const Data &want) {
  expect_bitwise((what + " y").c_str(), got.y, want.y);
  for (size_t i = 0; i < want.dx.size(); ++i)
    expect_bitwise((what + " dx[" + std::to_string(i) + "]").c_str(), got.dx[i], want.dx[i]);
  for (size_t k = 0; k < want.dparams.size(); ++k)
    expect_bitwise((what + " param grad " + std::to_string(k)).c_str(), got.dparams[k], want.dparams[k]);
  for (size_t k = 0; k < want.buffers.size(); ++k)
    expect_bitwise((what + " buffer " + std::to_string(k)).c_str(), got.buffers[k], want.buffers[k]);
  expect_doubles_bitwise((what + " saved").c_str(), got.saved, want.saved);
  expect_doubles_bitwise((what + " statistics").c_str(), got.statistics, want.statistics);
}

}  // namespace cuda_test
