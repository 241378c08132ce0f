// "layer_norm": each row (the last dimension d of a sample) normalised by its own mean and variance
// (biased, in double), then scaled and shifted per feature.
#include <cmath>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu {

namespace {

size_t width(const dpt_op_call &c) {
  return size_t(c.output.dims[c.output.rank - 1]);
}

void forward(const dpt_op_call &c) {
  const size_t d = width(c), rows = n(c) * sample_size(c.output) / d;
  const float *w = param(c, 0), *b = param(c, 1);
  float *saved = static_cast<float *>(c.saved);
  for (size_t r = 0; r < rows; ++r) {
    const float *x = in(c) + r * d;
    float *y = out(c) + r * d;
    double sum = 0.0, squares = 0.0;
    for (size_t i = 0; i < d; ++i) sum += x[i];
    const double mean = sum / double(d);
    for (size_t i = 0; i < d; ++i) squares += (double(x[i]) - mean) * (double(x[i]) - mean);
    const double inv_std = 1.0 / std::sqrt(squares / double(d) + c.reals[0]);
    for (size_t i = 0; i < d; ++i) y[i] = float((double(x[i]) - mean) * inv_std * w[i] + b[i]);
    saved[2 * r] = float(mean);
    saved[2 * r + 1] = float(inv_std);
  }
}

void backward(const dpt_op_call &c) {
  const size_t d = width(c), rows = n(c) * sample_size(c.output) / d;
  const float *w = param(c, 0), *saved = static_cast<const float *>(c.saved);
  float *dw = param_grad(c, 0), *db = param_grad(c, 1), *dxs = dx(c);
  for (size_t r = 0; r < rows; ++r) {
    const float *x = in(c) + r * d, *g = dy(c) + r * d;
    const double mean = saved[2 * r], inv_std = saved[2 * r + 1];
    double sum_g = 0.0, sum_gx = 0.0;  // of dL/dxhat and dL/dxhat * xhat
    for (size_t i = 0; i < d; ++i) {
      const double xhat = (double(x[i]) - mean) * inv_std, gh = double(g[i]) * w[i];
      sum_g += gh;
      sum_gx += gh * xhat;
      if (dw != nullptr) dw[i] += float(double(g[i]) * xhat);
      if (db != nullptr) db[i] += g[i];
    }
    if (dxs == nullptr) continue;
    for (size_t i = 0; i < d; ++i) {
      const double xhat = (double(x[i]) - mean) * inv_std, gh = double(g[i]) * w[i];
      dxs[r * d + i] = float(inv_std * (gh - sum_g / double(d) - xhat * sum_gx / double(d)));
    }
  }
}

}  // namespace

extern const OpKernel kLayerNorm = {"layer_norm", forward, backward, nullptr};

}  // namespace dpt::cpu
