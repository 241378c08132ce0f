// "batch_norm": per channel over the samples and pixels of the batch, in two phases per pass so that the
// executor can combine the statistics of every device in between (op_call.h). Sums in double, in a fixed
// order (sample, then pixel, element p of a row into partial sum p % 8, the partial sums added in order at
// the end of the channel), so that a slice's statistics do not depend on anything but its data; the eight
// independent partial sums let the loops vectorize. The loops over a channel's pixels are compiled per x86-64
// level (DPT_CLONES: AVX-512 or AVX2 where the CPU has them; the same values, every rounding fixed).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"

namespace dpt::cpu {

namespace {

struct Shape {
  size_t channels, pixels, samples;
};

Shape shape_of(const dpt_op_call &c) {
  const size_t channels = size_t(c.inputs[0].dims[0]);
  return Shape{channels, sample_size(c.inputs[0]) / channels, n(c)};
}

// What forward keeps: mean [c], 1/sqrt(var + eps) [c], the count N (doubles).
struct Saved {
  double *mean, *inv_std, *count;
};
Saved saved_of(const dpt_op_call &c, size_t channels) {
  double *p = static_cast<double *>(c.saved);
  return Saved{p, p + channels, p + 2 * channels};
}

constexpr size_t kLanes = 8;

// Two sums of kLanes partial sums each.
struct LaneSums {
  double a[kLanes] = {}, b[kLanes] = {};
  double total_a() const { return total(a); }
  double total_b() const { return total(b); }
  static double total(const double *lane) {
    double t = 0.0;
    for (size_t j = 0; j < kLanes; ++j) t += lane[j];
    return t;
  }
};

DPT_CLONES void forward_statistics(const dpt_op_call &c, const Shape &s) {
  double *sum = c.statistics, *squares = c.statistics + s.channels;
  for (size_t ch = 0; ch < s.channels; ++ch) {
    LaneSums l;
    for (size_t i = 0; i < s.samples; ++i) {
      const float *x = in(c) + (i * s.channels + ch) * s.pixels;
      size_t p = 0;
      for (; p + kLanes <= s.pixels; p += kLanes)
        for (size_t j = 0; j < kLanes; ++j) {
          const double v = x[p + j];
          l.a[j] += v, l.b[j] += v * v;
        }
      for (size_t j = 0; p < s.pixels; ++p, ++j) {
        const double v = x[p];
        l.a[j] += v, l.b[j] += v * v;
      }
    }
    sum[ch] = l.total_a();
    squares[ch] = l.total_b();
  }
  c.statistics[2 * s.channels] = double(s.samples * s.pixels);
}

DPT_CLONES void normalize(const dpt_op_call &c, const Shape &s, const double *mean, const double *inv_std) {
  const float *w = param(c, 0), *b = param(c, 1);
  for (size_t i = 0; i < s.samples; ++i)
    for (size_t ch = 0; ch < s.channels; ++ch) {
      const size_t at = (i * s.channels + ch) * s.pixels;
      const double scale = inv_std[ch] * w[ch], shift = b[ch] - mean[ch] * scale;
      for (size_t p = 0; p < s.pixels; ++p) out(c)[at + p] = float(in(c)[at + p] * scale + shift);
    }
}

void forward_apply(const dpt_op_call &c, const Shape &s) {
  const size_t stride = 2 * s.channels + 1;
  const double *local = c.statistics, *global = c.statistics + stride;
  const double *use = c.sync_statistics != 0 ? global : local;
  const Saved saved = saved_of(c, s.channels);
  const double count = use[2 * s.channels], eps = c.reals[0];
  *saved.count = count;
  for (size_t ch = 0; ch < s.channels; ++ch) {
    const double mean = count > 0 ? use[ch] / count : 0.0;
    const double var = count > 0 ? std::max(use[s.channels + ch] / count - mean * mean, 0.0) : 0.0;
    saved.mean[ch] = mean;
    saved.inv_std[ch] = 1.0 / std::sqrt(var + eps);
  }
  normalize(c, s, saved.mean, saved.inv_std);
  // The running statistics follow the global batch in either mode, so every replica keeps the same ones.
  const double n_all = global[2 * s.channels],
               momentum = c.statistics_momentum != 0.0 ? c.statistics_momentum : c.reals[1];
  if (n_all <= 0) return;
  float *running_mean = static_cast<float *>(c.buffers[0].data);
  float *running_var = static_cast<float *>(c.buffers[1].data);
  for (size_t ch = 0; ch < s.channels; ++ch) {
    const double mean = global[ch] / n_all;
    const double var = std::max(global[s.channels + ch] / n_all - mean * mean, 0.0);
    const double unbiased = n_all > 1 ? var * n_all / (n_all - 1) : var;
    if (!std::isfinite(mean) || !std::isfinite(unbiased)) continue;  // a discarded step keeps them
    running_mean[ch] = float((1.0 - momentum) * running_mean[ch] + momentum * mean);
    running_var[ch] = float((1.0 - momentum) * running_var[ch] + momentum * unbiased);
  }
}

DPT_CLONES void forward_evaluate(const dpt_op_call &c, const Shape &s) {
  const float *running_mean = static_cast<const float *>(c.buffers[0].data);
  const float *running_var = static_cast<const float *>(c.buffers[1].data);
  const float *w = param(c, 0), *b = param(c, 1);
  for (size_t i = 0; i < s.samples; ++i)
    for (size_t ch = 0; ch < s.channels; ++ch) {
      const double scale = w[ch] / std::sqrt(double(running_var[ch]) + c.reals[0]);
      const double shift = b[ch] - running_mean[ch] * scale;
      const size_t at = (i * s.channels + ch) * s.pixels;
      for (size_t p = 0; p < s.pixels; ++p) out(c)[at + p] = float(in(c)[at + p] * scale + shift);
    }
}

void forward(const dpt_op_call &c) {
  const Shape s = shape_of(c);
  if (c.phase == DPT_OP_PHASE_STATISTICS) return forward_statistics(c, s);
  if (c.phase == DPT_OP_PHASE_APPLY && c.training != 0) return forward_apply(c, s);
  forward_evaluate(c, s);
}

DPT_CLONES void backward_statistics(const dpt_op_call &c, const Shape &s) {
  const Saved saved = saved_of(c, s.channels);
  double *sum_dy = c.statistics, *sum_dy_xhat = c.statistics + s.channels;
  for (size_t ch = 0; ch < s.channels; ++ch) {
    LaneSums l;
    const double mean = saved.mean[ch], inv_std = saved.inv_std[ch];
    for (size_t i = 0; i < s.samples; ++i) {
      const size_t at = (i * s.channels + ch) * s.pixels;
      const float *g = dy(c) + at, *x = in(c) + at;
      size_t p = 0;
      for (; p + kLanes <= s.pixels; p += kLanes)
        for (size_t j = 0; j < kLanes; ++j) {
          const double gj = g[p + j];
          l.a[j] += gj, l.b[j] += gj * ((x[p + j] - mean) * inv_std);
        }
      for (size_t j = 0; p < s.pixels; ++p, ++j) {
        const double gj = g[p];
        l.a[j] += gj, l.b[j] += gj * ((x[p] - mean) * inv_std);
      }
    }
    const double a = l.total_a(), b = l.total_b();
    sum_dy[ch] = a;
    sum_dy_xhat[ch] = b;
    c.statistics[2 * s.channels] = double(s.samples * s.pixels);
    if (float *dw = param_grad(c, 0)) dw[ch] += float(b);
    if (float *db = param_grad(c, 1)) db[ch] += float(a);
  }
}

DPT_CLONES void backward_apply(const dpt_op_call &c, const Shape &s) {
  float *d = dx(c);
  if (d == nullptr) return;
  const Saved saved = saved_of(c, s.channels);
  const double *sum_dy = c.statistics, *sum_dy_xhat = c.statistics + s.channels, count = *saved.count;
  const float *w = param(c, 0);
  for (size_t i = 0; i < s.samples; ++i)
    for (size_t ch = 0; ch < s.channels; ++ch) {
      const double mean_dy = sum_dy[ch] / count, mean_dy_xhat = sum_dy_xhat[ch] / count;
      const double scale = w[ch] * saved.inv_std[ch];
      const size_t at = (i * s.channels + ch) * s.pixels;
      for (size_t p = 0; p < s.pixels; ++p) {
        const double xhat = (in(c)[at + p] - saved.mean[ch]) * saved.inv_std[ch];
        d[at + p] = float(scale * (dy(c)[at + p] - mean_dy - xhat * mean_dy_xhat));
      }
    }
}

void backward(const dpt_op_call &c) {
  const Shape s = shape_of(c);
  if (c.phase == DPT_OP_PHASE_STATISTICS) return backward_statistics(c, s);
  backward_apply(c, s);
}

}  // namespace

extern const OpKernel kBatchNorm = {"batch_norm", forward, backward, nullptr};

}  // namespace dpt::cpu
