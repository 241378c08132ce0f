// The formulas of src/optim/optimizer.cpp, operation for operation and in the same order. Every operation
// is an explicitly rounded intrinsic (__fmul_rn, __fadd_rn, ...), which nvcc never contracts into a fused
// multiply-add, so each result is the correctly rounded IEEE value the CPU computes: the updates match the
// CPU's bit for bit (unless the host compiler contracts, e.g. with -march=native).
#include <cmath>

#include "cuda/kernels.hpp"
#include "cuda/optimizer.hpp"

namespace dpt::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 8192 ? blocks : 8192);
}

#define DPT_GRID_STRIDE(i, count)                                             \
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += size_t(gridDim.x) * blockDim.x)

// p -= lr * (scale * g + wd * p)
__global__ void sgd_kernel(float *p, const float *g, size_t count, float lr, float scale, float wd) {
  DPT_GRID_STRIDE(i, count) {
    const float d = __fadd_rn(__fmul_rn(scale, g[i]), __fmul_rn(wd, p[i]));
    p[i] = __fsub_rn(p[i], __fmul_rn(lr, d));
  }
}

// d = scale * g + wd * p; buf = mu * buf + d; p -= lr * (nesterov ? d + mu * buf : buf)
__global__ void momentum_kernel(float *p, const float *g, float *buf, size_t count, float lr, float scale,
                                float wd, float mu, bool nesterov) {
  DPT_GRID_STRIDE(i, count) {
    const float d = __fadd_rn(__fmul_rn(scale, g[i]), __fmul_rn(wd, p[i]));
    const float b = __fadd_rn(__fmul_rn(mu, buf[i]), d);
    buf[i] = b;
    const float step = nesterov ? __fadd_rn(d, __fmul_rn(mu, b)) : b;
    p[i] = __fsub_rn(p[i], __fmul_rn(lr, step));
  }
}

struct AdamConstants {
  float b1, b2, eps, one_minus_b1, one_minus_b2, step_size, root_correction2, decay, scale;
};

// gi = scale * g; p *= decay; m = b1 m + (1 - b1) gi; v = b2 v + (1 - b2) gi gi;
// p -= step_size * m / (sqrt(v) / root_correction2 + eps)
__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, size_t count, AdamConstants k) {
  DPT_GRID_STRIDE(i, count) {
    const float gi = __fmul_rn(k.scale, g[i]);
    const float pi = __fmul_rn(p[i], k.decay);
    const float mi = __fadd_rn(__fmul_rn(k.b1, m[i]), __fmul_rn(k.one_minus_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(k.b2, v[i]), __fmul_rn(__fmul_rn(k.one_minus_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const float denominator = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.root_correction2), k.eps);
    p[i] = __fsub_rn(pi, __fdiv_rn(__fmul_rn(k.step_size, mi), denominator));
  }
}

__global__ void scale_kernel(float *x, size_t count, float alpha) {
  DPT_GRID_STRIDE(i, count) x[i] = __fmul_rn(x[i], alpha);
}

// The norm: a fixed grid (a function of count only, never of the GPU) in which thread t of block b adds the
// squares of elements b * kThreads + t + j * (blocks * kThreads) in double; each block adds its threads' sums
// in a fixed tree into partial[b]; one block then adds the partial sums the same way and takes the root.
constexpr unsigned kNormBlocks = 1024;

unsigned norm_blocks(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < kNormBlocks ? (blocks > 0 ? blocks : 1) : kNormBlocks);
}

__device__ void block_sum(double *part, double value) {
  part[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
}

__global__ void squares_kernel(const float *x, size_t count, double *partial) {
  __shared__ double part[kThreads];
  double sum = 0.0;
  DPT_GRID_STRIDE(i, count) sum += double(x[i]) * double(x[i]);
  block_sum(part, sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

__global__ void norm_kernel(const double *partial, unsigned blocks, double *out) {
  __shared__ double part[kThreads];
  double sum = 0.0;
  for (unsigned b = threadIdx.x; b < blocks; b += kThreads) sum += partial[b];
  block_sum(part, sum);
  if (threadIdx.x == 0) *out = sqrt(part[0]);
}

int null_pointer(const dpt_backend_context &c, const char *call, const Error &e) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer", c.ordinal, call);
}

}  // namespace

int optimizer_update(dpt_backend_context *ctx, const dpt_backend_optimizer *optimizer, uint64_t t, float lr,
                     float grad_scale, float *params, const float *grads, float *state, size_t count,
                     char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "optimizer_update", [&](dpt_backend_context &c) {
    if (optimizer == nullptr) return null_pointer(c, "optimizer_update", e);
    const dpt_backend_optimizer &o = *optimizer;
    if (o.kind != DPT_BACKEND_SGD && o.kind != DPT_BACKEND_ADAMW)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: optimizer_update: unknown optimizer %d",
                    c.ordinal, int(o.kind));
    if (count == 0) return 0;
    const bool needs_state = o.kind == DPT_BACKEND_ADAMW || o.momentum != 0.0f;
    if (params == nullptr || grads == nullptr || (needs_state && state == nullptr))
      return null_pointer(c, "optimizer_update", e);
    if (o.kind == DPT_BACKEND_SGD && o.momentum == 0.0f) {
      sgd_kernel<<<blocks_for(count), kThreads, 0, c.stream>>>(params, grads, count, lr, grad_scale,
                                                               o.weight_decay);
    } else if (o.kind == DPT_BACKEND_SGD) {
      momentum_kernel<<<blocks_for(count), kThreads, 0, c.stream>>>(
          params, grads, state, count, lr, grad_scale, o.weight_decay, o.momentum, o.nesterov != 0);
    } else {
      // The step's constants on the host, exactly as the CPU computes them (double pow and sqrt, then float).
      const double step = double(t + 1);
      const float correction1 = float(1.0 - std::pow(double(o.beta1), step));
      const float root_correction2 = float(std::sqrt(1.0 - std::pow(double(o.beta2), step)));
      const AdamConstants k{o.beta1,        o.beta2,          o.epsilon,        1.0f - o.beta1,
                            1.0f - o.beta2, lr / correction1, root_correction2, 1.0f - lr * o.weight_decay,
                            grad_scale};
      adamw_kernel<<<blocks_for(count), kThreads, 0, c.stream>>>(params, grads, state, state + count, count,
                                                                 k);
    }
    return check_launch(c, "optimizer kernel", e);
  });
}

int l2_norm(dpt_backend_context *ctx, const float *x, size_t count, double *out, char *error,
            size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "l2_norm", [&](dpt_backend_context &c) {
    if (out == nullptr || (count > 0 && x == nullptr)) return null_pointer(c, "l2_norm", e);
    const unsigned blocks = norm_blocks(count);
    if (const int rc = ensure_scratch(c, blocks * sizeof(double), e)) return rc;
    double *partial = static_cast<double *>(c.scratch);
    squares_kernel<<<blocks, kThreads, 0, c.stream>>>(x, count, partial);
    if (const int rc = check_launch(c, "l2_norm squares kernel", e)) return rc;
    norm_kernel<<<1, kThreads, 0, c.stream>>>(partial, blocks, out);
    return check_launch(c, "l2_norm sum kernel", e);
  });
}

int scale(dpt_backend_context *ctx, float *x, size_t count, float alpha, char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "scale", [&](dpt_backend_context &c) {
    if (count == 0) return 0;
    if (x == nullptr) return null_pointer(c, "scale", e);
    scale_kernel<<<blocks_for(count), kThreads, 0, c.stream>>>(x, count, alpha);
    return check_launch(c, "scale kernel", e);
  });
}

}  // namespace dpt::cuda
