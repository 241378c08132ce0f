// The arithmetic of the simulated kernels, on host memory (the simulator's read-write view of device
// memory): plain loops in FP32 (double where the interface says double) with the semantics of the CPU code
// in src/nn and src/optim. Where the CPU's order of operations is simple it is followed exactly (pooling,
// activations, loss, optimizers, norm, bias gradients), so those results are the CPU's bits; dense and
// convolution sum their products in a plain order of their own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interface/backend_interface.h"

namespace dpt_sim::kernels {

// y [n, out] = x [n, in] W^T + b (b may be NULL)
void dense_forward(size_t n, size_t in, size_t out, const float *x, const float *w, const float *b, float *y);
// dW += dy^T x; db += column sums of dy (db may be NULL); dx = dy W (dx may be NULL)
void dense_backward(size_t n, size_t in, size_t out, const float *x, const float *w, const float *dy,
                    float *dx, float *dw, float *db);

// y [n, channels, pixels] += bias [channels]
void bias_add(size_t n, size_t channels, size_t pixels, const float *bias, float *y);
// dbias [channels] += per sample, the sum over its pixels in the CPU's fixed order
void bias_grad(size_t n, size_t channels, size_t pixels, const float *dy, float *dbias);

struct Conv {
  size_t n, c, h, w, out_c, k, stride, padding, out_h, out_w;
};
void conv_forward(const Conv &s, const float *x, const float *w, const float *b, float *y);
void conv_backward_data(const Conv &s, const float *w, const float *dy, float *dx);
void conv_backward_filter(const Conv &s, const float *x, const float *dy, float *dw);

struct Pool {
  bool max;
  size_t planes, h, w, window, stride, out_h, out_w;  // planes = n * c
};
void pool_forward(const Pool &s, const float *x, float *y);
// Max: each window's gradient goes to its FIRST maximum (row-major), recomputed from x.
void pool_backward(const Pool &s, const float *x, const float *dy, float *dx);

void activation_forward(int kind, size_t count, const float *x, float *y);
void activation_backward(int kind, size_t count, const float *y, const float *dy, float *dx);

// A label outside [0, classes) gives a NaN loss (and counts as wrong).
dpt_backend_loss softmax_cross_entropy(size_t n, size_t classes, const float *logits, const int32_t *labels,
                                       float *dlogits);
void optimizer_update(const dpt_backend_optimizer &o, uint64_t t, float lr, float grad_scale, float *p,
                      const float *g, float *state, size_t count);
double l2_norm(const float *x, size_t count);
void scale(float *x, size_t count, float alpha);

}  // namespace dpt_sim::kernels
