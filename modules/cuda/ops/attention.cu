// "causal_self_attention" (op_call.h), the CPU kernel's algorithm on the GPU: per sample, the heads' score
// matrices S = Q K^T / sqrt(d) by one strided-batched SGEMM over the heads (head h's Q, K and V are column
// blocks d wide of the [T, 3C] input), each row's softmax over j <= i by one warp (its maximum and its sum
// of exponentials saved for backward, 8 bytes per head and position), O = P V by another batched SGEMM.
// Backward recomputes S and P from the saved maximum and sum, then dV = P^T dO, dP = dO V^T,
// dS = P * (dP - rowsum(P * dP)), dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d). The exponentials are
// interface/op_math.hpp's, as on the CPU; the sums run in a fixed butterfly, so the same bits on every run.
// Attention dropout (reals[0], training): P M forward, the CPU's masks (op_math's dropout_factor of
// element (head, i, j) of the sample); backward dV = (P M)^T dO and dP = (dO V^T) M.
// Scratch: three T x T matrices per head (S, dP, P M) of one sample at a time.
#include "cuda/kernels.hpp"
#include "cuda/ops/launch.cuh"
#include "cuda/ops/matmul.hpp"
#include "cuda/ops/ops.hpp"
#include "interface/op_math.hpp"

namespace dpt::cuda {

namespace {

struct Attention {
  size_t t, c, heads, d;
  float rate;  // attention dropout in this pass (0: none)
  size_t row() const { return 3 * c; }
  float scale() const { return float(1.0 / sqrt(double(d))); }
};

// Row-major C[m x n] = alpha op(A) op(B) + beta C for `batch` matrices `stride_*` floats apart, as the CPU's
// blas::gemm, at the call's matmul_dtype (ops/matmul.hpp): cuBLAS is column-major, where a row-major matrix
// is its transpose, so C^T = op(B)^T op(A)^T is the same call with the operands swapped.
int row_gemm(dpt_backend_context &c, const dpt_op_call &call, bool ta, bool tb, size_t m, size_t n, size_t k,
             float alpha, const float *a, size_t lda, long long stride_a, const float *b, size_t ldb,
             long long stride_b, float beta, float *out, size_t ldc, long long stride_c, size_t batch,
             const Error &e) {
  return gemm(c, call.matmul_dtype, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, int(n),
              int(m), int(k), alpha, {b, int(ldb), stride_b}, {a, int(lda), stride_a}, beta, out, int(ldc),
              stride_c, int(batch), e);
}

// The maximum, then the sum, of the 32 lanes' values, in every lane (fixed butterflies).
__device__ float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}
__device__ float warp_sum_float(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// One warp per row r of head h's scores (blockIdx.y: the head): the softmax over j <= r in place, zeros
// after, and the row's maximum and sum into saved ([heads][2][T]: maxima, then sums).
__global__ void softmax_kernel(float *s, float *saved, size_t t) {
  const size_t h = blockIdx.y, lane = threadIdx.x % kWarp;
  for (size_t r = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; r < t;
       r += size_t(gridDim.x) * blockDim.x / kWarp) {
    float *row = s + (h * t + r) * t;
    float m = -3.4e38f;
    for (size_t j = lane; j <= r; j += kWarp) m = row[j] > m ? row[j] : m;
    m = warp_max(m);
    float total = 0.0f;
    for (size_t j = lane; j <= r; j += kWarp)
      total = __fadd_rn(total, row[j] = op_math::exp_nonpositive(row[j] - m));
    total = warp_sum_float(total);
    for (size_t j = lane; j < t; j += kWarp) row[j] = j <= r ? __fdiv_rn(row[j], total) : 0.0f;
    if (lane == 0) {
      saved[2 * h * t + r] = m;
      saved[(2 * h + 1) * t + r] = total;
    }
  }
}

// Backward's P from S and the saved maxima and sums: the operations forward did.
__global__ void probabilities_kernel(float *s, const float *saved, size_t t, size_t heads) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < heads * t * t;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t h = i / (t * t), r = i / t % t, j = i % t;
    s[i] = j <= r
               ? __fdiv_rn(op_math::exp_nonpositive(s[i] - saved[2 * h * t + r]), saved[(2 * h + 1) * t + r])
               : 0.0f;
  }
}

// dS = P * (dP - sum_j P dP) in place of dP, one warp per row.
__global__ void score_grad_kernel(const float *p, float *dp, size_t t) {
  const size_t h = blockIdx.y, lane = threadIdx.x % kWarp;
  for (size_t r = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; r < t;
       r += size_t(gridDim.x) * blockDim.x / kWarp) {
    const float *pr = p + (h * t + r) * t;
    float *dr = dp + (h * t + r) * t;
    float dot = 0.0f;
    for (size_t j = lane; j <= r; j += kWarp) dot = __fadd_rn(dot, __fmul_rn(pr[j], dr[j]));
    dot = warp_sum_float(dot);
    for (size_t j = lane; j < t; j += kWarp) dr[j] = j <= r ? __fmul_rn(pr[j], __fsub_rn(dr[j], dot)) : 0.0f;
  }
}

// Multiplies the heads' probabilities of one sample by their dropout masks (rows i, columns j <= i).
__global__ void mask_kernel(float *p, uint64_t sample_key, size_t t, size_t heads, float rate) {
  const float keep_scale = 1.0f / (1.0f - rate);
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < heads * t * t;
       i += size_t(gridDim.x) * blockDim.x)
    if (i % t <= i / t % t) p[i] = __fmul_rn(p[i], op_math::dropout_factor(sample_key, i, rate, keep_scale));
}

uint64_t sample_key(const dpt_op_call &call, size_t i) {
  return op_math::dropout_sample_key(op_math::dropout_key(call.seed, call.step, call.node),
                                     call.first_sample + i);
}

int apply_mask(dpt_backend_context &c, const Attention &a, uint64_t key, float *p, const Error &e) {
  mask_kernel<<<grid_for(a.heads * a.t * a.t), kOpThreads, 0, c.stream>>>(p, key, a.t, a.heads, a.rate);
  return check_launch(c, "causal_self_attention dropout kernel", e);
}

int shape_of(const dpt_backend_context &c, const dpt_op_call &call, const char *pass, const Error &e,
             Attention &a) {
  const dpt_tensor &x = call.inputs[0], &y = call.output;
  const int64_t heads = call.ints[0];
  const int64_t t = x.rank == 2 ? x.dims[0] : 0, c3 = x.rank == 2 ? x.dims[1] : 0;
  if (t <= 0 || c3 % 3 != 0 || heads <= 0 || (c3 / 3) % heads != 0 || !has_dims(y, {t, c3 / 3}) || t > 8192)
    return invalid_call(c, call, pass, e, "bad shape (input %s, output %s, heads %lld)", dims_text(x).text,
                        dims_text(y).text, (long long)heads);
  const float rate = call.training != 0 ? float(call.reals[0]) : 0.0f;
  if (!(rate >= 0.0f && rate < 1.0f))
    return invalid_call(c, call, pass, e, "dropout %g is outside [0, 1)", double(call.reals[0]));
  a = Attention{size_t(t), size_t(c3 / 3), size_t(heads), size_t(c3 / 3 / heads), rate};
  if (call.saved_bytes < size_t(call.n) * 2 * a.heads * a.t * sizeof(float))
    return invalid_call(c, call, pass, e, "saved holds %zu bytes, %zu needed", call.saved_bytes,
                        size_t(call.n) * 2 * a.heads * a.t * sizeof(float));
  return 0;
}

dim3 rows_grid(const Attention &a) {
  return dim3(unsigned((a.t + kOpThreads / kWarp - 1) / (kOpThreads / kWarp)), unsigned(a.heads));
}

int forward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Attention a{};
  if (const int rc = shape_of(c, call, kForward, e, a)) return rc;
  if (call.n == 0) return 0;
  const float *x = input(call);
  float *y = output(call), *saved = static_cast<float *>(call.saved);
  if (const int rc =
          require(c, call, kForward, e, {{"inputs[0].data", x}, {"output.data", y}, {"saved", saved}}))
    return rc;
  if (const int rc = ensure_scratch(c, a.heads * a.t * a.t * sizeof(float), e)) return rc;
  float *s = static_cast<float *>(c.scratch);
  const long long tt = (long long)(a.t * a.t), d = (long long)a.d;
  for (size_t i = 0; i < size_t(call.n); ++i) {
    const float *q = x + i * a.t * a.row(), *k = q + a.c, *v = q + 2 * a.c;
    float *sv = saved + i * 2 * a.heads * a.t;
    if (const int rc = row_gemm(c, call, false, true, a.t, a.t, a.d, a.scale(), q, a.row(), d, k, a.row(), d,
                                0.0f, s, a.t, tt, a.heads, e))
      return rc;
    softmax_kernel<<<rows_grid(a), kOpThreads, 0, c.stream>>>(s, sv, a.t);
    if (const int rc = check_launch(c, "causal_self_attention softmax kernel", e)) return rc;
    if (a.rate > 0.0f)
      if (const int rc = apply_mask(c, a, sample_key(call, i), s, e)) return rc;
    // O = P V, head h into columns [h d, (h + 1) d) of y
    if (const int rc = row_gemm(c, call, false, false, a.t, a.d, a.t, 1.0f, s, a.t, tt, v, a.row(), d, 0.0f,
                                y + i * a.t * a.c, a.c, d, a.heads, e))
      return rc;
  }
  return 0;
}

int backward(dpt_backend_context &c, const dpt_op_call &call, const Error &e) {
  Attention a{};
  if (const int rc = shape_of(c, call, kBackward, e, a)) return rc;
  float *dx = input_grad(call);
  if (call.n == 0 || dx == nullptr) return 0;
  const float *x = input(call), *dy = output_grad(call), *saved = static_cast<const float *>(call.saved);
  if (const int rc =
          require(c, call, kBackward, e, {{"inputs[0].data", x}, {"output_grad", dy}, {"saved", saved}}))
    return rc;
  if (const int rc = ensure_scratch(c, 3 * a.heads * a.t * a.t * sizeof(float), e)) return rc;
  float *p = static_cast<float *>(c.scratch), *dp = p + a.heads * a.t * a.t,
        *dropped = dp + a.heads * a.t * a.t;
  const long long tt = (long long)(a.t * a.t), d = (long long)a.d;
  for (size_t i = 0; i < size_t(call.n); ++i) {
    const float *q = x + i * a.t * a.row(), *k = q + a.c, *v = q + 2 * a.c, *go = dy + i * a.t * a.c;
    float *dq = dx + i * a.t * a.row(), *dk = dq + a.c, *dv = dq + 2 * a.c;
    const float *sv = saved + i * 2 * a.heads * a.t;
    int rc = row_gemm(c, call, false, true, a.t, a.t, a.d, a.scale(), q, a.row(), d, k, a.row(), d, 0.0f, p,
                      a.t, tt, a.heads, e);
    if (rc) return rc;
    probabilities_kernel<<<grid_for(a.heads * a.t * a.t), kOpThreads, 0, c.stream>>>(p, sv, a.t, a.heads);
    if ((rc = check_launch(c, "causal_self_attention probabilities kernel", e))) return rc;
    // dP = dO V^T (with dropout: times M)
    if ((rc = row_gemm(c, call, false, true, a.t, a.t, a.d, 1.0f, go, a.c, d, v, a.row(), d, 0.0f, dp, a.t,
                       tt, a.heads, e)))
      return rc;
    const float *used = p;  // the probabilities O was made of: P, or P M
    if (a.rate > 0.0f) {
      const int ordinal = c.ordinal;
      const uint64_t key = sample_key(call, i);
      if ((rc = apply_mask(c, a, key, dp, e))) return rc;
      DPT_CUDA("cudaMemcpyAsync (attention dropout)",
               cudaMemcpyAsync(dropped, p, a.heads * a.t * a.t * sizeof(float), cudaMemcpyDeviceToDevice,
                               c.stream));
      if ((rc = apply_mask(c, a, key, dropped, e))) return rc;
      used = dropped;
    }
    // dV = P^T dO (or (P M)^T dO)
    if ((rc = row_gemm(c, call, true, false, a.t, a.d, a.t, 1.0f, used, a.t, tt, go, a.c, d, 0.0f, dv,
                       a.row(), d, a.heads, e)))
      return rc;
    score_grad_kernel<<<rows_grid(a), kOpThreads, 0, c.stream>>>(p, dp, a.t);
    if ((rc = check_launch(c, "causal_self_attention score gradient kernel", e))) return rc;
    // dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d)
    if ((rc = row_gemm(c, call, false, false, a.t, a.d, a.t, a.scale(), dp, a.t, tt, k, a.row(), d, 0.0f, dq,
                       a.row(), d, a.heads, e)))
      return rc;
    if ((rc = row_gemm(c, call, true, false, a.t, a.d, a.t, a.scale(), dp, a.t, tt, q, a.row(), d, 0.0f, dk,
                       a.row(), d, a.heads, e)))
      return rc;
  }
  return 0;
}

}  // namespace

extern const OpKernel kCausalSelfAttention = {"causal_self_attention", 1, 1, 0, 0, forward, backward};

}  // namespace dpt::cuda
