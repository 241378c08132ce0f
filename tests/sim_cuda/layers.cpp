// The layer members (dense, bias, conv2d, pooling, activations): shapes and every buffer checked at the
// call (NULL, device, inside one live allocation, aligned), then the arithmetic of kernels.cpp queued on
// the context's stream.
#include <climits>

#include "kernels.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

int bad_size(const dpt_backend_context &c, const char *call, const Error &e) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: sizes overflow", c.ordinal, call);
}

// The convolution of *shape, checked as the real module checks it; empty when n is 0.
int conv_shape(const dpt_backend_context &c, const dpt_backend_conv2d_shape *shape, const char *call,
               kernels::Conv &k, bool &empty, const Error &e) {
  if (shape == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL shape", c.ordinal, call);
  const dpt_backend_conv2d_shape &s = *shape;
  const bool positive = s.n >= 0 && s.in_c > 0 && s.in_h > 0 && s.in_w > 0 && s.out_c > 0 && s.kernel > 0 &&
                        s.stride > 0 && s.padding >= 0;
  const bool fits = positive && int64_t(s.kernel) <= int64_t(s.in_h) + 2 * int64_t(s.padding) &&
                    int64_t(s.kernel) <= int64_t(s.in_w) + 2 * int64_t(s.padding);
  if (!fits)
    return report(
        e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
        "cuda:%d: %s: bad shape (n %d, input %dx%dx%d, %d outputs, kernel %d, stride %d, padding %d)",
        c.ordinal, call, s.n, s.in_c, s.in_h, s.in_w, s.out_c, s.kernel, s.stride, s.padding);
  k.n = size_t(s.n);
  k.c = size_t(s.in_c);
  k.h = size_t(s.in_h);
  k.w = size_t(s.in_w);
  k.out_c = size_t(s.out_c);
  k.k = size_t(s.kernel);
  k.stride = size_t(s.stride);
  k.padding = size_t(s.padding);
  k.out_h = (k.h + 2 * k.padding - k.k) / k.stride + 1;
  k.out_w = (k.w + 2 * k.padding - k.k) / k.stride + 1;
  empty = s.n == 0;
  return 0;
}

// Element counts of a convolution's x, weights and y.
bool conv_sizes(const kernels::Conv &k, size_t &x, size_t &w, size_t &y) {
  return product({k.n, k.c, k.h, k.w}, x) && product({k.out_c, k.c, k.k, k.k}, w) &&
         product({k.n, k.out_c, k.out_h, k.out_w}, y);
}

int pool_shape(const dpt_backend_context &c, const dpt_backend_pool_shape *shape, const char *call,
               kernels::Pool &k, bool &empty, const Error &e) {
  if (shape == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL shape", c.ordinal, call);
  const dpt_backend_pool_shape &s = *shape;
  const bool kind_ok = s.kind == DPT_BACKEND_POOL_AVERAGE || s.kind == DPT_BACKEND_POOL_MAX;
  if (!kind_ok || s.n < 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || s.window <= 0 || s.stride <= 0 ||
      s.window > s.h || s.window > s.w)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: bad shape (kind %d, n %d, input %dx%dx%d, window %d, stride %d)", c.ordinal,
                  call, s.kind, s.n, s.c, s.h, s.w, s.window, s.stride);
  k.max = s.kind == DPT_BACKEND_POOL_MAX;
  k.planes = size_t(s.n) * size_t(s.c);
  k.h = size_t(s.h);
  k.w = size_t(s.w);
  k.window = size_t(s.window);
  k.stride = size_t(s.stride);
  k.out_h = (k.h - k.window) / k.stride + 1;
  k.out_w = (k.w - k.window) / k.stride + 1;
  empty = s.n == 0;
  return 0;
}

int activation_kind(const dpt_backend_context &c, int kind, const char *call, const Error &e) {
  if (kind == DPT_BACKEND_RELU || kind == DPT_BACKEND_SIGMOID || kind == DPT_BACKEND_TANH) return 0;
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: unknown activation %d", c.ordinal, call,
                kind);
}

}  // namespace

int dense_forward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                  const float *weights, const float *bias, float *y, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "dense_forward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (in == 0 || out == 0 || n > size_t(INT_MAX) || in > size_t(INT_MAX) || out > size_t(INT_MAX))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: bad shape (n %zu, in %zu, out %zu)",
                    c.ordinal, call, n, in, out);
    if (n == 0) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!product({n, in}, xs) || !product({out, in}, ws) || !product({n, out}, ys))
      return bad_size(c, call, e);
    Span sx, sw, sb, sy;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "weights", weights, ws, false, sw, e)) return rc;
    if (int rc = floats(c, call, "bias", bias, out, true, sb, e)) return rc;
    if (int rc = floats(c, call, "y", y, ys, false, sy, e)) return rc;
    return enqueue(c, call, {sx, sw, sb, sy}, [=] {
      kernels::dense_forward(n, in, out, sx.f(), sw.f(), sb ? sb.f() : nullptr, sy.f());
    });
  });
}

int dense_backward(dpt_backend_context *ctx, size_t n, size_t in, size_t out, const float *x,
                   const float *weights, const float *dy, float *dx, float *dweights, float *dbias,
                   char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "dense_backward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (in == 0 || out == 0 || n > size_t(INT_MAX) || in > size_t(INT_MAX) || out > size_t(INT_MAX))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: bad shape (n %zu, in %zu, out %zu)",
                    c.ordinal, call, n, in, out);
    if (n == 0) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!product({n, in}, xs) || !product({out, in}, ws) || !product({n, out}, ys))
      return bad_size(c, call, e);
    Span sx, sw, sdy, sdx, sdw, sdb;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "weights", weights, ws, false, sw, e)) return rc;
    if (int rc = floats(c, call, "dy", dy, ys, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dx", dx, xs, true, sdx, e)) return rc;
    if (int rc = floats(c, call, "dweights", dweights, ws, false, sdw, e)) return rc;
    if (int rc = floats(c, call, "dbias", dbias, out, true, sdb, e)) return rc;
    return enqueue(c, call, {sx, sw, sdy, sdx, sdw, sdb}, [=] {
      kernels::dense_backward(n, in, out, sx.f(), sw.f(), sdy.f(), sdx ? sdx.f() : nullptr, sdw.f(),
                              sdb ? sdb.f() : nullptr);
    });
  });
}

int bias_add(dpt_backend_context *ctx, size_t n, size_t channels, size_t pixels, const float *bias, float *y,
             char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "bias_add";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (n == 0) return 0;
    if (channels == 0 || pixels == 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: bad shape (%zu channels, %zu pixels)", c.ordinal, call, channels, pixels);
    size_t total = 0;
    if (!product({n, channels, pixels}, total)) return bad_size(c, call, e);
    Span sb, sy;
    if (int rc = floats(c, call, "bias", bias, channels, false, sb, e)) return rc;
    if (int rc = floats(c, call, "y", y, total, false, sy, e)) return rc;
    return enqueue(c, call, {sb, sy}, [=] { kernels::bias_add(n, channels, pixels, sb.f(), sy.f()); });
  });
}

int bias_grad(dpt_backend_context *ctx, size_t n, size_t channels, size_t pixels, const float *dy,
              float *dbias, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "bias_grad";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (n == 0) return 0;
    if (channels == 0 || pixels == 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "cuda:%d: %s: bad shape (%zu channels, %zu pixels)", c.ordinal, call, channels, pixels);
    size_t total = 0;
    if (!product({n, channels, pixels}, total)) return bad_size(c, call, e);
    Span sdy, sdb;
    if (int rc = floats(c, call, "dy", dy, total, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dbias", dbias, channels, false, sdb, e)) return rc;
    return enqueue(c, call, {sdy, sdb}, [=] { kernels::bias_grad(n, channels, pixels, sdy.f(), sdb.f()); });
  });
}

int conv2d_forward(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                   const float *weights, const float *bias, float *y, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "conv2d_forward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Conv k{};
    bool empty = false;
    if (int rc = conv_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!conv_sizes(k, xs, ws, ys)) return bad_size(c, call, e);
    Span sx, sw, sb, sy;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "weights", weights, ws, false, sw, e)) return rc;
    if (int rc = floats(c, call, "bias", bias, k.out_c, true, sb, e)) return rc;
    if (int rc = floats(c, call, "y", y, ys, false, sy, e)) return rc;
    return enqueue(c, call, {sx, sw, sb, sy},
                   [=] { kernels::conv_forward(k, sx.f(), sw.f(), sb ? sb.f() : nullptr, sy.f()); });
  });
}

int conv2d_backward_data(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape,
                         const float *weights, const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "conv2d_backward_data";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Conv k{};
    bool empty = false;
    if (int rc = conv_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!conv_sizes(k, xs, ws, ys)) return bad_size(c, call, e);
    Span sw, sdy, sdx;
    if (int rc = floats(c, call, "weights", weights, ws, false, sw, e)) return rc;
    if (int rc = floats(c, call, "dy", dy, ys, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dx", dx, xs, false, sdx, e)) return rc;
    return enqueue(c, call, {sw, sdy, sdx},
                   [=] { kernels::conv_backward_data(k, sw.f(), sdy.f(), sdx.f()); });
  });
}

int conv2d_backward_filter(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *x,
                           const float *dy, float *dweights, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "conv2d_backward_filter";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Conv k{};
    bool empty = false;
    if (int rc = conv_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!conv_sizes(k, xs, ws, ys)) return bad_size(c, call, e);
    Span sx, sdy, sdw;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "dy", dy, ys, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dweights", dweights, ws, false, sdw, e)) return rc;
    return enqueue(c, call, {sx, sdy, sdw},
                   [=] { kernels::conv_backward_filter(k, sx.f(), sdy.f(), sdw.f()); });
  });
}

int conv2d_backward_bias(dpt_backend_context *ctx, const dpt_backend_conv2d_shape *shape, const float *dy,
                         float *dbias, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "conv2d_backward_bias";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Conv k{};
    bool empty = false;
    if (int rc = conv_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ws = 0, ys = 0;
    if (!conv_sizes(k, xs, ws, ys)) return bad_size(c, call, e);
    Span sdy, sdb;
    if (int rc = floats(c, call, "dy", dy, ys, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dbias", dbias, k.out_c, false, sdb, e)) return rc;
    const size_t pixels = k.out_h * k.out_w;
    return enqueue(c, call, {sdy, sdb}, [=] { kernels::bias_grad(k.n, k.out_c, pixels, sdy.f(), sdb.f()); });
  });
}

int pool_forward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x, float *y,
                 char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "pool_forward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Pool k{};
    bool empty = false;
    if (int rc = pool_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ys = 0;
    if (!product({k.planes, k.h, k.w}, xs) || !product({k.planes, k.out_h, k.out_w}, ys))
      return bad_size(c, call, e);
    Span sx, sy;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "y", y, ys, false, sy, e)) return rc;
    return enqueue(c, call, {sx, sy}, [=] { kernels::pool_forward(k, sx.f(), sy.f()); });
  });
}

int pool_backward(dpt_backend_context *ctx, const dpt_backend_pool_shape *shape, const float *x,
                  const float *y, const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "pool_backward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    kernels::Pool k{};
    bool empty = false;
    if (int rc = pool_shape(c, shape, call, k, empty, e)) return rc;
    if (empty) return 0;
    size_t xs = 0, ys = 0;
    if (!product({k.planes, k.h, k.w}, xs) || !product({k.planes, k.out_h, k.out_w}, ys))
      return bad_size(c, call, e);
    Span sx, sy, sdy, sdx;
    if (int rc = floats(c, call, "x", x, xs, false, sx, e)) return rc;
    if (int rc = floats(c, call, "y", y, ys, false, sy, e)) return rc;
    if (int rc = floats(c, call, "dy", dy, ys, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dx", dx, xs, false, sdx, e)) return rc;
    return enqueue(c, call, {sx, sy, sdy, sdx}, [=] { kernels::pool_backward(k, sx.f(), sdy.f(), sdx.f()); });
  });
}

int activation_forward(dpt_backend_context *ctx, int kind, size_t count, const float *x, float *y,
                       char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "activation_forward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (int rc = activation_kind(c, kind, call, e)) return rc;
    if (count == 0) return 0;
    Span sx, sy;
    if (int rc = floats(c, call, "x", x, count, false, sx, e)) return rc;
    if (int rc = floats(c, call, "y", y, count, false, sy, e)) return rc;
    return enqueue(c, call, {sx, sy}, [=] { kernels::activation_forward(kind, count, sx.f(), sy.f()); });
  });
}

int activation_backward(dpt_backend_context *ctx, int kind, size_t count, const float *x, const float *y,
                        const float *dy, float *dx, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "activation_backward";
  return with_context(ctx, e, call, [&](dpt_backend_context &c) {
    if (int rc = activation_kind(c, kind, call, e)) return rc;
    if (count == 0) return 0;
    Span sx, sy, sdy, sdx;
    if (int rc = floats(c, call, "x", x, count, false, sx, e)) return rc;
    if (int rc = floats(c, call, "y", y, count, false, sy, e)) return rc;
    if (int rc = floats(c, call, "dy", dy, count, false, sdy, e)) return rc;
    if (int rc = floats(c, call, "dx", dx, count, false, sdx, e)) return rc;
    return enqueue(c, call, {sx, sy, sdy, sdx},
                   [=] { kernels::activation_backward(kind, count, sy.f(), sdy.f(), sdx.f()); });
  });
}

}  // namespace dpt_sim
