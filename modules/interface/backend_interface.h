/*
 * The interface between libdptrain.so and a loadable backend module (libdptrain_cuda.so), in plain C:
 * it crosses a dlopen boundary, so no C++ type, exception or allocation crosses it.
 *
 * A module exports exactly one symbol, its entry function (DPT_BACKEND_ENTRY_CUDA for the CUDA module),
 * which returns a pointer to a static table of functions. The core checks abi_version (a different value
 * is a different interface) and struct_size (a table of one version only ever grows by appended members; the
 * core needs at least the members it knows). Everything else in the module is hidden.
 *
 * Every function: never throws, never aborts, and returns 0 (DPT_BACKEND_OK) on success or a non-zero
 * DPT_BACKEND_ERROR_* code with a one-line, NUL-terminated reason written to error[0 .. error_size) that
 * names the device and the failed call, e.g. "cuda:0: cudnnConvolutionForward: CUDNN_STATUS_BAD_PARAM".
 *
 * Threading: the discovery functions are safe from any thread. A context (one device's stream and library
 * handles) or a communicator is used by one thread at a time; distinct ones are independent. Every call
 * makes the context's device current for its duration and restores the caller's device.
 *
 * Kernels and copies are asynchronous on the context's stream (in stream order, so a later call sees an
 * earlier call's results): host buffers of copies must stay valid, and results are readable by the host,
 * only after context_synchronize. An error of an asynchronous operation may surface at a later call.
 * Device pointers are those of mem_alloc (any context on the same device); every size is in elements
 * unless named bytes. A count of zero samples is a no-op.
 */
#ifndef DPTRAIN_BACKEND_INTERFACE_H
#define DPTRAIN_BACKEND_INTERFACE_H

#include <stddef.h>
#include <stdint.h>

#include "interface/op_call.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the table below; a module with another version is refused. 3: dpt_op_call::matmul_dtype and
 * op_supported's matmul_dtype. 4: the wire_dtype of comm_all_reduce and virtual_all_reduce (a 16-bit
 * gradient all-reduce), and convert (the executor's 16-bit activation copies). 5: comm_all_gather_ranges (a
 * sharded optimizer's gather over NCCL). 6: dpt_op_call::statistics_momentum (recomputed batch-norm
 * statistics). 7: comm_all_reduce_f64 (batch norm's statistics summed over NCCL), comm_reduce_ranges
 * (sharded gradients over NCCL), l2_block_sums and l2_norm in the core's order (a sharded gradient's norm).
 * 8: comm_all_reduce_start, comm_reduce_ranges_start, comm_join_started and comm_wait_started (a gradient
 * bucket all-reduced, or reduced to its owners, on a communication stream while backward computes the next).
 * 9: copy_device_ahead and copy_join_ahead (a sharded parameter bucket copied in on a copy stream while the
 * layers before it compute); comm_all_reduce_start and comm_reduce_ranges_start on the 16-bit wires.
 * 10: comm_exchange and comm_exchange_start (grouped sends and receives between ranks, waited for or started
 * beside the compute: a sharded optimizer's sums delivered to the owners of the other processes in the
 * process scope).
 * (The entry function and the table keep their "v2" names, so that a module of an older version is found and
 * refused by its version, with a message that says so.) */
#define DPT_BACKEND_ABI_VERSION 10u

/** Name of the CUDA module's entry function. */
#define DPT_BACKEND_ENTRY_CUDA "dptrain_cuda_backend_v2"

/** File name of the CUDA module, looked for next to libdptrain.so or in $DPTRAIN_BACKEND_PATH. */
#if defined(_WIN32)
#define DPT_BACKEND_MODULE_CUDA "dptrain_cuda.dll"
#else
#define DPT_BACKEND_MODULE_CUDA "libdptrain_cuda.so"
#endif

/** One message of comm_exchange: local rank @p local_rank (its context's stream, a buffer on its GPU) sends
 *  @p count floats from @p data to global rank @p peer, or (receive non-zero) receives them from there into
 *  @p data. */
typedef struct dpt_backend_message {
  int32_t local_rank;
  int32_t peer;
  int32_t receive;
  float *data;
  size_t count;
} dpt_backend_message;

/** Return codes of the table's functions. */
enum {
  DPT_BACKEND_OK = 0,
  DPT_BACKEND_ERROR = 1,                  /**< a driver, runtime or library call failed */
  DPT_BACKEND_ERROR_OUT_OF_MEMORY = 2,    /**< device (or host) memory exhausted; nothing was changed */
  DPT_BACKEND_ERROR_INVALID_ARGUMENT = 3, /**< NULL handle or pointer, bad size, shape or ordinal */
  DPT_BACKEND_ERROR_COMMUNICATION = 4     /**< a collective failed or timed out; the communicator is dead */
};

/** Discovery facts of one device. */
typedef struct dpt_backend_device_props {
  char name[256];      /**< product name, e.g. "NVIDIA H200" */
  char pci_bus_id[32]; /**< "0000:19:00.0" */
  uint64_t total_memory;
  uint64_t free_memory;
  int32_t compute_capability_major;
  int32_t compute_capability_minor;
  int32_t multiprocessor_count;
} dpt_backend_device_props;

/** Versions of the runtime, the driver and the libraries the module links. */
typedef struct dpt_backend_versions {
  int32_t runtime_version; /**< CUDA encoding: 1000 * major + 10 * minor; 0 = unknown */
  int32_t driver_version;  /**< 0 = no driver */
  char text[256]; /**< e.g. "CUDA runtime 13.0, driver none, cuBLAS 13.1.0, cuDNN 9.19.0, NCCL 2.28.9" */
} dpt_backend_versions;

/** One device's execution context: its stream, BLAS and DNN handles, workspace, and the memory allocated
 *  through it (freed by context_destroy). Opaque. */
typedef struct dpt_backend_context dpt_backend_context;
/** A collective communicator (NCCL) over the GPUs of one process, or over this process's GPUs as part of a
 *  multi-process job (comm_create_multi). Opaque. */
typedef struct dpt_backend_comm dpt_backend_comm;

/** Context flags. */
#define DPT_BACKEND_ALLOW_TF32 \
  1u /**< let cuBLAS and cuDNN use TF32 tensor cores (10-bit mantissa products) */
#define DPT_BACKEND_DETERMINISTIC \
  2u /**< deterministic convolution algorithms, chosen by heuristics, never by timing */

/** Options of context_create. */
typedef struct dpt_backend_context_options {
  size_t struct_size;       /**< sizeof(dpt_backend_context_options); the module reads only this many bytes */
  uint32_t flags;           /**< DPT_BACKEND_ALLOW_TF32 | DPT_BACKEND_DETERMINISTIC; 0 = FP32, fastest */
  uint64_t workspace_limit; /**< bytes of convolution workspace an algorithm may use; 0 = 64 MiB */
} dpt_backend_context_options;

/** The elements of a norm block (l2_norm, l2_block_sums), as the core's kNormBlock. */
#define DPT_BACKEND_NORM_BLOCK 4096

/** The label of a target that does not count (padding), as the core's kIgnoreLabel. */
#define DPT_BACKEND_IGNORE_LABEL (-1)

/** What softmax_cross_entropy writes (into device memory). */
typedef struct dpt_backend_loss {
  double loss_sum;  /**< sum over the samples of -log softmax(z)[label], each computed in double */
  uint64_t correct; /**< samples whose first maximum logit is the label */
} dpt_backend_loss;

enum { DPT_BACKEND_SGD = 0, DPT_BACKEND_ADAMW = 1 };

/** An optimizer's constants (the learning rate and step are arguments of optimizer_update). */
typedef struct dpt_backend_optimizer {
  int32_t kind;     /**< DPT_BACKEND_SGD (momentum, Nesterov, L2 weight decay) or DPT_BACKEND_ADAMW */
  int32_t nesterov; /**< SGD: non-zero for Nesterov momentum */
  float momentum, weight_decay;
  float beta1, beta2, epsilon; /**< AdamW */
} dpt_backend_optimizer;

/** The function table a module returns. */
typedef struct dpt_backend_v2 {
  uint32_t abi_version; /**< DPT_BACKEND_ABI_VERSION */
  uint32_t struct_size; /**< sizeof(dpt_backend_v2) as the module was built */
  const char *name;     /**< "cuda" */

  /** Number of usable devices. *count = 0 with a non-zero return and the reason (no driver, no GPU, ...)
   *  when there are none; a count of 0 with a zero return does not happen. */
  int (*device_count)(int *count, char *error, size_t error_size);
  /** Facts of device @p ordinal (0 .. count-1); free_memory is measured now. */
  int (*device_props)(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size);
  /** *can_access = 1 when @p ordinal can access @p peer's memory directly (cudaDeviceCanAccessPeer). */
  int (*can_access_peer)(int ordinal, int peer, int *can_access, char *error, size_t error_size);
  /** Fills @p versions; never fails. */
  void (*versions)(dpt_backend_versions *versions);

  /* ---- Contexts and memory ---- */

  /** A context on device @p ordinal: its own non-blocking stream, cuBLAS and cuDNN handles. @p options may
   *  be NULL (defaults). On failure *out is NULL and nothing is left allocated. */
  int (*context_create)(int ordinal, const dpt_backend_context_options *options, dpt_backend_context **out,
                        char *error, size_t error_size);
  /** Waits for the streams (copies queued ahead and never joined too), then frees every allocation, the
   *  workspace, the handles and the streams. NULL is ignored. */
  void (*context_destroy)(dpt_backend_context *ctx);
  /** Waits until everything queued on the context's stream has finished; reports its errors. */
  int (*context_synchronize)(dpt_backend_context *ctx, char *error, size_t error_size);
  /** Device memory of @p bytes (> 0). Running out is DPT_BACKEND_ERROR_OUT_OF_MEMORY naming the device. */
  int (*mem_alloc)(dpt_backend_context *ctx, size_t bytes, void **out, char *error, size_t error_size);
  /** Frees memory of mem_alloc on this context (NULL is ignored; an unknown pointer is an error).
   *  Waits for the context's stream first (other streams must be done with the buffer). */
  int (*mem_free)(dpt_backend_context *ctx, void *ptr, char *error, size_t error_size);
  /** Bytes currently allocated through mem_alloc on this context. */
  int (*mem_in_use)(dpt_backend_context *ctx, uint64_t *bytes, char *error, size_t error_size);
  /** Sets @p bytes bytes at @p ptr to (unsigned char) @p value, on the stream. */
  int (*mem_set)(dpt_backend_context *ctx, void *ptr, int value, size_t bytes, char *error,
                 size_t error_size);
  /** Host to device, on the stream. */
  int (*copy_to_device)(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                        size_t error_size);
  /** Device to host, on the stream. */
  int (*copy_to_host)(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                      size_t error_size);
  /** Device to device, on the stream; @p src may be on another GPU (peer copy). */
  int (*copy_device)(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                     size_t error_size);

  /* ---- Ops (modules/interface/op_call.h: the call, and each op's members and semantics) ---- */

  /** 1 when the module has a kernel of op @p op (a name of op_call.h) for tensors of @p dtype with matrix
   *  products on inputs of @p matmul_dtype (dpt_op_call::matmul_dtype), else 0. */
  int (*op_supported)(const char *op, int32_t dtype, int32_t matmul_dtype);
  /** The op's forward pass, queued on the stream. An op the module does not support is
   *  DPT_BACKEND_ERROR_INVALID_ARGUMENT naming it. */
  int (*op_forward)(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size);
  /** The op's backward pass, queued on the stream. */
  int (*op_backward)(dpt_backend_context *ctx, const dpt_op_call *call, char *error, size_t error_size);
  /** y [count] += x [count] (a gradient that several ops contribute to); y and x must not overlap. */
  int (*accumulate)(dpt_backend_context *ctx, float *y, const float *x, size_t count, char *error,
                    size_t error_size);

  /* ---- Loss and optimizer (CUDA kernels) ---- */

  /** Softmax cross-entropy of logits [n, classes] and int32 labels [n] (device memory): writes *out (device
   *  memory) and, when @p dlogits is not NULL, dlogits = softmax(z) - onehot(label) per row (summed
   *  semantics: not divided by n). A row labelled DPT_BACKEND_IGNORE_LABEL adds nothing and gets a zero
   *  gradient row; any other label outside [0, classes) gives a NaN loss. */
  int (*softmax_cross_entropy)(dpt_backend_context *ctx, size_t n, size_t classes, const float *logits,
                               const int32_t *labels, float *dlogits, dpt_backend_loss *out, char *error,
                               size_t error_size);
  /** Update number @p t (0-based) with learning rate @p lr and gradient grad_scale * grads, exactly the
   *  formulas of the CPU optimizer; state: SGD with momentum count floats, AdamW 2 * count (m, then v),
   *  zeroed before the first update. */
  int (*optimizer_update)(dpt_backend_context *ctx, const dpt_backend_optimizer *optimizer, uint64_t t,
                          float lr, float grad_scale, float *params, const float *grads, float *state,
                          size_t count, char *error, size_t error_size);
  /** *out (device memory) = Euclidean norm of x [count] in the core's order (src/optim/optimizer.hpp), so
   *  the CPU's bits for the same values: x cut into blocks of DPT_BACKEND_NORM_BLOCK floats; in each block
   *  element i's square (a double product, rounded on its own) goes to partial sum i % 8, in index order
   *  from 0.0; the eight partial sums added in order from 0.0; the block sums added in block order from
   *  0.0; the square root of that. (Since version 7; before, a fixed order of the module's own.) */
  int (*l2_norm)(dpt_backend_context *ctx, const float *x, size_t count, double *out, char *error,
                 size_t error_size);
  /** x [count] *= alpha. */
  int (*scale)(dpt_backend_context *ctx, float *x, size_t count, float alpha, char *error, size_t error_size);
  /** dst [count] = src [count] converted, on the stream: DPT_DTYPE_F32 to DPT_DTYPE_BF16 or DPT_DTYPE_F16
   *  (round to nearest even, as src/core/float16.hpp: bfloat16 takes a float32 subnormal to a zero of its
   *  sign, float16 keeps its subnormals and takes 65520 and beyond to infinity), or back (exact). Any other
   *  pair is DPT_BACKEND_ERROR_INVALID_ARGUMENT. */
  int (*convert)(dpt_backend_context *ctx, void *dst, int32_t dst_dtype, const void *src, int32_t src_dtype,
                 size_t count, char *error, size_t error_size);

  /* ---- Collectives ---- */

  /** A communicator over @p count distinct GPUs of this process (ncclCommInitAll); rank r is
   *  ordinals[r]. Replicas on one GPU use virtual_all_reduce instead. */
  int (*comm_create)(int count, const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size);
  /** NULL is ignored. Collectives started (comm_*_start) and not waited for are aborted. */
  void (*comm_destroy)(dpt_backend_comm *comm);
  /** Sums, in place and across the ranks, @p buffer_count buffers per rank in one NCCL group:
   *  buffers[r * buffer_count + b] holds counts[b] floats on rank r's GPU; contexts[r] (on ordinals[r])
   *  gives rank r's stream. Waits until done, polling ncclCommGetAsyncError; after @p timeout_seconds
   *  (<= 0: 300 s; counted from the call, so it includes work queued before on the streams) the
   *  communicator is aborted (ncclCommAbort) and DPT_BACKEND_ERROR_COMMUNICATION returned: it then refuses
   *  further work and must be destroyed.
   *
   *  @p wire_dtype is what travels between the ranks (anything else is DPT_BACKEND_ERROR_INVALID_ARGUMENT,
   *  and the communicator stays usable):
   *  - DPT_DTYPE_F32: ncclAllReduce (ncclFloat, ncclSum) in place, NCCL's algorithm and order of sums.
   *  - DPT_DTYPE_BF16 / DPT_DTYPE_F16: 16-bit values (half the bytes), float32 sums. Element i of the
   *    result, on every rank (global ranks 0 .. K-1, also across processes), is
   *    round(((0 + round(x_0[i])) + round(x_1[i])) + ... + round(x_(K-1)[i])): each rank's value rounded
   *    to the type, the sums float32 in rank order, the sum rounded again; round is to nearest even, as
   *    the core's to_bf16 / to_f16 (bfloat16: a float32 subnormal becomes a zero of its sign; float16:
   *    subnormals kept, 65520 and beyond infinite). The same bits on every rank, whatever the buffers'
   *    split into calls. On the GPUs: an all-to-all of the buffer's K chunks (ncclSend/ncclRecv in one
   *    group), each rank sums its chunk, an ncclAllGather of the rounded sums; staging memory of about
   *    2 x 2 bytes per float per rank, grown on demand and kept by the communicator (running out is
   *    DPT_BACKEND_ERROR_OUT_OF_MEMORY, nothing started). */
  int (*comm_all_reduce)(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                         float *const *buffers, const size_t *counts, int32_t wire_dtype,
                         double timeout_seconds, char *error, size_t error_size);
  /** All-reduce of @p replicas (1 .. 32) buffers of @p count floats on ONE GPU (virtual devices, which
   *  NCCL refuses): buffers[r] belongs to contexts[r], all contexts on the same device. Sums in the fixed
   *  order replica 0, 1, ..., K-1 and writes the sum to every buffer; ordered after the work already
   *  queued on every context's stream, and before anything queued on them later (events).
   *  @p wire_dtype as comm_all_reduce's: DPT_DTYPE_F32 sums the floats as they are; DPT_DTYPE_BF16 /
   *  DPT_DTYPE_F16 give every replica round(((0 + round(b_0[i])) + ...) + round(b_(K-1)[i])), the bits a
   *  16-bit comm_all_reduce gives (nothing travels: the rounding is in the summing kernel), also for
   *  one replica (then round(b_0[i])). */
  int (*virtual_all_reduce)(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                            size_t count, int32_t wire_dtype, char *error, size_t error_size);

  /* ---- Collectives across processes (NCCL over MPI) ---- */

  /** A new NCCL unique id (ncclGetUniqueId: it needs no GPU), DPT_BACKEND_NCCL_ID_BYTES opaque bytes that
   *  one process creates and every process of the job passes to comm_create_multi. */
  int (*nccl_unique_id)(char *id, char *error, size_t error_size);
  /** This process's part of a communicator of @p world_ranks GPUs spread over several processes:
   *  local rank r is global rank first_rank + r, on GPU ordinals[r] (1 .. @p local_count distinct GPUs of
   *  this process). One ncclCommInitRank per local GPU in one NCCL group; every process of the job must
   *  call it with the same @p id, and it blocks until all global ranks have joined. comm_all_reduce,
   *  comm_inject_hang (local rank) and comm_destroy then work on it as on a comm_create communicator; an
   *  all-reduce needs every process to call comm_all_reduce with the same buffer counts. */
  int (*comm_create_multi)(const char *id, int world_ranks, int first_rank, int local_count,
                           const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size);

  /* ---- Extensions ---- */

  /** The extension table named @p name (e.g. DPT_BACKEND_TEST_EXTENSION), or NULL when the module has none
   *  of that name: optional functions stay out of this table. */
  const void *(*get_extension)(const char *name);

  /* ---- Collectives, continued ---- */

  /** A sharded vector gathered in place over the communicator (every rank of every process): global rank q
   *  owns [bounds[q], bounds[q + 1]) (bounds: world ranks + 1 ascending offsets); buffers[r] is local rank
   *  r's whole vector on its GPU, contexts[r] gives its stream. Afterwards every rank's buffer holds every
   *  range as its owner holds it, bit for bit: one ncclBroadcast per range, rooted at its owner, in place,
   *  in one NCCL group (the ranges are uneven, which ncclAllGather's equal parts do not take). Ordered after
   *  the work queued on every rank's stream; waits, times out and aborts as comm_all_reduce. Since
   *  version 5. */
  int (*comm_all_gather_ranges)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                                float *const *buffers, const size_t *bounds, double timeout_seconds,
                                char *error, size_t error_size);
  /** Sums @p count doubles over every rank of the communicator (every process's too), in place: buffers[r]
   *  is local rank r's, on its GPU, contexts[r] gives its stream. One ncclAllReduce (ncclFloat64, ncclSum)
   *  per local rank in one NCCL group, ordered after the work queued on every rank's stream; the same bits
   *  on every rank (NCCL's algorithm and order of sums); waits, times out and aborts as comm_all_reduce, and
   *  comm_inject_hang leaves a rank out of it as out of that. For a few numbers in the middle of a pass
   *  (batch norm's per-channel sums): the core calls it from one replica's thread while the others wait.
   *  Since version 7. */
  int (*comm_all_reduce_f64)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             double *const *buffers, size_t count, double timeout_seconds, char *error,
                             size_t error_size);
  /** A vector's uneven parts summed to their owners over the communicator (a sharded gradient's bucket
   *  reduce-scattered): global rank q owns [bounds[q], bounds[q + 1]) (world ranks + 1 ascending offsets,
   *  empty parts allowed); sends[r] is local rank r's vector of bounds[world] floats on its GPU, recvs[r]
   *  where the sum of local rank r's own part goes (NULL when that part is empty; sends[r] + its offset
   *  sums in place). The sums are written, not added; the send vectors are left as they were (but for an
   *  in-place part). @p wire_dtype as comm_all_reduce's: DPT_DTYPE_F32 is one ncclReduce (ncclFloat,
   *  ncclSum) per non-empty part, rooted at its owner, in one group (ncclReduceScatter takes equal parts
   *  only), NCCL's order of sums; DPT_DTYPE_BF16 / _F16 send each part rounded to the type to its owner
   *  (ncclSend/ncclRecv in one group, through the communicator's 16-bit staging, grown as comm_all_reduce's)
   *  and give the owner comm_all_reduce's 16-bit rule, round(((0 + round(x_0)) + round(x_1)) + ...), the
   *  bits of a 16-bit comm_all_reduce of the vectors; any other type is DPT_BACKEND_ERROR_INVALID_ARGUMENT.
   *  Ordered after the work queued on every rank's stream; waits, times out and aborts as comm_all_reduce;
   *  comm_inject_hang applies. Since version 7. */
  int (*comm_reduce_ranges)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                            const float *const *sends, float *const *recvs, const size_t *bounds,
                            int32_t wire_dtype, double timeout_seconds, char *error, size_t error_size);

  /* ---- Loss and optimizer, continued ---- */

  /** The block sums of l2_norm over the elements [begin, end) of a vector, x[0] being element begin:
   *  sums[k] (device memory) for the k-th block of DPT_BACKEND_NORM_BLOCK elements of the whole vector that
   *  the range meets, in order, each the sum of the squares of the range's elements in it as l2_norm sums a
   *  block (element i of that piece, counted from its first, to partial sum i % 8). With begin a multiple
   *  of the block and end one or the vector's end, the sums are l2_norm's: a sharded gradient's ranges give
   *  the whole vector's norm bit for bit. end <= begin writes nothing. Since version 7. */
  int (*l2_block_sums)(dpt_backend_context *ctx, const float *x, size_t begin, size_t end, double *sums,
                       char *error, size_t error_size);

  /* ---- Collectives beside compute ---- */

  /** Starts comm_all_reduce's sum of @p buffer_count buffers per rank (the same layout of buffers, counts
   *  and contexts; on the float32 wire one ncclAllReduce per buffer in one NCCL group) on each rank's
   * communication stream, a second stream of its context: ordered after the work queued so far on the
   * context's stream, and NOT before the work queued on it later, which runs beside it (a gradient bucket
   * summed while backward computes the next). Returns once queued, without waiting. Until comm_wait_started
   * returns, the buffers must be neither read nor written (what they hold meanwhile is undefined) and the
   * contexts belong to the communicator's caller (one thread drives every rank, as for comm_all_reduce).
   * Several starts run in the order they were started. @p wire_dtype: DPT_DTYPE_F32, or (since version 9)
   *  DPT_DTYPE_BF16 / DPT_DTYPE_F16: comm_all_reduce's 16-bit sequence and rule on the communication
   *  streams, in the communicator's staging (a rank's starts run one after the other there); the first
   *  start since a wait may grow the staging, a later one that does not fit is
   *  DPT_BACKEND_ERROR_INVALID_ARGUMENT with nothing started (a 16-bit comm_all_reduce of the largest start's
   *  buffers beforehand sizes it); any other type is DPT_BACKEND_ERROR_INVALID_ARGUMENT, nothing started. A
   * failure to queue aborts the communicator as comm_all_reduce's does. comm_inject_hang leaves its rank out
   * of every start until the next comm_wait_started. The same bits as comm_all_reduce of the same buffers.
   * Since version 8. */
  int (*comm_all_reduce_start)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                               size_t buffer_count, float *const *buffers, const size_t *counts,
                               int32_t wire_dtype, char *error, size_t error_size);
  /** Ends every start (comm_all_reduce_start, comm_reduce_ranges_start, comm_exchange_start) since the last
   * wait: orders each rank's context stream after them (work queued later sees the sums) and waits on the
   * host until they have finished, polling, timing out (@p timeout_seconds counted from this call; <= 0: 300
   * s) and aborting as comm_all_reduce. Nothing started: returns 0 at once. Any other collective of the
   *  communicator called between a start and the wait (batch norm's comm_all_reduce_f64 in the middle of
   *  backward) is ordered after the started ones on each rank's stream: NCCL does not promise that
   *  collectives of one communicator on two streams progress when the ranks may run them in different
   *  orders. Since version 8. */
  int (*comm_wait_started)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                           double timeout_seconds, char *error, size_t error_size);
  /** comm_reduce_ranges' reduce (the same arguments; on the float32 wire one ncclReduce per non-empty
   *  part, rooted at its owner, in one group) started as comm_all_reduce_start starts its all-reduce: on the
   *  communication streams, after the work queued so far on the contexts' streams, returning at once. Until
   *  a join or the wait orders a context's stream after it, the send vectors and the receive buffers must be
   *  neither read nor written. @p wire_dtype: DPT_DTYPE_F32, or (since version 9) DPT_DTYPE_BF16 /
   *  DPT_DTYPE_F16: comm_reduce_ranges' 16-bit sequence in the communicator's staging, under
   *  comm_all_reduce_start's rule for growing it. Since version 8. */
  int (*comm_reduce_ranges_start)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                                  const float *const *sends, float *const *recvs, const size_t *bounds,
                                  int32_t wire_dtype, char *error, size_t error_size);
  /** Orders each rank's context stream after the collectives started since the last comm_wait_started,
   *  all but the last @p keep of them (the work queued later on the stream sees their results), without
   *  waiting on the host: a staging buffer of an earlier start reused while later starts still run.
   *  Fewer than @p keep + 1 started: nothing to do. The wait still ends them all. Since version 8. */
  int (*comm_join_started)(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t keep,
                           char *error, size_t error_size);

  /* ---- Copies beside compute ---- */

  /** copy_device on the context's copy stream, a third stream of the context: ordered after the work
   *  queued so far on the context's stream, and NOT before the work queued on it later, which runs beside
   *  it (a sharded parameter bucket copied in from its owners while the layers before it compute). Until
   *  copy_join_ahead, @p dst must be neither read nor written (what it holds meanwhile is undefined) and
   *  @p src not written. Several copies run in the order they were queued. Since version 9. */
  int (*copy_device_ahead)(dpt_backend_context *ctx, void *dst, const void *src, size_t bytes, char *error,
                           size_t error_size);
  /** Orders the context's stream after every copy_device_ahead queued since the last join (the work queued
   *  later sees the copies), without waiting on the host; an error of the copies surfaces at a later
   *  synchronizing call. None queued: returns 0. Since version 9. */
  int (*copy_join_ahead)(dpt_backend_context *ctx, char *error, size_t error_size);

  /* ---- Point to point ---- */

  /** Sends and receives between ranks of the communicator, all in one NCCL group (ncclSend / ncclRecv per
   *  message, so that no order of them can deadlock): messages[0 .. message_count) are this process's; a
   *  send is matched by the receive of the same count that its peer lists for it, the messages between two
   *  ranks in the order both list them. A message to the rank itself, a peer or local rank out of range, or
   *  a NULL buffer is DPT_BACKEND_ERROR_INVALID_ARGUMENT, nothing sent; messages unmatched (or of different
   *  counts) wait until the timeout. Copies are exact. Ordered after the work queued on every rank's
   *  stream (every local rank's, also one without messages); waits, times out and aborts as comm_all_reduce;
   *  comm_inject_hang leaves its rank's messages out. No message: returns 0 at once. Since version 10. */
  int (*comm_exchange)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                       const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                       char *error, size_t error_size);
  /** comm_exchange's messages (the same arguments and checks) started as comm_all_reduce_start starts its
   *  all-reduce: on the communication streams, after the work queued so far on the contexts' streams and
   *  after the starts before it (a piece reduced by comm_reduce_ranges_start, then sent on), returning at
   *  once. Until a join or the wait orders a context's stream after it, the buffers must be neither read
   *  nor written. comm_inject_hang leaves its rank's messages out until the wait. No message: returns 0
   *  at once. Since version 10. */
  int (*comm_exchange_start)(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             const dpt_backend_message *messages, size_t message_count, char *error,
                             size_t error_size);
} dpt_backend_v2;

/** Name of the test extension, a dpt_backend_test_v1: hooks that only tests and diagnostics use. */
#define DPT_BACKEND_TEST_EXTENSION "dptrain.test.v1"

typedef struct dpt_backend_test_v1 {
  uint32_t struct_size; /**< sizeof(dpt_backend_test_v1) as the module was built */
  /** Runs a small kernel and each library (BLAS, DNN, collectives) on device @p ordinal and checks the
   *  results: proves that the module's device code and libraries work on this GPU. */
  int (*self_test)(int ordinal, char *error, size_t error_size);
  /** The next collective (comm_all_reduce, comm_all_reduce_f64, comm_all_gather_ranges,
   *  comm_reduce_ranges, comm_exchange; or every start until the next comm_wait_started) does not start on
   *  @p rank (as if that peer hung); -1 clears. */
  int (*comm_inject_hang)(dpt_backend_comm *comm, int rank, char *error, size_t error_size);
} dpt_backend_test_v1;

/** Bytes of a NCCL unique id (NCCL_UNIQUE_ID_BYTES). */
#define DPT_BACKEND_NCCL_ID_BYTES 128

/** The function members of dpt_backend_v2, in order, for checks that every one is present. */
/* clang-format off */
#define DPT_BACKEND_V2_FUNCTIONS(X)                                                                     \
  X(device_count) X(device_props) X(can_access_peer) X(versions)                                        \
  X(context_create) X(context_destroy) X(context_synchronize)                                           \
  X(mem_alloc) X(mem_free) X(mem_in_use) X(mem_set) X(copy_to_device) X(copy_to_host) X(copy_device)    \
  X(op_supported) X(op_forward) X(op_backward) X(accumulate)                                            \
  X(softmax_cross_entropy) X(optimizer_update) X(l2_norm) X(scale) X(convert)                            \
  X(comm_create) X(comm_destroy) X(comm_all_reduce) X(virtual_all_reduce)                               \
  X(nccl_unique_id) X(comm_create_multi) X(get_extension) X(comm_all_gather_ranges)                  \
  X(comm_all_reduce_f64) X(comm_reduce_ranges) X(l2_block_sums) X(comm_all_reduce_start)               \
  X(comm_wait_started) X(comm_reduce_ranges_start) X(comm_join_started) X(copy_device_ahead)            \
  X(copy_join_ahead) X(comm_exchange) X(comm_exchange_start)
/* clang-format on */

/** Signature of a module's entry function. */
typedef const dpt_backend_v2 *(*dpt_backend_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DPTRAIN_BACKEND_INTERFACE_H */
