/*
 * One op's call, in plain C: what every backend's kernel of an op receives (the CPU reference kernels in
 * src/backend/cpu/ops/, the CUDA module's in modules/cuda/ops/, the simulator's). The core's graph
 * executor fills it from the op's descriptor (src/ops/) for each pass; a backend looks the kernel up by
 * dpt_op_call.op (the op's name) and reads only the members that op defines (the table below).
 *
 * Layout: a tensor of activations holds n samples, each of dims[0] x ... x dims[rank - 1] elements,
 * row-major (images NCHW), contiguous. A parameter or buffer tensor has no sample dimension: dims is its
 * whole shape. Device pointers as the backend hands them out (host memory on a CPU device).
 *
 * Semantics, every op: a count of n = 0 samples is a no-op. forward writes output (=). backward reads
 * output_grad (dL/dy) and writes input_grads[i] (=) for every input i whose pointer is not NULL (NULL: no
 * gradient is needed there), and ADDS (+=) the parameter gradients into param_grads[p] when not NULL.
 * A training forward may update the op's buffers (running statistics). What forward keeps for backward
 * goes into saved (saved_bytes as the descriptor sizes it); scratch is the backend's own per-call space.
 *
 * The ops and their members (ints[] / reals[] / params / buffers / saved):
 *   "dense"       y[units] = x W^T + b, x of any shape flattened; ints[0] = units; params: weight
 *                 [units, in], optional bias [units].
 *   "conv2d"      cross-correlation, x [c, h, w] -> y [out_c, oh, ow], oh = (h + 2 padding - kernel) /
 *                 stride + 1; ints = {out_c, kernel, stride, padding}; params: weight [out_c, c, k, k],
 *                 optional bias [out_c].
 *   "avg_pool2d"  ints = {window, stride}; no padding, sizes round down.
 *   "max_pool2d"  ints = {window, stride}; saved: the int32 index (within the plane) of each window's
 *                 first maximum, one per output element; backward routes dy there.
 *   "relu", "sigmoid", "tanh"   elementwise; backward uses the output (y) only.
 *   "dropout"     reals[0] = rate; inverted dropout in training, identity otherwise; saved: the float
 *                 mask (0 or 1 / (1 - rate)) per element, keyed by (seed, step, node, first_sample + i,
 *                 element) so that it does not depend on the split.
 *   "flatten"     a view: the executor aliases its input and never calls a kernel.
 */
#ifndef DPTRAIN_OP_CALL_H
#define DPTRAIN_OP_CALL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types. Only DPT_DTYPE_F32 has kernels in this version; the others are reserved. */
enum { DPT_DTYPE_F32 = 0, DPT_DTYPE_BF16 = 1, DPT_DTYPE_F16 = 2, DPT_DTYPE_I32 = 3 };

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
  void *scratch;
  size_t scratch_bytes;

  /* backward */
  const void *output_grad;
  void *input_grads[DPT_OP_MAX_INPUTS];

  /* the pass */
  int32_t training;      /**< non-zero in a training pass */
  uint64_t seed;         /**< the trainer's seed */
  uint64_t step;         /**< the optimizer step being computed */
  uint64_t node;         /**< the op's index in the graph */
  uint64_t first_sample; /**< the position of sample 0 in the accumulation window's global batch */
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
