// "gelu": x * Phi(x), exactly (erf, ints[0] = 0) or by the tanh approximation (ints[0] = 1), as PyTorch's
// approximate='none' / 'tanh'. The erf form is computed in double per element, rounded once; the tanh form
// (GPT-2's, on every MLP of gpt-mini) in float by interface/op_math.hpp, which the CUDA module shares (the
// same bits), in a loop the compiler vectorizes (std::tanh in double was a fifth of a gpt-mini step), once
// per x86-64 level (DPT_CLONES: AVX-512 where the CPU has it; the same bits, every operation elementwise).
#include <cmath>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"
#include "interface/op_math.hpp"

namespace dpt::cpu {

namespace {

constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)

double gelu_erf(double x) {
  return 0.5 * x * (1.0 + op_math::erf_double(x * kInvSqrt2));
}

double gelu_erf_grad(double x) {
  return 0.5 * (1.0 + op_math::erf_double(x * kInvSqrt2)) +
         x * kInvSqrt2Pi * op_math::exp_double(-0.5 * x * x);
}

DPT_CLONES void gelu_tanh_rows(size_t count, const float *__restrict x, float *__restrict y) {
  for (size_t i = 0; i < count; ++i) y[i] = op_math::gelu_tanh(x[i]);
}

DPT_CLONES void gelu_tanh_gradient(size_t count, const float *__restrict x, const float *__restrict g,
                                   float *__restrict d) {
  for (size_t i = 0; i < count; ++i) d[i] = g[i] * op_math::gelu_tanh_slope(x[i]);
}

void forward(const dpt_op_call &c) {
  const size_t count = n(c) * sample_size(c.output);
  const float *__restrict x = in(c);
  float *__restrict y = out(c);
  if (c.ints[0] == 0) {
    for (size_t i = 0; i < count; ++i) y[i] = float(gelu_erf(x[i]));
    return;
  }
  gelu_tanh_rows(count, x, y);
}

void backward(const dpt_op_call &c) {
  float *__restrict d = dx(c);
  if (d == nullptr) return;
  const size_t count = n(c) * sample_size(c.output);
  const float *__restrict x = in(c), *__restrict g = dy(c);
  if (c.ints[0] == 0) {
    for (size_t i = 0; i < count; ++i) d[i] = float(double(g[i]) * gelu_erf_grad(x[i]));
    return;
  }
  gelu_tanh_gradient(count, x, g, d);
}

}  // namespace

extern const OpKernel kGelu = {"gelu", forward, backward, nullptr};

}  // namespace dpt::cpu
