// "causal_self_attention" (src/ops/causal_self_attention.cpp): per sample and head, S = Q K^T / sqrt(d)
// (a GEMM over the whole T x T square; the entries above the diagonal are then ignored), each row i's
// softmax over j <= i in a fixed order, O = P V. Backward recomputes S and P from the saved row maxima and
// sums (the same operations on the same values: the forward's bits), then dV = P^T dO, dP = dO V^T,
// dS = P * (dP - rowsum(P * dP)), dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d). With attention dropout
// (reals[0] > 0, training) forward uses P * M (M: 0, or 1 / (1 - rate), interface/op_math.hpp's masks of
// element (head, i, j)), and backward regenerates M: dV = (P M)^T dO, dP = (dO V^T) M. The exponentials are
// interface/op_math.hpp's and the row sums run in eight fixed-order lanes, so the row loops vectorize (once
// per x86-64 level, DPT_CLONES: the same bits).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/cpu_ops.hpp"
#include "backend/cpu/ops/op_tensors.hpp"
#include "core/target_clones.hpp"
#include "interface/op_math.hpp"

namespace dpt::cpu {

namespace {

struct Attention {
  size_t t, c, heads, d;
  float rate;                           // attention dropout in this pass (0: none)
  gemm::Precision precision;            // of the products' inputs
  size_t row() const { return 3 * c; }  // floats between two positions of qkv
  float scale() const { return float(1.0 / std::sqrt(double(d))); }
};

Attention attention_of(const dpt_op_call &call) {
  const size_t t = size_t(call.inputs[0].dims[0]), c = size_t(call.inputs[0].dims[1]) / 3;
  const size_t heads = size_t(call.ints[0]);
  return Attention{
      t, c, heads, c / heads, call.training != 0 ? float(call.reals[0]) : 0.0f, blas::precision_of(call)};
}

// Multiplies head h's probabilities of one sample by its dropout mask (rows i, columns j <= i).
void apply_mask(const Attention &a, uint64_t sample_key, size_t h, float *p) {
  const float keep_scale = 1.0f / (1.0f - a.rate);
  for (size_t i = 0; i < a.t; ++i) {
    float *row = p + i * a.t;
    const uint64_t first = (h * a.t + i) * a.t;
    for (size_t j = 0; j <= i; ++j)
      row[j] *= op_math::dropout_factor(sample_key, first + j, a.rate, keep_scale);
  }
}

uint64_t sample_key(const dpt_op_call &call, size_t i) {
  return op_math::dropout_sample_key(op_math::dropout_key(call.seed, call.step, call.node),
                                     call.first_sample + i);
}

// S and, in backward, dP (and with dropout P M): three T x T matrices.
size_t scratch_bytes(const dpt_op_call &call) {
  const Attention a = attention_of(call);
  return 3 * a.t * a.t * sizeof(float);
}

// s = scale * q k^T for one head (rows of q and k are a.row() apart).
void scores(const Attention &a, const float *q, const float *k, float *s) {
  blas::gemm(false, true, a.t, a.t, a.d, a.scale(), q, a.row(), k, a.row(), 0.0f, s, a.t, a.precision);
}

// The sum of x[0, n) in eight lanes (element j to lane j % 8, in order), the lanes then added in order: a
// fixed order, so the same bits on every run, and a loop that vectorizes.
DPT_CLONES float lane_sum(const float *__restrict x, size_t n) {
  float lane[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t l = 0; l < 8; ++l) lane[l] += x[j + l];
  for (size_t l = 0; j < n; ++j, ++l) lane[l] += x[j];
  float total = 0.0f;
  for (float v : lane) total += v;
  return total;
}

// The same for sum x[j] * y[j].
DPT_CLONES float lane_dot(const float *__restrict x, const float *__restrict y, size_t n) {
  float lane[8] = {};
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (size_t l = 0; l < 8; ++l) lane[l] += x[j + l] * y[j + l];
  for (size_t l = 0; j < n; ++j, ++l) lane[l] += x[j] * y[j];
  float total = 0.0f;
  for (float v : lane) total += v;
  return total;
}

// exp(row[j] - m) for j < n (every row[j] <= m).
DPT_CLONES void exponentials(float *__restrict row, size_t n, float m) {
  for (size_t j = 0; j < n; ++j) row[j] = op_math::exp_nonpositive(row[j] - m);
}

// row[j] / total for j < n, zeros from n to t.
DPT_CLONES void normalise(float *__restrict row, size_t n, size_t t, float total) {
  for (size_t j = 0; j < n; ++j) row[j] /= total;
  for (size_t j = n; j < t; ++j) row[j] = 0.0f;
}

// Row i of s becomes the probabilities over j <= i (zeros after), from its maximum and sum of exponentials
// (backward's recomputation of what forward wrote: the same operations).
void probabilities(const Attention &a, const float *max, const float *sum, float *s) {
  for (size_t i = 0; i < a.t; ++i) {
    float *row = s + i * a.t;
    exponentials(row, i + 1, max[i]);
    normalise(row, i + 1, a.t, sum[i]);
  }
}

void forward(const dpt_op_call &call) {
  const Attention a = attention_of(call);
  float *s = static_cast<float *>(call.scratch);
  for (size_t i = 0; i < n(call); ++i) {
    const float *qkv = in(call) + i * a.t * a.row();
    float *y = out(call) + i * a.t * a.c;
    float *saved = static_cast<float *>(call.saved) + i * 2 * a.heads * a.t;
    for (size_t h = 0; h < a.heads; ++h) {
      const float *q = qkv + h * a.d, *k = q + a.c, *v = q + 2 * a.c;
      float *max = saved + 2 * h * a.t, *sum = max + a.t;
      scores(a, q, k, s);
      // Each row's softmax in place; the same float operations as probabilities() (exp(s - max), then
      // divided by the sum), so backward's recomputation gives these bits.
      for (size_t r = 0; r < a.t; ++r) {
        float *row = s + r * a.t;
        float m = row[0];
        for (size_t j = 1; j <= r; ++j) m = row[j] > m ? row[j] : m;
        exponentials(row, r + 1, m);
        const float total = lane_sum(row, r + 1);
        normalise(row, r + 1, a.t, total);
        max[r] = m;
        sum[r] = total;
      }
      if (a.rate > 0.0f) apply_mask(a, sample_key(call, i), h, s);
      blas::gemm(false, false, a.t, a.d, a.t, 1.0f, s, a.t, v, a.row(), 0.0f, y + h * a.d, a.c,
                 a.precision);  // O = P V
    }
  }
}

void backward(const dpt_op_call &call) {
  float *d = dx(call);
  if (d == nullptr) return;
  const Attention a = attention_of(call);
  float *p = static_cast<float *>(call.scratch), *dp = p + a.t * a.t, *dropped = dp + a.t * a.t;
  for (size_t i = 0; i < n(call); ++i) {
    const float *qkv = in(call) + i * a.t * a.row(), *g = dy(call) + i * a.t * a.c;
    const float *saved = static_cast<const float *>(call.saved) + i * 2 * a.heads * a.t;
    float *dqkv = d + i * a.t * a.row();
    for (size_t h = 0; h < a.heads; ++h) {
      const float *q = qkv + h * a.d, *k = q + a.c, *v = q + 2 * a.c, *go = g + h * a.d;
      float *dq = dqkv + h * a.d, *dk = dq + a.c, *dv = dq + 2 * a.c;
      scores(a, q, k, p);
      probabilities(a, saved + 2 * h * a.t, saved + 2 * h * a.t + a.t, p);
      blas::gemm(false, true, a.t, a.t, a.d, 1.0f, go, a.c, v, a.row(), 0.0f, dp, a.t,
                 a.precision);  // dP = dO V^T
      if (a.rate > 0.0f) {
        // dP of the undropped probabilities: (dO V^T) M; and dV from the dropped ones, P M, kept in the
        // dS buffer's place: the GEMM needs P M before dS overwrites dP, and P itself after.
        const uint64_t key = sample_key(call, i);
        apply_mask(a, key, h, dp);
        std::copy(p, p + a.t * a.t, dropped);
        apply_mask(a, key, h, dropped);
        blas::gemm(true, false, a.t, a.d, a.t, 1.0f, dropped, a.t, go, a.c, 0.0f, dv, a.row(),
                   a.precision);  // dV = (PM)^T dO
      } else {
        blas::gemm(true, false, a.t, a.d, a.t, 1.0f, p, a.t, go, a.c, 0.0f, dv, a.row(),
                   a.precision);  // dV = P^T dO
      }
      for (size_t r = 0; r < a.t; ++r) {  // dS = P * (dP - sum_j P dP), in place of dP
        const float *__restrict pr = p + r * a.t;
        float *__restrict dr = dp + r * a.t;
        const float dot = lane_dot(pr, dr, r + 1);
        for (size_t j = 0; j <= r; ++j) dr[j] = pr[j] * (dr[j] - dot);
        for (size_t j = r + 1; j < a.t; ++j) dr[j] = 0.0f;
      }
      blas::gemm(false, false, a.t, a.d, a.t, a.scale(), dp, a.t, k, a.row(), 0.0f, dq, a.row(),
                 a.precision);  // dS K
      blas::gemm(true, false, a.t, a.d, a.t, a.scale(), dp, a.t, q, a.row(), 0.0f, dk, a.row(),
                 a.precision);  // dS^T Q
    }
  }
}

}  // namespace

extern const OpKernel kCausalSelfAttention = {"causal_self_attention", forward, backward, scratch_bytes};

}  // namespace dpt::cpu
