// Compiled with -ffp-contract=off (CMakeLists.txt): every operation is rounded on its own, as the real
// module's explicitly rounded intrinsics and the CPU build on x86-64 do.
#include "kernels.hpp"

#include <cmath>
#include <cstring>

namespace dpt_sim::kernels {

namespace {

// The CPU's fixed-order sum (src/nn/conv2d_layer.cpp): element i into partial sum i % 8, then the partial
// sums in order.
float sum_fixed_order(const float *x, size_t n) {
  float lane[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) lane[j] += x[i + j];
  for (size_t j = 0; i < n; ++i, ++j) lane[j] += x[i];
  float sum = 0.0f;
  for (float l : lane) sum += l;
  return sum;
}

}  // namespace

void dense_forward(size_t n, size_t in, size_t out, const float *x, const float *w, const float *b,
                   float *y) {
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < out; ++o) {
      const float *xs = x + s * in, *wo = w + o * in;
      float acc = 0.0f;
      for (size_t i = 0; i < in; ++i) acc += xs[i] * wo[i];
      y[s * out + o] = b != nullptr ? acc + b[o] : acc;
    }
}

void dense_backward(size_t n, size_t in, size_t out, const float *x, const float *w, const float *dy,
                    float *dx, float *dw, float *db) {
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) {
      float acc = 0.0f;
      for (size_t s = 0; s < n; ++s) acc += dy[s * out + o] * x[s * in + i];
      dw[o * in + i] += acc;
    }
  if (db != nullptr) bias_grad(n, out, 1, dy, db);
  if (dx == nullptr) return;
  for (size_t s = 0; s < n; ++s)
    for (size_t i = 0; i < in; ++i) {
      float acc = 0.0f;
      for (size_t o = 0; o < out; ++o) acc += dy[s * out + o] * w[o * in + i];
      dx[s * in + i] = acc;
    }
}

void bias_add(size_t n, size_t channels, size_t pixels, const float *bias, float *y) {
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < channels; ++c) {
      float *row = y + (s * channels + c) * pixels;
      for (size_t q = 0; q < pixels; ++q) row[q] += bias[c];
    }
}

void bias_grad(size_t n, size_t channels, size_t pixels, const float *dy, float *dbias) {
  // As the CPU layers: dense adds dy sample by sample (pixels = 1), conv2d one fixed-order sum per sample.
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < channels; ++c)
      dbias[c] += sum_fixed_order(dy + (s * channels + c) * pixels, pixels);
}

// ---- convolution: direct loops (cross-correlation, NCHW, weights [out_c, in_c, k, k]) ----

void conv_forward(const Conv &s, const float *x, const float *w, const float *b, float *y) {
  const auto pad = std::ptrdiff_t(s.padding);
  for (size_t n = 0; n < s.n; ++n)
    for (size_t o = 0; o < s.out_c; ++o)
      for (size_t oy = 0; oy < s.out_h; ++oy)
        for (size_t ox = 0; ox < s.out_w; ++ox) {
          float acc = 0.0f;
          for (size_t c = 0; c < s.c; ++c)
            for (size_t ki = 0; ki < s.k; ++ki) {
              const std::ptrdiff_t iy = std::ptrdiff_t(oy * s.stride + ki) - pad;
              if (iy < 0 || iy >= std::ptrdiff_t(s.h)) continue;
              const float *xrow = x + ((n * s.c + c) * s.h + size_t(iy)) * s.w;
              const float *wrow = w + ((o * s.c + c) * s.k + ki) * s.k;
              for (size_t kj = 0; kj < s.k; ++kj) {
                const std::ptrdiff_t ix = std::ptrdiff_t(ox * s.stride + kj) - pad;
                if (ix < 0 || ix >= std::ptrdiff_t(s.w)) continue;
                acc += wrow[kj] * xrow[ix];
              }
            }
          y[((n * s.out_c + o) * s.out_h + oy) * s.out_w + ox] = b != nullptr ? acc + b[o] : acc;
        }
}

void conv_backward_data(const Conv &s, const float *w, const float *dy, float *dx) {
  const auto stride = std::ptrdiff_t(s.stride), pad = std::ptrdiff_t(s.padding);
  for (size_t n = 0; n < s.n; ++n)
    for (size_t c = 0; c < s.c; ++c)
      for (size_t iy = 0; iy < s.h; ++iy)
        for (size_t ix = 0; ix < s.w; ++ix) {
          // Every output (oy, ox) and kernel tap (ki, kj) with oy * stride + ki - padding = iy, likewise x.
          float acc = 0.0f;
          for (size_t o = 0; o < s.out_c; ++o)
            for (size_t ki = 0; ki < s.k; ++ki) {
              const std::ptrdiff_t ty = std::ptrdiff_t(iy) + pad - std::ptrdiff_t(ki);
              if (ty < 0 || ty % stride != 0 || ty / stride >= std::ptrdiff_t(s.out_h)) continue;
              const size_t oy = size_t(ty / stride);
              for (size_t kj = 0; kj < s.k; ++kj) {
                const std::ptrdiff_t tx = std::ptrdiff_t(ix) + pad - std::ptrdiff_t(kj);
                if (tx < 0 || tx % stride != 0 || tx / stride >= std::ptrdiff_t(s.out_w)) continue;
                const size_t ox = size_t(tx / stride);
                acc += w[((o * s.c + c) * s.k + ki) * s.k + kj] *
                       dy[((n * s.out_c + o) * s.out_h + oy) * s.out_w + ox];
              }
            }
          dx[((n * s.c + c) * s.h + iy) * s.w + ix] = acc;
        }
}

void conv_backward_filter(const Conv &s, const float *x, const float *dy, float *dw) {
  const auto pad = std::ptrdiff_t(s.padding);
  for (size_t o = 0; o < s.out_c; ++o)
    for (size_t c = 0; c < s.c; ++c)
      for (size_t ki = 0; ki < s.k; ++ki)
        for (size_t kj = 0; kj < s.k; ++kj) {
          float acc = 0.0f;
          for (size_t n = 0; n < s.n; ++n)
            for (size_t oy = 0; oy < s.out_h; ++oy) {
              const std::ptrdiff_t iy = std::ptrdiff_t(oy * s.stride + ki) - pad;
              if (iy < 0 || iy >= std::ptrdiff_t(s.h)) continue;
              const float *xrow = x + ((n * s.c + c) * s.h + size_t(iy)) * s.w;
              const float *dyrow = dy + ((n * s.out_c + o) * s.out_h + oy) * s.out_w;
              for (size_t ox = 0; ox < s.out_w; ++ox) {
                const std::ptrdiff_t ix = std::ptrdiff_t(ox * s.stride + kj) - pad;
                if (ix < 0 || ix >= std::ptrdiff_t(s.w)) continue;
                acc += dyrow[ox] * xrow[ix];
              }
            }
          dw[((o * s.c + c) * s.k + ki) * s.k + kj] += acc;
        }
}

// ---- pooling: the loops of src/nn/pool_layers.cpp ----

void pool_forward(const Pool &s, const float *x, float *y) {
  const size_t k = s.window, h = s.h, w = s.w, oh = s.out_h, ow = s.out_w, stride = s.stride;
  if (!s.max) {
    const float scale = 1.0f / float(k * k);
    for (size_t plane = 0; plane < s.planes; ++plane) {
      const float *xp = x + plane * h * w;
      for (size_t oy = 0; oy < oh; ++oy) {
        float *yrow = y + (plane * oh + oy) * ow;
        for (size_t ox = 0; ox < ow; ++ox) yrow[ox] = 0.0f;
        for (size_t i = 0; i < k; ++i) {
          const float *xrow = xp + (oy * stride + i) * w;
          for (size_t j = 0; j < k; ++j)
            for (size_t ox = 0; ox < ow; ++ox) yrow[ox] += xrow[ox * stride + j];
        }
        for (size_t ox = 0; ox < ow; ++ox) yrow[ox] *= scale;
      }
    }
    return;
  }
  for (size_t plane = 0; plane < s.planes; ++plane) {
    const float *xp = x + plane * h * w;
    for (size_t oy = 0; oy < oh; ++oy)
      for (size_t ox = 0; ox < ow; ++ox) {
        size_t best = (oy * stride) * w + ox * stride;
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const size_t idx = (oy * stride + i) * w + ox * stride + j;
            if (xp[idx] > xp[best]) best = idx;
          }
        y[plane * oh * ow + oy * ow + ox] = xp[best];
      }
  }
}

void pool_backward(const Pool &s, const float *x, const float *dy, float *dx) {
  const size_t k = s.window, h = s.h, w = s.w, oh = s.out_h, ow = s.out_w, stride = s.stride;
  std::memset(dx, 0, s.planes * h * w * sizeof(float));
  if (!s.max) {
    const float scale = 1.0f / float(k * k);
    for (size_t plane = 0; plane < s.planes; ++plane) {
      float *dxp = dx + plane * h * w;
      for (size_t oy = 0; oy < oh; ++oy) {
        const float *dyrow = dy + (plane * oh + oy) * ow;
        for (size_t i = 0; i < k; ++i) {
          float *dxrow = dxp + (oy * stride + i) * w;
          for (size_t j = 0; j < k; ++j)
            for (size_t ox = 0; ox < ow; ++ox) dxrow[ox * stride + j] += dyrow[ox] * scale;
        }
      }
    }
    return;
  }
  for (size_t plane = 0; plane < s.planes; ++plane) {
    const float *xp = x + plane * h * w;
    float *dxp = dx + plane * h * w;
    for (size_t oy = 0; oy < oh; ++oy)
      for (size_t ox = 0; ox < ow; ++ox) {
        size_t best = (oy * stride) * w + ox * stride;  // the first maximum, as the forward pass found it
        for (size_t i = 0; i < k; ++i)
          for (size_t j = 0; j < k; ++j) {
            const size_t idx = (oy * stride + i) * w + ox * stride + j;
            if (xp[idx] > xp[best]) best = idx;
          }
        dxp[best] += dy[plane * oh * ow + oy * ow + ox];
      }
  }
}

// ---- activations: src/nn/activation_layer.cpp ----

void activation_forward(int kind, size_t count, const float *x, float *y) {
  switch (kind) {
    case DPT_BACKEND_RELU:
      for (size_t i = 0; i < count; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];  // NaN stays NaN
      break;
    case DPT_BACKEND_SIGMOID:
      for (size_t i = 0; i < count; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
      break;
    default:
      for (size_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
      break;
  }
}

void activation_backward(int kind, size_t count, const float *y, const float *dy, float *dx) {
  switch (kind) {
    case DPT_BACKEND_RELU:
      for (size_t i = 0; i < count; ++i) dx[i] = float(y[i] > 0.0f) * dy[i];
      break;
    case DPT_BACKEND_SIGMOID:
      for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
      break;
    default:
      for (size_t i = 0; i < count; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
      break;
  }
}

// ---- loss and optimizers: src/nn/softmax_cross_entropy.cpp, src/optim/optimizer.cpp ----

dpt_backend_loss softmax_cross_entropy(size_t n, size_t classes, const float *logits, const int32_t *labels,
                                       float *dlogits) {
  dpt_backend_loss stats{0.0, 0};
  for (size_t s = 0; s < n; ++s) {
    const float *z = logits + s * classes;
    size_t best = 0;
    for (size_t c = 1; c < classes; ++c)
      if (z[c] > z[best]) best = c;
    const double zmax = z[best];
    double sum = 0.0;
    for (size_t c = 0; c < classes; ++c) sum += std::exp(double(z[c]) - zmax);
    const int32_t label = labels[s];
    const bool valid = label >= 0 && size_t(label) < classes;
    stats.loss_sum += valid ? std::log(sum) - (double(z[label]) - zmax) : std::nan("");
    if (valid && best == size_t(label)) ++stats.correct;
    if (dlogits != nullptr) {
      float *d = dlogits + s * classes;
      for (size_t c = 0; c < classes; ++c) d[c] = float(std::exp(double(z[c]) - zmax) / sum);
      if (valid) d[label] -= 1.0f;
    }
  }
  return stats;
}

void optimizer_update(const dpt_backend_optimizer &o, uint64_t t, float lr, float scale, float *p,
                      const float *g, float *state, size_t n) {
  if (o.kind == DPT_BACKEND_SGD) {
    const float wd = o.weight_decay, mu = o.momentum;
    if (mu == 0.0f) {
      for (size_t i = 0; i < n; ++i) p[i] -= lr * (scale * g[i] + wd * p[i]);
      return;
    }
    float *buf = state;
    for (size_t i = 0; i < n; ++i) {
      float d = scale * g[i] + wd * p[i];
      buf[i] = mu * buf[i] + d;
      p[i] -= lr * (o.nesterov != 0 ? d + mu * buf[i] : buf[i]);
    }
    return;
  }
  float *m = state, *v = state + n;
  const float b1 = o.beta1, b2 = o.beta2, eps = o.epsilon;
  const double step = double(t + 1);
  const float correction1 = float(1.0 - std::pow(double(b1), step));
  const float root_correction2 = float(std::sqrt(1.0 - std::pow(double(b2), step)));
  const float step_size = lr / correction1;
  const float decay = 1.0f - lr * o.weight_decay;
  for (size_t i = 0; i < n; ++i) {
    const float gi = scale * g[i];
    p[i] *= decay;
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / root_correction2 + eps);
  }
}

double l2_norm(const float *x, size_t count) {
  // The CPU's order: eight partial sums in double (element i into partial i % 8), then added in order.
  constexpr size_t kLanes = 8;
  double lane[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (size_t j = 0; j < kLanes; ++j) lane[j] += double(x[i + j]) * double(x[i + j]);
  for (size_t j = 0; i < count; ++i, ++j) lane[j] += double(x[i]) * double(x[i]);
  double sum = 0.0;
  for (size_t j = 0; j < kLanes; ++j) sum += lane[j];
  return std::sqrt(sum);
}

void scale(float *x, size_t count, float alpha) {
  for (size_t i = 0; i < count; ++i) x[i] *= alpha;
}

}  // namespace dpt_sim::kernels
