/*
 * One op's call, in plain C: what every backend's kernel of an op receives (the CPU reference kernels in
 * src/backend/cpu/ops/, the CUDA module's in modules/cuda/ops/, the simulator's). The core's graph
 * executor fills it from the op's descriptor (src/ops/) for each pass; a backend looks the kernel up by
 * dpt_op_call.op (the op's name) and reads only the members that op defines (the table below).
 *
 * Backward receives every tensor forward had (inputs, output, parameters, saved), whether its op reads them
 * or not. No buffer is passed both as an input and as the output (kernels may use restrict).
 *
 * Layout: a tensor of activations holds n samples, each of dims[0] x ... x dims[rank - 1] elements,
 * row-major (images NCHW), contiguous. A parameter or buffer tensor has no sample dimension: dims is its
 * whole shape. Device pointers as the backend hands them out (host memory on a CPU device).
 *
 * Semantics, every op: a count of n = 0 samples is a no-op, except the two-phase training calls of an op
 * with statistics (batch_norm below), which run with n = 0 too (zero statistics; the running statistics
 * still follow the global batch). forward writes output (=). backward reads
 * output_grad (dL/dy) and writes input_grads[i] (=) for every input i whose pointer is not NULL (NULL: no
 * gradient is needed there), and ADDS (+=) the parameter gradients into param_grads[p] when not NULL.
 * A training forward may update the op's buffers (running statistics). What forward keeps for backward
 * goes into saved (saved_bytes as the descriptor sizes it); scratch is the backend's own per-call space.
 *
 * The ops and their members (ints[] / reals[] / params / buffers / saved):
 *   "dense"       y[units] = x W^T + b, x of any shape flattened; ints = {units, bias (0 or 1)}; params:
 *                 weight [units, in], bias [units] when ints[1] (param_count 2, else 1).
 *   "linear"      the same over the last dimension: x [..., in] -> y [..., units], each row by W; ints and
 *                 params as "dense" (the kernels run rows = n * sample size / in rows).
 *   "causal_self_attention"  x [T, 3C] (queries, keys, values side by side; head h owns columns
 *                 [h d, (h + 1) d) of each, d = C / heads) -> y [T, C]; ints = {heads}; no params. Position i
 *                 attends to positions j <= i: y_i = sum_j softmax_j(q_i . k_j / sqrt(d)) v_j. saved: the
 *                 maximum and the sum of exponentials of each score row (2 floats per head and position);
 *                 backward recomputes the scores from them. reals[0] = attention dropout: in training each
 *                 p_ij is multiplied by interface/op_math.hpp's dropout_factor of element (h T + i) T + j
 *                 under the sample's key, as "dropout" keys its elements; backward regenerates it.
 *   "position_embedding"  y[t] = x[t] + weight[t], x [T, C]; params weight [T, C] (GPT-2's "wpe"); no ints.
 *   "token_embedding"  x [T] int32 tokens (DPT_DTYPE_I32, each in [0, vocabulary): the executor checks them)
 *                 -> y [T, C], y[t] = weight[x[t]]; ints = {vocabulary, C}; params weight [vocabulary, C]
 *                 (GPT-2's "wte"). No input gradient; backward adds dy[t] into row x[t] of the weight
 *                 gradient, samples and positions in order.
 *   "conv2d"      cross-correlation, x [c, h, w] -> y [out_c, oh, ow], oh = (h + 2 padding - kernel) /
 *                 stride + 1; ints = {out_c, kernel, stride, padding, bias (0 or 1)}; params: weight
 *                 [out_c, c, k, k], bias [out_c] when ints[4].
 *   "avg_pool2d"  ints = {window, stride}; no padding, sizes round down.
 *   "max_pool2d"  ints = {window, stride}; saved: the int32 index (within the plane) of each window's
 *                 first maximum, one per output element; backward routes dy there.
 *   "relu", "sigmoid", "tanh"   elementwise; backward uses the output (y) only.
 *   "dropout"     reals[0] = rate; inverted dropout in training, identity otherwise; saved: the float
 *                 mask (0 or 1 / (1 - rate)) per element, keyed by (seed, step, node, first_sample + i,
 *                 element) so that it does not depend on the split.
 *   "flatten"     a view: the executor aliases its input and never calls a kernel.
 *   "add"         y = x0 + x1 (same shapes); the residual join.
 *   "concat"      y = the inputs stacked along dimension 0 (channels); the other dims equal.
 *   "global_avg_pool"  x [c, h, w] -> y [c], the mean of each plane.
 *   "gelu"        ints[0] = 0: x * Phi(x) (erf); 1: the tanh approximation; backward reads x.
 *   "layer_norm"  over the last dimension d of each sample: y = (x - mean) / sqrt(var + eps) * weight + bias,
 *                 reals[0] = eps; params weight [d], bias [d]; saved: float mean and 1/sqrt(var + eps) of
 *                 each row (2 per row).
 *   "batch_norm"  per channel (dimension 0; x [c] or [c, h, w]) over the samples and pixels of the batch:
 *                 y = (x - mean) / sqrt(var + eps) * weight + bias, var biased; reals = {eps, momentum};
 *                 params weight [c], bias [c]; buffers running_mean [c], running_var [c] (unbiased var).
 *                 Evaluation (training == 0): one call, phase 0, normalising with the running statistics.
 *                 Training runs in two phases per pass, so that the statistics can be combined across
 *                 devices in between (statistics: 2 * (2c + 1) doubles, device memory):
 *                   forward STATISTICS: statistics[0, 2c+1) = this slice's sum of x per channel, sum of
 *                     x^2 per channel, element count (also for n = 0: zeros). The executor copies them to
 *                     statistics[2c+1, 4c+2) and sums that copy over every replica of the global batch.
 *                   forward APPLY: normalises with the local sums (sync_statistics == 0) or the global
 *                     ones (!= 0); updates the running statistics from the global ones (so every replica
 *                     holds the same running statistics in either mode), each as
 *                     (1 - m) running + m batch's, m the momentum (statistics_momentum when not 0), the
 *                     batch's variance unbiased; saved: double mean [c],
 *                     1/sqrt(var + eps) [c] and the count used.
 *                   backward STATISTICS: statistics[0, 2c+1) = this slice's sum of dy and of dy * xhat per
 *                     channel and the element count (also for n = 0); adds the sums into the bias and
 *                     weight gradients. With sync_statistics the executor sums them over every replica.
 *                   backward APPLY: input_grads[0] = weight / sqrt(var + eps) * (dy - sum(dy) / N -
 *                     xhat * sum(dy * xhat) / N), N the count forward used.
 */
#ifndef DPTRAIN_OP_CALL_H
#define DPTRAIN_OP_CALL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types. Activations, parameters and gradients are DPT_DTYPE_F32 in this version; a model's input
 *  may be DPT_DTYPE_I32 tokens (read only by "token_embedding"); the 16-bit types are reserved. */
enum { DPT_DTYPE_F32 = 0, DPT_DTYPE_BF16 = 1, DPT_DTYPE_F16 = 2, DPT_DTYPE_I32 = 3 };

/** The phases of an op with statistics over the batch (dpt_op_call::phase). */
enum { DPT_OP_PHASE_SINGLE = 0, DPT_OP_PHASE_STATISTICS = 1, DPT_OP_PHASE_APPLY = 2 };

#define DPT_OP_MAX_RANK 4
#define DPT_OP_MAX_INPUTS 4
#define DPT_OP_MAX_PARAMS 4
#define DPT_OP_MAX_ATTRS 8

typedef struct dpt_tensor {
  void *data;
  int32_t dtype; /**< DPT_DTYPE_* */
  int32_t rank;  /**< 1 .. DPT_OP_MAX_RANK (0: the tensor is absent) */
  int64_t dims[DPT_OP_MAX_RANK];
} dpt_tensor;

typedef struct dpt_op_call {
  const char *op; /**< the op's name, e.g. "conv2d" */
  int64_t n;      /**< samples */
  int64_t ints[DPT_OP_MAX_ATTRS];
  double reals[DPT_OP_MAX_ATTRS];

  int32_t input_count;
  dpt_tensor inputs[DPT_OP_MAX_INPUTS];
  dpt_tensor output;

  int32_t param_count; /**< trainable tensors, in the op's order (weight, then bias) */
  dpt_tensor params[DPT_OP_MAX_PARAMS];
  float *param_grads[DPT_OP_MAX_PARAMS]; /**< backward: ADDED into; NULL in forward */
  int32_t buffer_count;                  /**< non-trainable tensors (running statistics) */
  dpt_tensor buffers[DPT_OP_MAX_PARAMS];

  void *saved;
  size_t saved_bytes; /**< of saved: the descriptor's per-sample part times n, plus its per-pass part */
  void *scratch;      /**< the CPU backend's per-call space (NULL for a module: it brings its own) */
  size_t scratch_bytes;

  /* backward */
  const void *output_grad;
  void *input_grads[DPT_OP_MAX_INPUTS];

  /* ops with statistics over the batch ("batch_norm") */
  int32_t phase;           /**< DPT_OP_PHASE_*; 0 for single-phase calls */
  int32_t sync_statistics; /**< normalise with the statistics of the global batch, not of this slice */
  double *statistics;
  size_t statistics_count; /**< doubles at statistics: both sets (2 * (2c + 1) for batch_norm); 0 if none */

  /* the pass */
  int32_t training;      /**< non-zero in a training pass */
  uint64_t seed;         /**< the trainer's seed */
  uint64_t step;         /**< the optimizer step being computed */
  uint64_t node;         /**< the op's index in the graph */
  uint64_t first_sample; /**< the position of sample 0 in the accumulation window's global batch */

  /** The element type the op's matrix products take their inputs in (conv2d, dense, linear,
   *  causal_self_attention): DPT_DTYPE_F32, DPT_DTYPE_BF16 (every input of every product rounded to
   *  bfloat16, to nearest even with subnormals as zero, the products accumulated in float32: the trainer's
   *  mixed precision) or DPT_DTYPE_F16 (rounded to IEEE float16, to nearest even, subnormals kept).
   *  Tensors stay float32; ops without matrix products ignore it. */
  int32_t matmul_dtype;

  /** A training forward's weight of this batch in the running statistics (batch_norm), in place of the op's
   *  momentum when not 0: the trainer's recomputation of the statistics passes 1/k on its k-th batch, so
   *  that they become the plain average of the batches' (PyTorch's update_bn). 0: the op's momentum. */
  double statistics_momentum;
} dpt_op_call;

/** Elements of one sample of @p t (the product of its dims). */
static inline int64_t dpt_tensor_sample_size(const dpt_tensor *t) {
  int64_t size = 1;
  for (int32_t i = 0; i < t->rank; ++i) size *= t->dims[i];
  return size;
}

#ifdef __cplusplus
}
#endif

#endif /* DPTRAIN_OP_CALL_H */
