// "gelu": x * Phi(x), exactly (erf, ints[0] = 0) or by the tanh approximation (ints[0] = 1), as PyTorch's
// approximate='none' / 'tanh'. Computed in double per element, rounded once.
#include <cmath>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)

double gelu(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * x * (1.0 + std::erf(x * kInvSqrt2));
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
}

double gelu_grad(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * (1.0 + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
  const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
}

void forward(const dpt_op_call &c) {
  const bool tanh_form = c.ints[0] != 0;
  for (size_t i = 0, e = n(c) * sample_size(c.output); i < e; ++i)
    out(c)[i] = float(gelu(in(c)[i], tanh_form));
}

void backward(const dpt_op_call &c) {
  float *d = dx(c);
  if (d == nullptr) return;
  const bool tanh_form = c.ints[0] != 0;
  for (size_t i = 0, e = n(c) * sample_size(c.output); i < e; ++i)
    d[i] = float(double(dy(c)[i]) * gelu_grad(in(c)[i], tanh_form));
}

}  // namespace

extern const OpKernel kGelu = {"gelu", forward, backward, nullptr};

}  // namespace dpt::cpu
