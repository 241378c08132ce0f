/**
 * @file trainer.h
 * @brief Data-parallel training: one parameter replica per device, split batches, all-reduced gradients.
 *
 * Each step splits the caller's batch across the trainer's devices (evenly, by weights, or by measured
 * speed), every device computes the summed per-sample gradient of its slice on its own replica, the
 * gradients are all-reduced in a fixed order, divided by the global batch size, and every replica applies
 * the same optimizer step. A K-device step therefore equals the 1-device step on the whole batch (up to
 * float rounding), and the replicas stay bitwise identical. Same seed and configuration give bitwise
 * identical runs.
 *
 * Threading: one trainer is used by one thread at a time. A call on a trainer while another thread is in
 * a call on it returns DPT_ERROR_BUSY and does nothing (the counters and sizes, dpt_trainer_parameter_count,
 * _device_count, _split_sizes, _step_count and _epoch_count, may be read by several threads at once). The
 * thread inside a call may call again: the progress callback of dpt_trainer_fit() may read, evaluate and
 * checkpoint its trainer. Trainers sharing a context may run on different threads; their device work is
 * serialized. dpt_trainer_fit() calls the progress callback on the thread that called it. The library keeps
 * no caller pointer past a call, and its worker threads never touch caller memory after a call returned.
 */
#ifndef DPTRAIN_TRAINER_H
#define DPTRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "device.h"
#include "export.h"
#include "model.h"
#include "status.h"
#include "world.h"

DPT_EXTERN_C_BEGIN

/** @brief Opaque trainer. */
typedef struct dpt_trainer dpt_trainer;

/** @brief How a batch is divided among the devices. */
typedef enum dpt_split_policy {
  DPT_SPLIT_EVEN = 0, /**< Equal slices; the first (batch % K) devices get one more sample. */
  /** Slices proportional to split_weights, rounded exactly by largest remainder: device i gets
   * floor(B w_i / W) samples and the few left over go one each to the largest remainders, ties to the
   * lower device index. Exact for every weight at least 2^-16 of the largest (smaller ones are rounded to
   * 2^-40 of the largest's binade first): weights 8,7,...,1 and B = 162 give 36:32:27:23:18:13:9:4. */
  DPT_SPLIT_WEIGHTED = 1,
  DPT_SPLIT_AUTO = 2 /**< Weights measured once, at the first step, from each device's speed. */
} dpt_split_policy;

/** @brief All-reduce algorithm for the gradients. */
typedef enum dpt_allreduce_algorithm {
  DPT_ALLREDUCE_RING = 0, /**< Ring: reduce-scatter then all-gather across the device threads. */
  DPT_ALLREDUCE_NAIVE = 1 /**< Textbook: reduce to device 0, then broadcast. */
} dpt_allreduce_algorithm;

/** @brief Parameter initialisation. Biases start at zero in both schemes. */
typedef enum dpt_init_scheme {
  DPT_INIT_UNIFORM_FAN_IN = 0, /**< Weights ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's default bound). */
  DPT_INIT_NORMAL = 1          /**< Weights ~ N(0, init_std^2). */
} dpt_init_scheme;

/** @brief What a step does when its inputs, loss or gradients hold a NaN or an infinity. */
typedef enum dpt_nonfinite_policy {
  DPT_NONFINITE_SKIP =
      0, /**< Skip the update (parameters and optimizer state bitwise unchanged) and count it. */
  DPT_NONFINITE_ERROR = 1 /**< The same, and the step returns DPT_ERROR_NON_FINITE. */
} dpt_nonfinite_policy;

/** @brief How batch_norm layers compute their batch statistics across the devices. */
typedef enum dpt_batch_norm_mode {
  /** Over the whole global batch: every device's (count, sum, sum of squares) per channel is combined,
   * weighted by its real sample count, in the middle of forward and of backward, so the K-device step equals
   * the 1-device full-batch step under any split (weighted, ragged, empty slices) and with MPI. */
  DPT_BATCH_NORM_SYNC = 0,
  /** Over each device's own slice (as DataParallel and the textbook do): the step then depends on the split.
   * The running statistics still follow the global batch, so they are identical on every replica. */
  DPT_BATCH_NORM_LOCAL = 1
} dpt_batch_norm_mode;

/** @brief The precision of a model's matrix products (conv2d, dense, linear, causal_self_attention). */
typedef enum dpt_precision {
  DPT_PRECISION_FP32 = 0, /**< float32 throughout (the default; the bits of 0.1). */
  /** Mixed precision, bfloat16: every matrix product takes its inputs rounded to bfloat16 (to nearest even,
   * subnormals as zero) and accumulates in float32, as torch.autocast(dtype=torch.bfloat16) on CPUs;
   * everything else (softmax, the loss, normalisation, reductions, the optimizer and its state, the
   * parameters: the float32 "master weights") stays float32. On CUDA devices the products run on tensor
   * cores (cuBLAS with bfloat16 inputs and float32 sums; convolutions on rounded inputs in TF32), rounded
   * as on CPUs (docs/precision.md says which op runs in which precision, and on which kernels). */
  DPT_PRECISION_BF16 = 1,
  /** Mixed precision, float16: the matrix products take their inputs rounded to IEEE float16 (to nearest
   * even, subnormals kept, magnitudes from 65520 infinite) and accumulate in float32, as
   * torch.autocast(dtype=torch.float16); the rest as in DPT_PRECISION_BF16. With dynamic loss scaling, as
   * PyTorch's GradScaler: the loss is multiplied by a power-of-two scale (initial_loss_scale) before
   * backward and the summed gradient divided by it before clipping; a window whose gradient overflows is
   * skipped (parameters and optimizer state unchanged, skipped_overflow, overflow_steps) and the scale
   * halved (never below 1); after loss_scale_growth_interval applied windows in a row it doubles. The scale
   * and its count are checkpointed. On CUDA devices as bf16, with float16 inputs. Since 0.2. */
  DPT_PRECISION_FP16 = 2
} dpt_precision;

/** @brief What sharded data parallel (ZeRO, FSDP) splits across a trainer's devices instead of keeping a
 * full copy on each (docs/sharding.md). */
typedef enum dpt_shard_mode {
  DPT_SHARD_NONE = 0, /**< Every device holds parameters, gradients and optimizer state whole (default). */
  /** ZeRO stage 1: each device keeps the optimizer state (and updates the parameters) of one contiguous
   * range of the parameters only; the gradient is reduce-scattered, each device updates its range, and the
   * updated ranges are all-gathered. The same bits as DPT_SHARD_NONE; per device the optimizer state takes
   * 1/K of its bytes (AdamW: 16 bytes per parameter become 8 + 8/K). CPU devices and GPUs (on GPUs of
   * their own each range's sums are reduced to its owner over NCCL, on GPUs shared by replicas the gradient
   * is all-reduced whole; the updated ranges are copied across). Across MPI processes K is each process's
   * devices, or every device of the job (dpt_shard_scope). */
  DPT_SHARD_OPTIMIZER = 1,
  /** ZeRO stage 2: also the gradient. Backward writes each gradient bucket (bucket_bytes, whole layers)
   * into one of two staging buffers, and each finished bucket is reduce-scattered into the devices' ranges
   * while backward goes on; each device keeps the summed gradient of its range only (AdamW: 4 + 12/K bytes
   * per parameter, plus the two staging buckets). The same bits as DPT_SHARD_NONE with one micro-batch per
   * optimizer step; with accumulation_steps > 1 each micro-batch's sum is added into the range (one more
   * float32 rounding per micro-batch than DPT_SHARD_NONE's sum of micro-batches). CPU devices, and GPUs
   * (within one process, or across every GPU of an MPI job with DPT_SHARD_SCOPE_WORLD): there each bucket
   * is reduced to its owners over NCCL while backward waits (one staging bucket), the bits of
   * DPT_SHARD_NONE; a 16-bit allreduce_dtype gives the 16-bit all-reduce's bits; DPT_SHARD_SCOPE_PROCESS
   * across processes reduces within each process over NCCL and sums the ranges over the processes through
   * the host at the end of the step (float32 allreduce_dtype only, else DPT_ERROR_UNSUPPORTED). Tied
   * parameters (dpt_model_tie) are sharded like the others: the tying node's part of the gradient is kept
   * aside until its source's bucket opens. Across MPI processes each process shards among its own devices
   * (the counts may differ; a process of one device shards nothing but sums by the others' pieces) and on
   * CPU devices each bucket's part of the ranges is summed over the processes during the backward of a
   * window's last micro-batch (on GPUs at the end of the step). */
  DPT_SHARD_GRADIENTS = 2,
  /** ZeRO stage 3 (PyTorch's FSDP): also the parameters. Each device keeps its range of the parameters
   * only, and a pass (training, evaluation, prediction) copies each bucket of them in from the devices
   * that own it just before the bucket's layers run, into one gather buffer of the largest bucket's size
   * (AdamW: 16/K bytes per parameter, plus that buffer and the two staging buckets). The bits of
   * DPT_SHARD_GRADIENTS; the same restrictions (on GPUs a bucket is copied in by peer copies on the
   * replica's stream; across processes in DPT_SHARD_SCOPE_WORLD the other processes' ranges come through
   * host copies they expose). dpt_trainer_get_parameters and checkpoints gather the
   * whole vector. */
  DPT_SHARD_PARAMETERS = 3
} dpt_shard_mode;

/** @brief Which devices share one copy of what dpt_shard_mode splits, across the processes of an MPI job
 * (docs/sharding.md). Since 0.2. */
typedef enum dpt_shard_scope {
  /** Each process shards among its own devices and keeps one whole copy across them (PyTorch FSDP's
   * HYBRID_SHARD; default): a process of one device shards nothing. */
  DPT_SHARD_SCOPE_PROCESS = 0,
  /** One copy across every device of every process (DeepSpeed's ZeRO, FSDP's FULL_SHARD): with P
   * processes of K devices each device keeps 1/(P K). CPU devices (the process's devices may number 1 and
   * differ between processes): the gradient is summed within each process and reduce-scattered across the
   * processes (each bucket during backward with DPT_SHARD_GRADIENTS and _PARAMETERS), each device updates
   * its range, and the ranges are gathered within each process and copied across the processes; with
   * DPT_SHARD_PARAMETERS nothing is gathered after the update: a pass reads each bucket's ranges that
   * other processes own straight from their memory (one-sided MPI gets, MPI_Rget). GPUs, with
   * DPT_SHARD_OPTIMIZER: each range's sums reduced to its owner over NCCL, the ranges gathered by NCCL
   * broadcasts from their owners; with DPT_SHARD_GRADIENTS: each bucket reduced to its owners over NCCL
   * during backward, the ranges gathered alike; with DPT_SHARD_PARAMETERS each process exposes host copies of
   * its ranges (refreshed from its GPUs after an update, a load or a set), which a pass reads into host
   * memory and copies onto its GPU. A pipeline (pipeline_stages), DPT_SHARD_OPTIMIZER only: each stage's
   * state cut among every process's replicas of the stage, its gradient summed within the process and
   * reduce-scattered across the processes (with DPT_PIPELINE_SCOPE_WORLD: among every copy's replicas of
   * the stage, each process holding its own stages). The same bits as DPT_SHARD_NONE with two processes (with
   * accumulation, DPT_SHARD_GRADIENTS's one rounding per micro-batch). dpt_trainer_save is then
   * collective: every process calls it, process 0 writes the file. With DPT_SHARD_PARAMETERS,
   * dpt_trainer_set_parameters, dpt_trainer_load and dpt_trainer_destroy are collective too (every process
   * calls them, destroying such trainers in the same order: a process's parameters go only once no process
   * reads them). Without a communicator (one process) the same as DPT_SHARD_SCOPE_PROCESS. */
  DPT_SHARD_SCOPE_WORLD = 1
} dpt_shard_scope;

/** @brief The order in which a pipeline stage runs its micro-batches' forwards and backwards
 * (docs/pipeline.md). */
typedef enum dpt_pipeline_schedule {
  /** 1F1B (PipeDream-Flush, as Megatron-LM): stage s of S runs min(S - s - 1, M) forwards, then one
   * forward and one backward in turn, then the backwards left; it keeps at most S - s micro-batches'
   * activations (default). */
  DPT_PIPELINE_1F1B = 0,
  /** GPipe: every forward, then every backward; each stage keeps all M micro-batches' activations. The
   * same bubble as 1F1B, (S - 1) / (M + S - 1) of the step, and the same results. */
  DPT_PIPELINE_GPIPE = 1
} dpt_pipeline_schedule;

/** @brief Where a pipeline's stages run across MPI processes (docs/pipeline.md, "Across MPI processes"). */
typedef enum dpt_pipeline_scope {
  /** Every process runs every stage on its own devices, on its share of each batch: pipeline within the
   * process, data parallel across the processes (default). */
  DPT_PIPELINE_SCOPE_PROCESS = 0,
  /** The stages are divided among the P processes: process p holds stages p S/P .. (p+1) S/P - 1 on its
   * devices (S/P stages x R replicas), and the activations and gradients that cross from one process's
   * stages to the next go as MPI messages (model parallel across machines). With P a multiple of S each
   * process holds one stage and P/S neighbouring processes hold copies of it, data parallel among them
   * (each copy on its share of the batch, a stage's gradients and batch statistics summed over its
   * copies); pipeline_copies sets the copies C (each process then holds S C/P stages). Every process is
   * given the whole batch (the first stage's processes read its inputs, the last's its labels) and gets the
   * same results: the bits of one process running the S stages on its devices times the processes (with
   * more than two copies within the usual tolerance, relative error <= 1e-5: the sums over the copies go
   * over MPI in another order). S a multiple of P or P of S (or of P/C), the same device count in every
   * process, and DPT_SHARD_NONE or DPT_SHARD_OPTIMIZER (each stage's optimizer state cut among its replicas
   * in the process, or with DPT_SHARD_SCOPE_WORLD among every copy's replicas of it; DPT_ERROR_UNSUPPORTED
   * otherwise); a parameter tied across two processes' stages (a language model's head tied to its
   * embedding) has its mirror's gradient and its source's values sent between them. CPU devices or GPUs (on
   * GPUs every message between the processes goes through host buffers and a stage's copies sum over
   * NCCL).
   * dpt_trainer_get_parameters, get_buffers, parameter_checksum, dpt_trainer_save and
   * dpt_trainer_save_safetensors are collective: every process calls them (each stage's values come from its
   * process); only process 0 writes a file. Without a communicator the same as DPT_PIPELINE_SCOPE_PROCESS. */
  DPT_PIPELINE_SCOPE_WORLD = 1
} dpt_pipeline_scope;

/** @brief What a pipeline's automatic cuts divide evenly among its stages when pipeline_cuts names none
 * (docs/pipeline.md, "Where the model is cut"). dpt_trainer_pipeline_cuts gives the cuts chosen. */
typedef enum dpt_pipeline_balance {
  /** Each layer's estimated work per sample: its weight matrices' multiply-adds plus one operation per
   * output element. The same cuts on every machine and in every run. */
  DPT_PIPELINE_BALANCE_WORK = 0,
  /** Each layer's measured time (torchgpipe's balance_by_time): when the trainer is created, its first
   * device trains the whole model on a micro-batch of synthetic samples (pipeline_balance_batch), once to
   * warm up and then three times, and each layer's forward plus backward counts its best of the three. Needs
   * the whole model to fit on that device (else the error of the pass, DPT_ERROR_OUT_OF_MEMORY naming the
   * device); across MPI processes process 0 measures and every process takes its cuts. Times vary from run to
   * run, and so may the cuts (then the last bits of a clipped norm): pass the cuts dpt_trainer_pipeline_cuts
   * gives as pipeline_cuts to repeat a run. */
  DPT_PIPELINE_BALANCE_TIME = 1,
  /** Each layer's parameters (DeepSpeed's partition_method "parameters"): every stage holds about the same
   * share of the parameters, their gradients and optimizer state; memory, not time. */
  DPT_PIPELINE_BALANCE_PARAMETERS = 2
} dpt_pipeline_balance;

/** @brief Optimizer kinds. */
typedef enum dpt_optimizer_kind {
  DPT_OPTIMIZER_SGD = 0,  /**< SGD with optional momentum, Nesterov and (coupled, L2) weight decay. */
  DPT_OPTIMIZER_ADAMW = 1 /**< Adam with decoupled weight decay. */
} dpt_optimizer_kind;

/** @brief Learning-rate schedules, applied after an optional linear warm-up. */
typedef enum dpt_schedule_kind {
  DPT_SCHEDULE_CONSTANT = 0, /**< lr */
  DPT_SCHEDULE_STEP = 1,     /**< lr * gamma^floor((t - warmup) / step_size) */
  DPT_SCHEDULE_COSINE = 2 /**< min_lr + (lr - min_lr) * (1 + cos(pi * (t - warmup) / (total - warmup))) / 2 */
} dpt_schedule_kind;

/** @brief Trainer options. Fill with dpt_trainer_options_init() first. */
typedef struct dpt_trainer_options {
  size_t struct_size; /**< Set by dpt_trainer_options_init(). */
  /** Device indices of the context to use, one replica each (copied); NULL = all devices. All CPU devices
   * or all CUDA devices. A CUDA device listed n times holds n replicas ("virtual devices", each with its
   * own stream; their gradients are summed in device memory); a CPU device may be listed once. */
  const size_t *devices;
  /** Entries in @p devices. devices == NULL with 0 = every device of the context; devices != NULL with 0
   * is refused (DPT_ERROR_INVALID_ARGUMENT), as a list that was meant to name devices. */
  size_t device_count;
  dpt_split_policy split;            /**< Default DPT_SPLIT_EVEN. */
  const float *split_weights;        /**< device_count positive weights for DPT_SPLIT_WEIGHTED (copied). */
  dpt_allreduce_algorithm allreduce; /**< Default DPT_ALLREDUCE_RING. */
  uint64_t seed;                     /**< Seeds initialisation, shuffling and dropout. Default 0. */
  size_t accumulation_steps; /**< Micro-batches (dpt_trainer_step calls) per optimizer step; default 1. */
  dpt_init_scheme init;      /**< Default DPT_INIT_UNIFORM_FAN_IN. */
  float init_std;            /**< Standard deviation for DPT_INIT_NORMAL; default 0.01. */
  /** Default DPT_NONFINITE_SKIP. A skip discards the whole accumulation window. */
  dpt_nonfinite_policy nonfinite;
  /** Deadline of each multi-device operation (a step's compute or update, an evaluation) in seconds;
   * default 300, 0 = none. When it passes, or a device fails, the operation is aborted on every device
   * and returns DPT_ERROR_TIMEOUT or DPT_ERROR_DEVICE within twice the timeout; the trainer then refuses
   * further work (DPT_ERROR_INVALID_STATE): destroy it and create a new one from the last checkpoint.
   * Time during which the whole process was stopped (Ctrl-Z or SIGSTOP, then SIGCONT) does not count:
   * its devices were stopped with it. Across MPI processes a stopped process is a stalled peer. */
  double timeout_seconds;
  /** Gradient bucket size in bytes for the all-reduce overlapped with backward: whole layers are grouped,
   * from the last layer down, into buckets of at least this size, and each bucket is all-reduced by
   * per-device communication threads as soon as every device has finished it, while backward goes on
   * (GPUs of their own: on a second CUDA stream through NCCL, float32 wire only; replicas sharing a GPU and
   * a 16-bit wire all-reduce after backward). 0 = one all-reduce of the whole gradient after backward. The
   * result is bitwise the same either way (on GPUs, NCCL's order of sums may depend on a bucket's size:
   * within the equivalence tolerance).
   * Default 1 MiB (see docs/decisions.md). With DPT_COMMUNICATOR_MPI each bucket is also all-reduced across
   * the processes during backward (docs/distributed.md). */
  size_t bucket_bytes;
  /** DPT_COMMUNICATOR_LOCAL (default): this process's devices. DPT_COMMUNICATOR_MPI: every process of the
   * MPI job (world.h). Every process then passes the same global batch to dpt_trainer_step() and
   * dpt_trainer_evaluate() (only its own share of the samples is read), and all processes must make the
   * same calls in the same order; prediction stays local to the process. */
  dpt_communicator communicator;
  /** CUDA devices: DPT_GPU_ALLOW_TF32 | DPT_GPU_DETERMINISTIC; default 0 (full FP32, fastest algorithms).
   * The known flags have no effect on CPU devices; unknown bits are refused (DPT_ERROR_INVALID_ARGUMENT)
   * on every trainer, so that a flag of a newer version is never silently dropped. */
  uint32_t gpu_flags;
  /** Models with batch_norm: DPT_BATCH_NORM_SYNC (default) or DPT_BATCH_NORM_LOCAL, on CPU devices and on
   * GPUs, also several replicas of one GPU ("virtual devices", each on a worker of its own); the statistics
   * are summed on the host. */
  dpt_batch_norm_mode batch_norm;
  /** DPT_PRECISION_FP32 (default), DPT_PRECISION_BF16 or DPT_PRECISION_FP16, on CPU and CUDA devices.
   * Since 0.2. */
  dpt_precision precision;
  /** DPT_PRECISION_FP16's loss scaling: the scale of the first step, a power of two from 1 to 2^64
   * (default 65536 = 2^16, GradScaler's; anything else is refused whatever the precision). Since 0.2. */
  double initial_loss_scale;
  /** DPT_PRECISION_FP16: applied windows in a row after which the loss scale doubles (default 2000,
   * GradScaler's); 0 = it never grows. Since 0.2. */
  uint64_t loss_scale_growth_interval;
  /** What the gradient all-reduce sends: DPT_PRECISION_FP32 (default), or DPT_PRECISION_BF16 /
   * DPT_PRECISION_FP16: half the bytes, as NCCL's 16-bit all-reduce and DDP's compression hooks. Each
   * device's contribution, each process's sum and the finished sum are rounded to the 16-bit type; the
   * sums themselves are float32. Replicas stay bitwise identical (and bucketed equals unbucketed); the
   * K-device step then differs from the 1-device step by that rounding (docs/precision.md). An fp16 wire
   * without loss scaling overflows on gradient sums beyond 65504 (then the non-finite policy applies).
   * CPU and CUDA devices (GPUs: 16-bit values through NCCL between GPUs, the same rounding in the sum of
   * replicas that share a GPU; the sums in device order). Since 0.2. */
  dpt_precision allreduce_dtype;
  /** How activations are kept from forward to backward: DPT_PRECISION_FP32 (default), or
   * DPT_PRECISION_BF16 / DPT_PRECISION_FP16: each activation rounded to the 16-bit type once its last
   * forward reader has run, widened back for backward (as autocast keeps a 16-bit matmul's output), and a
   * few float32 working copies while ops read and write them. ResNet-18's and gpt-mini's activations then
   * take 0.59 and 0.61 of their float32 bytes; a model whose widest tensors are most of its activations
   * (LeNet) keeps them float32 (the store never takes more memory than float32). Backward then reads the
   * rounded activations: no bit changes where they only feed matrix products of the same 16-bit precision
   * (and ReLU), and about one 16-bit rounding where normalisations read them (docs/precision.md). The
   * rounding is per element, so the K-device contract holds as without it. Independent of precision. CPU
   * and CUDA devices. Since 0.2. */
  dpt_precision activation_dtype;
  /** DPT_SHARD_NONE (default), DPT_SHARD_OPTIMIZER, DPT_SHARD_GRADIENTS or DPT_SHARD_PARAMETERS
   * (docs/sharding.md). Sharding the optimizer changes no bit of training, of the step and fit results or
   * of checkpoints (a checkpoint loads into any device count and mode); sharding the gradients and the
   * parameters neither, with one micro-batch per step. CPU devices and CUDA devices. Across MPI processes
   * each process shards among its own devices (hybrid sharding: every process holds one whole copy across
   * its devices): each device's range summed over the processes (processes of different device counts sum
   * by the pieces between their cuts; a process of one device shards nothing but sums by the others'
   * pieces); on GPUs the optimizer mode reduces each piece to one of its owners over NCCL and sends it on
   * to the others, the gradients and parameters modes sum the ranges over MPI from host copies. Since 0.2. */
  dpt_shard_mode shard;
  /** Pipeline model parallel (docs/pipeline.md): the model is cut into this many stages S, and each
   * step's batch into micro_batches micro-batches that pass forward through the stages and back. The
   * trainer's K devices hold the stages in order, K / S data-parallel replicas each (devices 0 .. R-1 stage
   * 0, and so on): each micro-batch is split among a stage's replicas, batch norm statistics are summed
   * among them (DPT_BATCH_NORM_SYNC), and at the end of a window each stage's replicas all-reduce the
   * stage's gradients. 0 or 1 (default): no pipeline. K must be a multiple of S (DPT_ERROR_UNSUPPORTED);
   * CPU devices, or GPUs (the stages hand over by peer copies, a stage's replicas of every process
   * all-reduce over NCCL and gather a sharded optimizer's parts by NCCL broadcasts or peer copies)
   * (across MPI processes: every process runs every stage on its own devices, S x R_p, each on
   * its share of the batch, weighted by its device count, the stages' gradients and each micro-batch's
   * batch norm statistics summed over the processes), no sharding but DPT_SHARD_OPTIMIZER (each stage's
   * optimizer state cut among the process's replicas of it, or with DPT_SHARD_SCOPE_WORLD among every
   * process's, which gather the parts they update: the unsharded pipeline's bits), the even split, and a
   * parameter tied across stages only as its stage's last parameter (a language model's head;
   * DPT_ERROR_UNSUPPORTED or DPT_ERROR_INVALID_ARGUMENT). A step gives the bits of R data-parallel devices
   * accumulating the same micro-batches (R = 1: one device; batch norm normalises each micro-batch, as
   * there); with clip_norm, or R > 2 and a stage that begins inside a ring block of the gradient, the last
   * bits may differ, and with a parameter tied across stages the last few (its gradient's two parts are
   * summed per stage); with a 16-bit activation_dtype, by less than the 16-bit storage's own effect
   * (docs/pipeline.md). dpt_trainer_split_sizes gives each device the samples its replica index trains on.
   * Since 0.2. */
  size_t pipeline_stages;
  /** Micro-batches per step, 1 to 1024 (a batch of fewer samples has one per sample); 0 (default): four
   * per stage. Since 0.2. */
  size_t micro_batches;
  /** DPT_PIPELINE_1F1B (default) or DPT_PIPELINE_GPIPE. Since 0.2. */
  dpt_pipeline_schedule pipeline_schedule;
  /** Where the stages after the first begin: pipeline_stages - 1 node names, comma-separated, in node
   * order ("layer2.0.conv1,layer3.0.conv1,layer4.0.conv1"; copied). A stage may begin only at a node where
   * one tensor is live (between blocks, not inside a residual block). NULL or "" (default): the cuts that
   * divide pipeline_balance's costs most evenly (by default the estimated work: ResNet-18's two stages
   * then begin at layer3.0.conv1). Since 0.2. */
  const char *pipeline_cuts;
  /** DPT_SHARD_SCOPE_PROCESS (default) or DPT_SHARD_SCOPE_WORLD: across MPI processes, whether shard
   * splits among each process's devices or among every device of the job. Since 0.2. */
  dpt_shard_scope shard_scope;
  /** With DPT_SHARD_PARAMETERS, nonzero: a pass reads the next bucket of parameters while the current
   * bucket's layers run (FSDP's prefetch): from the other processes in DPT_SHARD_SCOPE_WORLD (one-sided
   * reads that proceed meanwhile), and on CUDA devices from the other replicas' GPUs (copies on a stream
   * beside the compute), at the cost of a second gather buffer per device, as large as the largest bucket.
   * 0 (default): each bucket is read when its first layer asks. No effect on CPU devices within a process
   * (a gather there is a copy out of shared memory). The same bits either way. Since 0.2. */
  int prefetch_parameters;
  /** DPT_PIPELINE_SCOPE_PROCESS (default) or DPT_PIPELINE_SCOPE_WORLD: across MPI processes, whether every
   * process runs every pipeline stage or the stages are divided among the processes. Since 0.2. */
  dpt_pipeline_scope pipeline_scope;
  /** What the automatic cuts balance: DPT_PIPELINE_BALANCE_WORK (default), DPT_PIPELINE_BALANCE_TIME or
   * DPT_PIPELINE_BALANCE_PARAMETERS. Only the default with pipeline_cuts named (DPT_ERROR_INVALID_ARGUMENT).
   * Since 0.2. */
  dpt_pipeline_balance pipeline_balance;
  /** DPT_PIPELINE_BALANCE_TIME: the batch size the steps will pass (across MPI processes, the global
   * batch). Each measuring pass then runs one micro-batch of it on one of a stage's replicas (the batch /
   * micro_batches / the stage's replicas in the job, rounded up), as torchgpipe's balance_by_time measures
   * on a micro-batch: a layer's time per sample depends on the samples it runs at once. 0 (default): 16
   * samples. No effect with another balance. Since 0.2. */
  size_t pipeline_balance_batch;
  /** DPT_PIPELINE_SCOPE_WORLD: how many copies C of the pipeline the P processes hold, data parallel among
   * them (Megatron's data-parallel size; docs/pipeline.md, "Copies of the pipeline"). Process p holds the
   * stages of block p / C, S C / P stages on its devices, with the C processes of a block neighbours in
   * rank (copy p % C). 0 (default): P / S when P > S, else 1. P a multiple of C and S of P / C
   * (DPT_ERROR_UNSUPPORTED otherwise); no effect without a communicator of more than one process; nonzero
   * with DPT_PIPELINE_SCOPE_PROCESS, where every process is a copy: DPT_ERROR_INVALID_ARGUMENT. Since 0.2. */
  size_t pipeline_copies;
} dpt_trainer_options;

/** @brief gpu_flags: let cuBLAS and cuDNN use TF32 tensor cores (products with a 10-bit mantissa). */
#define DPT_GPU_ALLOW_TF32 1
/** @brief gpu_flags: deterministic convolution algorithms only, chosen by heuristics, never by timing, and of
 * the GEMM family (no FFT or Winograd transforms): the same bits from run to run and from trainer to
 * trainer. Without it cuDNN's algorithms are timed per trainer and the fastest kept: two trainers may differ
 * in the last bits. */
#define DPT_GPU_DETERMINISTIC 2

/** @brief The parameters weight decay applies to (two parameter groups: decayed and not). */
typedef enum dpt_weight_decay_scope {
  DPT_WEIGHT_DECAY_ALL = 0, /**< Every parameter. */
  DPT_WEIGHT_DECAY_MATRICES =
      1 /**< The weights of dense, linear and conv2d; not biases, norms, embeddings. */
} dpt_weight_decay_scope;

/** @brief Optimizer options. Fill with dpt_optimizer_options_init() first. */
typedef struct dpt_optimizer_options {
  size_t struct_size;         /**< Set by dpt_optimizer_options_init(). */
  dpt_optimizer_kind kind;    /**< Default DPT_OPTIMIZER_SGD. */
  float learning_rate;        /**< Base learning rate; default 0.1. */
  float momentum;             /**< SGD momentum in [0, 1); default 0. */
  int nesterov;               /**< SGD: nonzero for Nesterov momentum (needs momentum > 0). */
  float weight_decay;         /**< SGD: added to the gradient (L2); AdamW: decoupled. Default 0. */
  float beta1;                /**< AdamW; default 0.9. */
  float beta2;                /**< AdamW; default 0.999. */
  float epsilon;              /**< AdamW; default 1e-8. */
  dpt_schedule_kind schedule; /**< Default DPT_SCHEDULE_CONSTANT. */
  uint64_t warmup_steps;   /**< Linear warm-up from lr/warmup_steps to lr over this many steps; default 0. */
  uint64_t step_size;      /**< DPT_SCHEDULE_STEP: steps between decays (> 0). */
  float gamma;             /**< DPT_SCHEDULE_STEP: decay factor; default 0.1. */
  uint64_t total_steps;    /**< DPT_SCHEDULE_COSINE: optimizer steps of the whole run (> warmup_steps). */
  float min_learning_rate; /**< DPT_SCHEDULE_COSINE: final learning rate; default 0. */
  float clip_norm;         /**< Clip the global gradient norm to this value; 0 = off. */
  /** Which parameters weight_decay applies to: DPT_WEIGHT_DECAY_ALL (default) or
   * DPT_WEIGHT_DECAY_MATRICES (the weight matrices of dense, linear and conv2d only: not biases, norms or
   * embedding tables, as GPT recipes decay). Since 0.2. */
  dpt_weight_decay_scope weight_decay_scope;
} dpt_optimizer_options;

/** @brief Outcome of one dpt_trainer_step(). The caller sets struct_size = sizeof(dpt_step_result). */
typedef struct dpt_step_result {
  size_t struct_size;       /**< Set by the caller; the library writes only this many bytes. */
  double loss;              /**< Mean cross-entropy over the batch's targets (before the update). */
  double accuracy;          /**< Fraction of the batch's targets predicted correctly (before the update). */
  uint64_t samples;         /**< Samples in this batch. */
  int applied;              /**< 1 when this call completed an accumulation window and updated parameters. */
  uint64_t optimizer_steps; /**< Optimizer steps taken so far. */
  double learning_rate;     /**< Learning rate of the update (when applied). */
  double grad_norm;         /**< Global norm of the averaged gradient before clipping (when applied). */
  double compute_seconds;   /**< Forward and backward on all devices (wall time). */
  double allreduce_seconds; /**< Gradient all-reduce (wall time). */
  double update_seconds;    /**< Normalisation, clipping and optimizer update (wall time). */
  double total_seconds;     /**< The whole call. */
  int skipped_nonfinite;    /**< 1 when a NaN or infinity made this call discard its accumulation window. */
  uint64_t nonfinite_steps; /**< Windows discarded for non-finite values so far. */
  /** Of allreduce_seconds, the part this call waited for after backward had finished; the rest was hidden
   * behind backward by the bucket overlap (equal to allreduce_seconds when bucket_bytes is 0). With
   * buckets, compute_seconds includes this wait. On GPUs, overlapped, allreduce_seconds is the span from the
   * first bucket's start to the end of this wait (the GPU's own time in NCCL is not measured). */
  double allreduce_exposed_seconds;
  /** The batch's labels that count (not DPT_IGNORE_LABEL): its samples for a classifier, its positions for
   * a sequence model. The loss and the gradient are divided by the window's count of them. Since 0.2. */
  uint64_t targets;
  /** DPT_PRECISION_FP16: 1 when this call's window overflowed and was skipped (parameters and optimizer
   * state unchanged, the loss scale halved); not an error, whatever the non-finite policy. Since 0.2. */
  int skipped_overflow;
  /** Windows the loss scaler skipped so far. Since 0.2. */
  uint64_t overflow_steps;
  /** The loss scale after this call: what the next backward multiplies the loss by (1 without loss
   * scaling). Since 0.2. */
  double loss_scale;
} dpt_step_result;

/** @brief Outcome of an evaluation. The caller sets struct_size = sizeof(dpt_eval_result). */
typedef struct dpt_eval_result {
  size_t struct_size; /**< Set by the caller. */
  double loss;        /**< Mean cross-entropy per counted target. */
  double accuracy;    /**< Fraction of the targets predicted correctly. */
  uint64_t samples;   /**< Samples evaluated. */
  double seconds;     /**< Wall time. */
  uint64_t targets;   /**< The labels that counted (not DPT_IGNORE_LABEL). Since 0.2. */
} dpt_eval_result;

/** @brief When a progress report is made. */
typedef enum dpt_progress_kind {
  DPT_PROGRESS_BATCH = 0, /**< Every progress_every batches during an epoch. */
  DPT_PROGRESS_EPOCH = 1  /**< Once at the end of each epoch, after evaluation. */
} dpt_progress_kind;

/** @brief A progress report passed to the callback of dpt_trainer_fit(). */
typedef struct dpt_progress {
  size_t struct_size;        /**< sizeof(dpt_progress) of the library. */
  dpt_progress_kind kind;    /**< Batch or epoch report. */
  size_t epoch;              /**< 1-based epoch of this fit call. */
  size_t epochs;             /**< Epochs requested. */
  size_t batch;              /**< Batches done in this epoch (those before a mid-epoch resume too). */
  size_t batches;            /**< Batches per epoch. */
  uint64_t samples;          /**< Samples this call trained in this epoch. */
  double loss;               /**< Mean training loss over the epoch so far. */
  double accuracy;           /**< Training accuracy over the epoch so far. */
  double samples_per_second; /**< Training throughput over the epoch so far. */
  double epoch_seconds;      /**< Seconds spent in this epoch so far (training only). */
  int has_test;              /**< Epoch reports: 1 when a test set was evaluated. */
  double test_loss;          /**< Epoch reports with has_test. */
  double test_accuracy;      /**< Epoch reports with has_test. */
  double learning_rate;      /**< Learning rate of the latest update. */
  double loss_scale;         /**< The loss scale now (1 without loss scaling). Since 0.2. */
} dpt_progress;

/** @brief Progress callback: return 0 to continue, nonzero to stop training after this report. */
typedef int (*dpt_progress_fn)(const dpt_progress *progress, void *user_data);

/** @brief Options of dpt_trainer_fit(). Fill with dpt_fit_options_init() first. */
typedef struct dpt_fit_options {
  size_t struct_size;       /**< Set by dpt_fit_options_init(). */
  size_t epochs;            /**< Default 1. */
  size_t batch_size;        /**< Global (micro-)batch size; default 256. The last batch may be smaller. */
  int shuffle;              /**< Nonzero (default): a new permutation each epoch, drawn from the seed. */
  size_t progress_every;    /**< Batch reports every this many batches; 0 = epoch reports only. Default 0. */
  dpt_progress_fn progress; /**< May be NULL. */
  void *user_data;          /**< Passed to @p progress. */
  size_t eval_batch_size;   /**< Batch size for the test-set evaluation; default 1000. */
} dpt_fit_options;

/** @brief Outcome of dpt_trainer_fit(). The caller sets struct_size = sizeof(dpt_fit_result). */
typedef struct dpt_fit_result {
  size_t struct_size;        /**< Set by the caller. */
  size_t epochs_completed;   /**< Epochs fully trained. */
  int stopped;               /**< 1 when the callback asked to stop. */
  double train_loss;         /**< Mean training loss of the last (possibly partial) epoch. */
  double train_accuracy;     /**< Training accuracy of the last (possibly partial) epoch. */
  int has_test;              /**< 1 when a test set was evaluated. */
  double test_loss;          /**< Test loss after the last epoch. */
  double test_accuracy;      /**< Test accuracy after the last epoch. */
  double train_seconds;      /**< Seconds spent training, partial epochs included (evaluation excluded). */
  double samples_per_second; /**< Training throughput over all epochs. */
  uint64_t optimizer_steps;  /**< Optimizer steps taken by the trainer so far. */
  uint64_t nonfinite_steps;  /**< Windows the trainer discarded for non-finite values so far. */
  uint64_t overflow_steps;   /**< Windows the loss scaler skipped so far (DPT_PRECISION_FP16). Since 0.2. */
  double loss_scale;         /**< The loss scale at the end (1 without loss scaling). Since 0.2. */
} dpt_fit_result;

/** @brief Fills @p options with defaults. NULL is ignored. */
DPT_API void dpt_trainer_options_init(dpt_trainer_options *options);
/** @brief Fills @p options with defaults. NULL is ignored. */
DPT_API void dpt_optimizer_options_init(dpt_optimizer_options *options);
/** @brief Fills @p options with defaults. NULL is ignored. */
DPT_API void dpt_fit_options_init(dpt_fit_options *options);

/**
 * @brief Creates a trainer: one replica of @p model per entry of options->devices, all initialised alike.
 * @param out receives the trainer.
 * @param context the context whose devices options->devices names.
 * @param model the model (copied: the trainer does not keep it).
 * @param options NULL for defaults.
 * @param optimizer NULL for defaults.
 * @return DPT_ERROR_DEVICE_NOT_FOUND for a bad device index, DPT_ERROR_INVALID_ARGUMENT for a repeated
 *         CPU device, bad weights or optimizer settings, DPT_ERROR_UNSUPPORTED for CPU devices and GPUs in
 *         one trainer (or a layer a GPU cannot run), DPT_ERROR_OUT_OF_MEMORY (naming the device) when a
 *         replica does not fit, DPT_ERROR_DEVICE when a GPU call fails.
 */
DPT_API dpt_status dpt_trainer_create(dpt_trainer **out, dpt_context *context, const dpt_model *model,
                                      const dpt_trainer_options *options,
                                      const dpt_optimizer_options *optimizer);

/**
 * @brief Destroys a trainer and frees its device memory. Accepts NULL. Never waits: when a device has not
 * come back from a call that timed out (see timeout_seconds), the memory is freed by a later
 * dpt_trainer_create() or dpt_trainer_destroy() once it has. May be called before or after
 * dpt_context_destroy() of its context. The one wait: a trainer whose parameters are sharded across every
 * process's devices (DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD) waits, up to its timeout_seconds, until
 * every process destroys it (the others read this process's parameters until then); destroy such trainers
 * in the same order on every process.
 */
DPT_API void dpt_trainer_destroy(dpt_trainer *trainer);

/**
 * @brief Trains on one batch (or micro-batch, with accumulation) held in host memory.
 *
 * The loss is softmax cross-entropy over the model's output read as rows of classes: an output [classes]
 * has one target per sample, an output [positions, classes] one per position (a language model). It is
 * summed over the targets on each device and divided once by the count of the accumulation window's
 * targets that are not DPT_IGNORE_LABEL (0 of them: a zero gradient).
 * @param trainer the trainer.
 * @param inputs batch_size * input size floats (input_count of them), NCHW.
 * @param input_count the number of floats at @p inputs.
 * @param labels batch_size * targets per sample labels, each in [0, classes) or DPT_IGNORE_LABEL.
 * @param batch_size the number of samples.
 * @param result may be NULL. Written on success and with DPT_ERROR_NON_FINITE (the batch ran and its
 *        window was discarded: skipped_nonfinite, nonfinite_steps and the counters say so); left as the
 *        caller set it after every other failure (nothing was trained).
 * @return DPT_ERROR_INVALID_ARGUMENT for a model whose input is int32 tokens (use
 *         dpt_trainer_step_tokens()), DPT_ERROR_SIZE_MISMATCH when input_count is wrong,
 *         DPT_ERROR_OUT_OF_RANGE for a bad label,
 *         DPT_ERROR_OUT_OF_MEMORY when a device cannot hold its slice (the trainer stays usable),
 *         DPT_ERROR_NON_FINITE with the policy DPT_NONFINITE_ERROR, DPT_ERROR_TIMEOUT or DPT_ERROR_DEVICE
 *         (the trainer then refuses work: destroy it), DPT_ERROR_BUSY when another thread is in a call on
 *         the trainer.
 */
DPT_API dpt_status dpt_trainer_step(dpt_trainer *trainer, const float *inputs, size_t input_count,
                                    const int32_t *labels, size_t batch_size, dpt_step_result *result);

/**
 * @brief Trains on one batch of int32 tokens, as dpt_trainer_step() does on floats.
 * @param trainer the trainer.
 * @param tokens batch_size * sequence length tokens (token_count of them), each below the model's
 *        vocabulary.
 * @param token_count the number of tokens at @p tokens.
 * @param targets batch_size * targets per sample labels (target_count of them), each in [0, classes) or
 *        DPT_IGNORE_LABEL.
 * @param target_count the number of labels at @p targets.
 * @param batch_size the number of samples.
 * @param result may be NULL; written as by dpt_trainer_step().
 * @return as dpt_trainer_step(); DPT_ERROR_INVALID_ARGUMENT for a model whose input is float32;
 *         DPT_ERROR_SIZE_MISMATCH for a wrong token_count or target_count; DPT_ERROR_OUT_OF_RANGE for a
 *         token or label out of range (naming the sample and position).
 */
DPT_API dpt_status dpt_trainer_step_tokens(dpt_trainer *trainer, const int32_t *tokens, size_t token_count,
                                           const int32_t *targets, size_t target_count, size_t batch_size,
                                           dpt_step_result *result);

/** @brief Evaluates loss and accuracy on a batch of int32 tokens (as dpt_trainer_evaluate()). */
DPT_API dpt_status dpt_trainer_evaluate_tokens(dpt_trainer *trainer, const int32_t *tokens,
                                               size_t token_count, const int32_t *targets,
                                               size_t target_count, size_t sample_count,
                                               dpt_eval_result *result);

/**
 * @brief The logits of @p sample_count token sequences: for every position (a causal model's logits at
 * position t see tokens 0..t only, so a shorter prompt may be padded with any valid token after it).
 * @param trainer the trainer.
 * @param tokens sample_count * sequence length tokens (token_count of them).
 * @param token_count the number of tokens at @p tokens.
 * @param sample_count the number of sequences.
 * @param logits receives sample_count * output size floats (logit_count of them).
 * @param logit_count the number of floats @p logits holds.
 */
DPT_API dpt_status dpt_trainer_predict_tokens(dpt_trainer *trainer, const int32_t *tokens, size_t token_count,
                                              size_t sample_count, float *logits, size_t logit_count);

/**
 * @brief Evaluates loss and accuracy on a batch (split across the devices; dropout off).
 * @param trainer the trainer.
 * @param inputs sample_count * input size floats (input_count of them).
 * @param input_count the number of floats at @p inputs.
 * @param labels sample_count * targets per sample labels (as dpt_trainer_step()).
 * @param sample_count the number of samples.
 * @param result receives the mean loss and the accuracy.
 */
DPT_API dpt_status dpt_trainer_evaluate(dpt_trainer *trainer, const float *inputs, size_t input_count,
                                        const int32_t *labels, size_t sample_count, dpt_eval_result *result);

/** @brief Evaluates a whole dataset in batches of @p batch_size (0 = 1000). */
DPT_API dpt_status dpt_trainer_evaluate_dataset(dpt_trainer *trainer, const dpt_dataset *dataset,
                                                size_t batch_size, dpt_eval_result *result);

/**
 * @brief Recomputes the running statistics of the model's batch norms from data (PyTorch's
 * torch.optim.swa_utils.update_bn): runs forward in training mode over the first @p sample_count samples of
 * @p dataset, in order, in batches of @p batch_size split across the devices and processes as
 * dpt_trainer_step() splits a batch, and sets each running mean and variance to the plain average of the
 * batches' means and unbiased variances (over the global batch, with DPT_BATCH_NORM_SYNC and _LOCAL alike),
 * every batch weighing the same, a smaller last one too (a pipeline, which normalises each micro-batch on
 * its own: the average of the micro-batches a step would cut the batches into). Running statistics kept
 * with a momentum lag the
 * weights when the learning rate is high; call this after training, before evaluating. Parameters,
 * optimizer state and counters do not change; dropout is on, keyed as in a step. Collective across MPI
 * processes (each passes the same dataset and sizes). Since 0.2.
 * @param trainer the trainer.
 * @param dataset samples of the model's input (labels are not read).
 * @param batch_size samples per batch (0 = 256); the statistics are those of batches of this size.
 * @param sample_count the samples to use (0, or more than the dataset holds: all of them).
 * @return DPT_OK, also for a model without batch norm (nothing to do); DPT_ERROR_NULL_POINTER;
 *         DPT_ERROR_INVALID_ARGUMENT for an empty dataset or one of tokens for a float model (and the
 *         reverse); DPT_ERROR_SIZE_MISMATCH when its samples do not fit the model; DPT_ERROR_NON_FINITE
 *         for a NaN or an infinity in a batch (the statistics are then those of the batches before it);
 *         DPT_ERROR_OUT_OF_MEMORY when a device cannot hold its slice;
 *         DPT_ERROR_TIMEOUT, DPT_ERROR_DEVICE or DPT_ERROR_COMMUNICATION as dpt_trainer_step() (the
 *         trainer then refuses work); DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_trainer_recompute_batch_norm(dpt_trainer *trainer, const dpt_dataset *dataset,
                                                    size_t batch_size, size_t sample_count);

/**
 * @brief Computes the logits (pre-softmax outputs) of @p sample_count samples (float32 inputs; token
 * models: dpt_trainer_predict_tokens()).
 * @param trainer the trainer.
 * @param inputs sample_count * input size floats (input_count of them).
 * @param input_count the number of floats at @p inputs.
 * @param sample_count the number of samples.
 * @param logits receives sample_count * output size floats (logit_count of them).
 * @param logit_count the number of floats @p logits holds.
 */
DPT_API dpt_status dpt_trainer_predict(dpt_trainer *trainer, const float *inputs, size_t input_count,
                                       size_t sample_count, float *logits, size_t logit_count);

/**
 * @brief Trains for options->epochs epochs over @p train, evaluating @p test (may be NULL) after each.
 *
 * With accumulation, an unfinished window is applied at the end of each epoch. Epoch numbering (and
 * so the shuffle order) continues across calls. A trainer stopped in the middle of an epoch (by the
 * callback, or by an error in it), or loaded from a checkpoint saved from a batch report, goes on from the
 * sample after the last one it trained, in the same order: the first epoch of this call is that epoch's
 * rest, and with the same batch_size and dataset the result is bitwise that of a run never stopped (with
 * another batch_size the rest is cut into batches of that size; a dataset no larger than the samples done
 * starts the epoch over). Since 0.2.
 * @return DPT_OK also when the callback stopped training (result->stopped = 1).
 */
DPT_API dpt_status dpt_trainer_fit(dpt_trainer *trainer, const dpt_dataset *train, const dpt_dataset *test,
                                   const dpt_fit_options *options, dpt_fit_result *result);

/** @brief Number of parameters (floats) of one replica. */
DPT_API dpt_status dpt_trainer_parameter_count(const dpt_trainer *trainer, size_t *count);

/** @brief Copies the parameters (of the first replica) into @p parameters; count must equal the parameter
 * count. */
DPT_API dpt_status dpt_trainer_get_parameters(dpt_trainer *trainer, float *parameters, size_t count);

/** @brief Copies the parameters of replica @p replica (0 .. device count - 1). */
DPT_API dpt_status dpt_trainer_get_replica_parameters(dpt_trainer *trainer, size_t replica, float *parameters,
                                                      size_t count);

/** @brief Sets the parameters of every replica; optimizer state is kept. Collective (every process calls
 * it) for a trainer whose parameters are sharded across every process's devices (DPT_SHARD_SCOPE_WORLD). */
DPT_API dpt_status dpt_trainer_set_parameters(dpt_trainer *trainer, const float *parameters, size_t count);

/**
 * @brief Copies the buffers (running statistics of batch norms; of the first replica, every replica holds
 * the same) into @p buffers, in the order of dpt_model_named_tensor(DPT_TENSOR_BUFFER); count must equal
 * dpt_model_buffer_count.
 * @return DPT_ERROR_NULL_POINTER for a NULL trainer or buffers; DPT_ERROR_SIZE_MISMATCH for a wrong count;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_trainer_get_buffers(dpt_trainer *trainer, float *buffers, size_t count);

/**
 * @brief Sets the buffers of every replica (as dpt_trainer_set_parameters does the parameters).
 * @return DPT_ERROR_NULL_POINTER for a NULL trainer or buffers; DPT_ERROR_SIZE_MISMATCH for a wrong count;
 * DPT_ERROR_BUSY.
 */
DPT_API dpt_status dpt_trainer_set_buffers(dpt_trainer *trainer, const float *buffers, size_t count);

/**
 * @brief FNV-1a 64-bit hash of the parameter bytes (little-endian float32) of the first replica, so
 * runs can be compared bit for bit.
 */
DPT_API dpt_status dpt_trainer_parameter_checksum(dpt_trainer *trainer, uint64_t *checksum);

/** @brief The bytes one replica of a trainer holds in its device's memory, by what they are for.
 * The caller sets struct_size = sizeof(dpt_replica_memory). Since 0.2. */
typedef struct dpt_replica_memory {
  size_t struct_size; /**< Set by the caller. */
  /** The parameters (float32); with DPT_SHARD_PARAMETERS the replica's range of them plus its gather
   * buffer (two with prefetch_parameters where it reads ahead). */
  uint64_t parameters;
  /** The summed gradient (float32, one per parameter); with DPT_SHARD_GRADIENTS or _PARAMETERS that of
   * the replica's range only, plus the two staging buckets backward writes into. */
  uint64_t gradients;
  /** Momentum or Adam's moments: of the replica's range only when sharded (any mode but DPT_SHARD_NONE). */
  uint64_t optimizer_state;
  uint64_t buffers; /**< Running statistics (batch_norm). */
  /** Everything the replica's passes allocate: inputs, activations, what ops keep for backward, gradient
   * slots and scratch; grows with the largest slice seen so far. */
  uint64_t activations;
  uint64_t total; /**< The sum of the above. */
} dpt_replica_memory;

/** @brief One replica's share of the last dpt_trainer_step call (of a micro-batch: the update and, without
 * gradient buckets, the reduction come with the last of a window). The caller sets struct_size =
 * sizeof(dpt_replica_times). All 0 before the first step. Since 0.2. */
typedef struct dpt_replica_times {
  size_t struct_size;     /**< Set by the caller. */
  double compute_seconds; /**< Its forward and backward pass. */
  /** Its gradient reduction: on its own thread after backward, or (gradient buckets, sharded gradients)
   * on its communication thread during backward; 0 when the call reduced nothing. A pipeline stage: also
   * its hand-overs (the activations and gradients it copies across its stage's boundaries). */
  double communication_seconds;
  double update_seconds; /**< Its update: the norm, the optimizer step, (sharded) the all-gather. */
  /** The rest of the call's wall time on this device: waiting for slower devices, or for a reduction
   * that backward did not hide; a pipeline stage's waits for its neighbours (the bubble). */
  double idle_seconds;
  /** Bytes per second of its reduction as NCCL's tests count bus bandwidth: the float32 gradient's bytes
   * times 2 (K - 1) / K for an all-reduce, (K - 1) / K for a reduce-scatter, over communication_seconds;
   * 0 without a reduction. */
  double bus_bandwidth;
} dpt_replica_times;

/** @brief Replica @p device's times in the last dpt_trainer_step call (0-based, below the device count). */
DPT_API dpt_status dpt_trainer_replica_times(const dpt_trainer *trainer, size_t device,
                                             dpt_replica_times *times);

/** @brief Replica @p device's times summed over every dpt_trainer_step call since the trainer was made
 * (dpt_trainer_fit's steps included; evaluation and prediction are not steps): compute, communication,
 * update and idle seconds as in dpt_replica_times, bus_bandwidth the bus bytes of all its reductions over
 * their seconds. All 0 before the first step. A fit's share: the seconds after it minus those before.
 * Since 0.2. */
DPT_API dpt_status dpt_trainer_replica_totals(const dpt_trainer *trainer, size_t device,
                                              dpt_replica_times *times);

/** @brief The memory replica @p device (0-based, below the device count) holds now, by category. */
DPT_API dpt_status dpt_trainer_replica_memory(const dpt_trainer *trainer, size_t device,
                                              dpt_replica_memory *memory);

/**
 * @brief Starts recording a timeline of the trainer's work, from the next call on: per device, each op's
 * forward and backward, the gradient reductions (on the device's thread, or with gradient buckets on its
 * communication thread), the parameter gathers of DPT_SHARD_PARAMETERS and the update. Up to @p
 * max_events (1 to 2^24) are kept per device and thread; later ones are dropped and counted. Calling it
 * again restarts the recording. On GPUs each op waits for the one before it to finish on the device while
 * recording, so its times are its device time, and a recorded step is slower by a synchronisation per op.
 * Since 0.2.
 */
DPT_API dpt_status dpt_trainer_trace_start(dpt_trainer *trainer, size_t max_events);

/**
 * @brief Stops the recording and writes the timeline to @p path as Chrome trace-event JSON, atomically:
 * two rows per device (compute and communication), one event per recorded piece of work, idle time as
 * gaps; open it in chrome://tracing or https://ui.perfetto.dev. DPT_ERROR_INVALID_STATE when no recording
 * runs; DPT_ERROR_IO when the file cannot be written (the recording then stays stopped). Since 0.2.
 */
DPT_API dpt_status dpt_trainer_trace_write(dpt_trainer *trainer, const char *path);

/** @brief Number of devices (replicas) of the trainer. */
DPT_API dpt_status dpt_trainer_device_count(const dpt_trainer *trainer, size_t *count);

/**
 * @brief The slice sizes the trainer would give each device for a batch of @p batch_size samples.
 * With DPT_SPLIT_AUTO before the first step, reports the even split. Across MPI processes the devices are
 * this process's, and @p batch_size is the part of a global batch they share (the process's share).
 * @param trainer the trainer.
 * @param batch_size the number of samples of the batch.
 * @param counts receives device count entries.
 * @param count must equal the device count.
 */
DPT_API dpt_status dpt_trainer_split_sizes(const dpt_trainer *trainer, size_t batch_size, size_t *counts,
                                           size_t count);

/**
 * @brief Where the pipeline's stages after the first begin: their first nodes' names, comma-separated, as
 * pipeline_cuts takes them ("" without a pipeline), so that a run can name the cuts a balance chose.
 * Across MPI processes the same on every process. Since 0.2.
 * @param trainer the trainer.
 * @param buffer may be NULL when @p capacity is 0.
 * @param capacity the bytes @p buffer holds.
 * @param needed receives the length including the terminating NUL (may be NULL).
 * @return DPT_ERROR_BUFFER_TOO_SMALL (with *needed set) when capacity is too small.
 */
DPT_API dpt_status dpt_trainer_pipeline_cuts(const dpt_trainer *trainer, char *buffer, size_t capacity,
                                             size_t *needed);

DPT_EXTERN_C_END

#endif /* DPTRAIN_TRAINER_H */
