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

// The norm in the core's order (optim/optimizer.hpp): one CUDA block of kLanes threads per norm block (or
// piece of one, for a range that starts or ends inside a block); thread j adds the squares of the piece's
// elements j, j + 8, ... in index order from 0.0, each product and sum rounded on its own (no fused
// multiply-add), and thread 0 adds the lanes in order from 0.0: the CPU's bits.
constexpr size_t kNormBlock = DPT_BACKEND_NORM_BLOCK;
constexpr unsigned kLanes = 8;

// The pieces of [begin, end) cut at the multiples of kNormBlock.
size_t norm_pieces(size_t begin, size_t end) {
  return end > begin ? (end - 1) / kNormBlock - begin / kNormBlock + 1 : 0;
}

__global__ void block_sums_kernel(const float *x, size_t begin, size_t end, double *sums) {
  __shared__ double lane[kLanes];
  const size_t block = begin / kNormBlock + blockIdx.x;
  const size_t lo = block * kNormBlock > begin ? block * kNormBlock : begin;
  const size_t hi = (block + 1) * kNormBlock < end ? (block + 1) * kNormBlock : end;
  double sum = 0.0;
  for (size_t i = lo + threadIdx.x; i < hi; i += kLanes) {
    const double g = double(x[i - begin]);
    sum = __dadd_rn(sum, __dmul_rn(g, g));
  }
  lane[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double total = 0.0;
  for (unsigned j = 0; j < kLanes; ++j) total = __dadd_rn(total, lane[j]);
  sums[blockIdx.x] = total;
}

// The block sums added in order from 0.0, then the (correctly rounded) square root.
__global__ void norm_kernel(const double *sums, size_t blocks, double *out) {
  double total = 0.0;
  for (size_t b = 0; b < blocks; ++b) total = __dadd_rn(total, sums[b]);
  *out = sqrt(total);
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
    const size_t blocks = norm_pieces(0, count);
    double *sums = nullptr;
    if (blocks > 0) {
      if (const int rc = ensure_scratch(c, blocks * sizeof(double), e)) return rc;
      sums = static_cast<double *>(c.scratch);
      block_sums_kernel<<<unsigned(blocks), kLanes, 0, c.stream>>>(x, 0, count, sums);
      if (const int rc = check_launch(c, "l2_norm block sums kernel", e)) return rc;
    }
    norm_kernel<<<1, 1, 0, c.stream>>>(sums, blocks, out);
    return check_launch(c, "l2_norm sum kernel", e);
  });
}

int l2_block_sums(dpt_backend_context *ctx, const float *x, size_t begin, size_t end, double *sums,
                  char *error, size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "l2_block_sums", [&](dpt_backend_context &c) {
    const size_t pieces = norm_pieces(begin, end);
    if (pieces == 0) return 0;
    if (x == nullptr || sums == nullptr) return null_pointer(c, "l2_block_sums", e);
    if (pieces > 0x7fffffffu)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: l2_block_sums: %zu blocks", c.ordinal,
                    pieces);
    block_sums_kernel<<<unsigned(pieces), kLanes, 0, c.stream>>>(x, begin, end, sums);
    return check_launch(c, "l2_block_sums kernel", e);
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
