// "layer_norm": each row (the last dimension d of a sample) normalised by its own mean and variance
// (biased, in double), then scaled and shifted per feature. The row sums run in eight fixed-order lanes of
// doubles (element i to lane i % 8, the lanes then added in order), so the row loops vectorize, once per
// x86-64 level (DPT_CLONES: the same bits).
#include <cmath>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"

namespace dpt::cpu {

namespace {

constexpr size_t kLanes = 8;

size_t width(const dpt_op_call &c) {
  return size_t(c.output.dims[c.output.rank - 1]);
}

// The sum of the row's x[i] - shift, and of its squares.
struct RowSums {
  double sum = 0.0, squares = 0.0;
};

double total(const double (&lane)[kLanes]) {
  double t = 0.0;
  for (double v : lane) t += v;
  return t;
}

// The sum of f(i) over [0, d) in kLanes lanes (written as blocks of kLanes, which GCC vectorizes).
template <typename F>
inline double lane_sum(size_t d, F f) {
  double lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= d; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) lane[l] += f(i + l);
  for (size_t l = 0; i < d; ++i, ++l) lane[l] += f(i);
  return total(lane);
}

// The mean of x[0, d), then the sum of (x[i] - mean)^2: two passes.
DPT_CLONES RowSums mean_and_squares(const float *__restrict x, size_t d) {
  RowSums r;
  r.sum = lane_sum(d, [x](size_t i) { return double(x[i]); }) / double(d);  // the mean
  const double mean = r.sum;
  r.squares = lane_sum(d, [x, mean](size_t i) { return (double(x[i]) - mean) * (double(x[i]) - mean); });
  return r;
}

DPT_CLONES void normalise_row(const float *__restrict x, size_t d, double mean, double inv_std,
                              const float *__restrict w, const float *__restrict b, float *__restrict y) {
  for (size_t i = 0; i < d; ++i) y[i] = float((double(x[i]) - mean) * inv_std * w[i] + b[i]);
}

void forward(const dpt_op_call &c) {
  const size_t d = width(c), rows = n(c) * sample_size(c.output) / d;
  const float *w = param(c, 0), *b = param(c, 1);
  float *saved = static_cast<float *>(c.saved);
  for (size_t r = 0; r < rows; ++r) {
    const float *x = in(c) + r * d;
    const RowSums s = mean_and_squares(x, d);
    const double mean = s.sum, inv_std = 1.0 / std::sqrt(s.squares / double(d) + c.reals[0]);
    normalise_row(x, d, mean, inv_std, w, b, out(c) + r * d);
    saved[2 * r] = float(mean);
    saved[2 * r + 1] = float(inv_std);
  }
}

// The sums of dL/dxhat = g w and of dL/dxhat * xhat over one row, in kLanes lanes; dW += g xhat and db += g.
DPT_CLONES RowSums gradient_sums(const float *__restrict x, const float *__restrict g, size_t d, double mean,
                                 double inv_std, const float *__restrict w, float *__restrict dw,
                                 float *__restrict db) {
  const double sum_g = lane_sum(d, [g, w](size_t i) { return double(g[i]) * w[i]; });
  const double sum_gx =
      lane_sum(d, [=](size_t i) { return double(g[i]) * w[i] * ((double(x[i]) - mean) * inv_std); });
  if (dw != nullptr)
    for (size_t i = 0; i < d; ++i) dw[i] += float(double(g[i]) * ((double(x[i]) - mean) * inv_std));
  if (db != nullptr)
    for (size_t i = 0; i < d; ++i) db[i] += g[i];
  return RowSums{sum_g, sum_gx};
}

DPT_CLONES void input_gradient_row(const float *__restrict x, const float *__restrict g, size_t d,
                                   double mean, double inv_std, const float *__restrict w, RowSums s,
                                   float *__restrict dx) {
  for (size_t i = 0; i < d; ++i) {
    const double xhat = (double(x[i]) - mean) * inv_std, gh = double(g[i]) * w[i];
    dx[i] = float(inv_std * (gh - s.sum / double(d) - xhat * s.squares / double(d)));
  }
}

void backward(const dpt_op_call &c) {
  const size_t d = width(c), rows = n(c) * sample_size(c.output) / d;
  const float *w = param(c, 0), *saved = static_cast<const float *>(c.saved);
  float *dw = param_grad(c, 0), *db = param_grad(c, 1), *dxs = dx(c);
  for (size_t r = 0; r < rows; ++r) {
    const float *x = in(c) + r * d, *g = dy(c) + r * d;
    const double mean = saved[2 * r], inv_std = saved[2 * r + 1];
    const RowSums s = gradient_sums(x, g, d, mean, inv_std, w, dw, db);  // sum_g, sum_gx
    if (dxs != nullptr) input_gradient_row(x, g, d, mean, inv_std, w, s, dxs + r * d);
  }
}

}  // namespace

extern const OpKernel kLayerNorm = {"layer_norm", forward, backward, nullptr};

}  // namespace dpt::cpu
