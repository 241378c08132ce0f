/* Run by mpirun with 2 processes against the simulated CUDA module (tests/sim_cuda, 4 simulated GPUs per
 * process; its NCCL across processes meets on shared memory and sums in global rank order, as its NCCL
 * within a process does). GPU trainers across the processes (DPT_COMMUNICATOR_MPI, one NCCL communicator over
 * every process's GPUs), 4 steps of ragged global batches, against a trainer of this process alone on as
 * many GPUs (the same sums in the same order, so the same bits):
 *   - LeNet with AdamW: 2 processes x 1 GPU = 1 process x 2 GPUs; 2 x 2 = 1 x 4 (batches that both split
 *     alike); every process alike;
 *   - a bf16 wire (each rank's value and the sum rounded): 2 x 1 = 1 x 2;
 *   - a model with batch norm (statistics summed in device memory over the communicator,
 * comm_all_reduce_f64): 2 x 1 = 1 x 2, parameters and running statistics;
 *   - gradient buckets all-reduced during backward (comm_all_reduce_start): 2 x 1 and 2 x 2, LeNet and
 *     batch norm, = one all-reduce after backward on 1 x 2 and 1 x 4;
 *   - the optimizer state sharded within each process (DPT_SHARD_OPTIMIZER): 2 x 2 = unsharded 2 x 2, also
 *     with buckets during backward and clipping, batch norm on a bf16 wire, and processes of 1 + 2 GPUs (each
 *     piece reduced to one owner, then sent to the others: the timeline shows reduce-scatters only); and
 *     across every GPU of the job (DPT_SHARD_SCOPE_WORLD, the ranges gathered by NCCL broadcasts): 2 x 1
 *     and 2 x 2 = unsharded;
 *   - a pipeline of 2 stages on 2 GPUs in each process (a stage's communicator over both processes' GPUs of
 *     it): the same pipeline on 2 CPU devices in each process (its stage sums over MPI), LeNet and batch
 *     norm; 2 stages x 2 GPUs per process with the optimizer sharded within each process: unsharded;
 *   - the gradients sharded across every GPU of the job (DPT_SHARD_GRADIENTS, world scope; the buckets
 *     reduced to their owners by NCCL reduces during backward): 2 x 1 and 2 x 2 = unsharded, also with batch
 *     norm and (2 x 2) on a bf16 wire;
 *   - the gradients and the parameters sharded within each process (the process scope, hybrid: each bucket
 *     reduced within the process, the ranges summed over the processes through the host at the window's
 *     end): 2 x 2 = the same run on CPU devices, with batch norm, and (gradients) accumulating 2;
 *   - the parameters sharded across every GPU of the job (each process exposing host copies of its ranges,
 *     refreshed when it publishes; a pass reading the others' into host memory, then onto its GPU): 2 x 1
 *     and 2 x 2 (also reading ahead) = unsharded, also with batch norm;
 *   - refused on every process alike (DPT_ERROR_UNSUPPORTED): replicas sharing a GPU ("cuda:0x2"); a bf16
 *     wire with the gradients sharded within each process.
 * Exit status 0 only when every check passed on every process. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kSteps = 4 };

typedef struct {
  size_t gpus; /* replicas in this process (on GPUs 0 .. gpus-1, or all on GPU 0: shared) */
  int shared;  /* the replicas share GPU 0 */
  dpt_communicator communicator;
  dpt_precision wire;
  dpt_shard_mode shard;
  dpt_shard_scope scope;
  size_t stages; /* a pipeline of this many stages (0: none), 3 micro-batches */
  int cpu;       /* on as many CPU devices instead (the pipeline's reference) */
} setup;

/* The gradient-norm clip of start()'s optimizer (0: off), and its trainer's accumulation steps. */
static float clip_norm = 0.0f;
static size_t accumulation = 1;
static int prefetch = 0; /* prefetch_parameters */
/* check_bits' second setup's bucket_bytes (0: the C API's default, LeNet in one bucket, all-reduced after
 * backward). */
static size_t later_bucket_bytes = 0;
/* Non-zero: process 0 has this many GPUs instead of the setup's (processes of different sizes). */
static size_t first_process_gpus = 0;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

static dpt_status start(const dpt_model *model, setup s, size_t bucket_bytes, run *r) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.device_selection = s.cpu ? DPT_DEVICES_CPU : DPT_DEVICES_CUDA;
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  if (process == 0 && first_process_gpus != 0) s.gpus = first_process_gpus;
  co.cpu_devices = s.gpus;
  OK(dpt_context_create(&r->ctx, &co));
  size_t devices[4];
  for (size_t i = 0; i < s.gpus; ++i) devices[i] = s.shared ? 0 : i;

  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.devices = devices;
  to.device_count = s.gpus;
  to.seed = 3;
  to.communicator = s.communicator;
  to.timeout_seconds = 60;
  if (bucket_bytes != 0) to.bucket_bytes = bucket_bytes;
  to.allreduce_dtype = s.wire;
  to.shard = s.shard;
  to.shard_scope = s.scope;
  to.gpu_flags = DPT_GPU_DETERMINISTIC;
  to.pipeline_stages = s.stages;
  to.accumulation_steps = accumulation;
  to.prefetch_parameters = prefetch;
  to.micro_batches = s.stages > 1 ? 3 : 0;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 0.003f;
  oo.clip_norm = clip_norm;
  r->trainer = NULL;
  return dpt_trainer_create(&r->trainer, r->ctx, model, &to, &oo);
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

/* The global batch sizes, alternating: ragged (11 and 6 split alike over 2 GPUs of one process and over 2
 * processes of 1 GPU), or (12 and 8) split alike over 4 GPUs of one process and 2 processes of 2 GPUs. */
static size_t batches[2] = {11, 6};

/* The same global batches on every process (each process takes its share of each). */
static void train(run r) {
  static float x[12 * kInput];
  int32_t y[12];
  state = 99;
  for (int s = 0; s < kSteps && r.trainer != NULL; ++s) {
    const size_t n = batches[s % 2];
    for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
    for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * 10.0f) % 10;
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, n * kInput, y, n, &res));
  }
}

/* The parameters, then the running statistics, of a trained run (calloc'd). */
static float *values(run r, const dpt_model *model, size_t *count) {
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  float *v = calloc(n + m + 1, sizeof(float));
  if (r.trainer != NULL) {
    OK(dpt_trainer_get_parameters(r.trainer, v, n));
    if (m > 0) OK(dpt_trainer_get_buffers(r.trainer, v + n, m));
  }
  *count = n + m;
  return v;
}

/* Trains a and b on the same batches: the same bits (parameters and running statistics), alike on every
 * process. */
static void check_bits(const dpt_model *model, setup a, setup b, const char *what) {
  run ra, rb;
  OK(start(model, a, 0, &ra));
  OK(start(model, b, later_bucket_bytes, &rb));
  train(ra), train(rb);
  size_t n = 0;
  float *va = values(ra, model, &n), *vb = values(rb, model, &n);
  CHECK(memcmp(va, vb, n * sizeof(float)) == 0, "%s: not the same bits", what);
  CHECK(same_on_every_process(vb, n), "%s: the processes differ", what);
  free(va), free(vb);
  stop(ra), stop(rb);
}

/* The trainer's timeline of its steps (buckets during backward) names the reductions: reduce-scatters
 * (whole or of buckets), and no all-reduce. */
static void check_reduced_to_owners(const dpt_model *model, setup s, const char *what) {
  run r;
  OK(start(model, s, 4096, &r));
  OK(dpt_trainer_trace_start(r.trainer, 100000));
  train(r);
  int process = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &process);
  char path[128];
  snprintf(path, sizeof path, "/tmp/dptrain-gpu-sim-trace-%ld-%d.json", (long)getpid(), process);
  OK(dpt_trainer_trace_write(r.trainer, path));
  FILE *f = fopen(path, "rb");
  static char text[1 << 22];
  const size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = 0;
  if (f != NULL) fclose(f);
  remove(path);
  CHECK(strstr(text, "\"reduce-scatter") != NULL && strstr(text, "\"all-reduce") == NULL,
        "%s: the timeline's reductions are not reduce-scatters only (%zu bytes)", what, n);
  stop(r);
}

static void check_refused(const dpt_model *model, setup s, const char *needle, const char *what) {
  run r;
  const dpt_status st = start(model, s, 0, &r);
  CHECK(st == DPT_ERROR_UNSUPPORTED && r.trainer == NULL && strstr(dpt_last_error_message(), needle),
        "%s: status %d, %s", what, (int)st, dpt_last_error_message());
  stop(r);
}

#define LOCAL DPT_COMMUNICATOR_LOCAL
#define WORLD_MPI DPT_COMMUNICATOR_MPI
#define F32 DPT_PRECISION_FP32
#define NONE DPT_SHARD_NONE
#define PROCESS DPT_SHARD_SCOPE_PROCESS

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  dpt_model *lenet = NULL, *norm = small_batch_norm_model();
  OK(dpt_model_create_builtin(&lenet, "lenet"));

  check_bits(lenet, (setup){2, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0}, "2 processes x 1 GPU vs 1 x 2");
  batches[0] = 12, batches[1] = 8;
  check_bits(lenet, (setup){4, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0}, "2 processes x 2 GPUs vs 1 x 4");
  batches[0] = 11, batches[1] = 6;
  check_bits(lenet, (setup){2, 0, LOCAL, DPT_PRECISION_BF16, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, DPT_PRECISION_BF16, NONE, PROCESS, 0, 0},
             "a bf16 wire, 2 x 1 vs 1 x 2");
  check_bits(norm, (setup){2, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0}, "batch norm, 2 x 1 vs 1 x 2");
  /* Buckets all-reduced during backward over both processes' GPUs (comm_all_reduce_start, then
   * comm_wait_started after backward), against one all-reduce after backward in one process; with batch
   * norm, whose statistics' all-reduces go over the same communicator between the started buckets. */
  later_bucket_bytes = 4096;
  check_bits(lenet, (setup){2, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             "buckets during backward, 2 x 1 vs 1 x 2 after backward");
  later_bucket_bytes = 64;
  check_bits(norm, (setup){2, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             "batch norm, buckets during backward, 2 x 1 vs 1 x 2 after backward");
  later_bucket_bytes = 4096;
  batches[0] = 12, batches[1] = 8;
  check_bits(lenet, (setup){4, 0, LOCAL, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             "buckets during backward, 2 x 2 vs 1 x 4 after backward");
  later_bucket_bytes = 0;
  batches[0] = 11, batches[1] = 6;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
             "the optimizer state sharded within each process, 2 x 2");
  /* ZeRO-1 within each process across the processes over one communicator of every GPU: each piece of the
   * gradient between every process's cuts reduced to its owner in one process (comm_reduce_ranges, global
   * rank order as the all-reduce's), then sent to its owners in the others (comm_exchange): the unsharded
   * bits with buckets during backward, clipping that bites (the norm from each process's own ranges), a bf16
   * wire, and processes of 1 and 2 GPUs (the one GPU receiving every piece it does not root). */
  later_bucket_bytes = 4096;
  clip_norm = 0.05f;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
             "the optimizer state sharded within each process, buckets during backward, clipped, 2 x 2");
  check_reduced_to_owners(lenet, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
                          "the optimizer state sharded within each process, 2 x 2");
  check_bits(norm, (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
             "batch norm, a bf16 wire, the optimizer state sharded within each process, 2 x 2");
  first_process_gpus = 1;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
             "the optimizer state sharded within each process, 1 + 2 GPUs, buckets, clipped");
  later_bucket_bytes = 0;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 0, 0},
             "the optimizer state sharded within each process, 1 + 2 GPUs, after backward, clipped");
  first_process_gpus = 0;
  clip_norm = 0.0f;

  check_refused(lenet, (setup){2, 1, WORLD_MPI, F32, NONE, PROCESS, 0, 0}, "need a GPU each",
                "cuda:0x2 in each process");
  /* ZeRO-1 across every GPU of the job: the gradient all-reduced whole, each GPU updating its range of the
   * job's layout, the ranges gathered by NCCL broadcasts from their owners (comm_all_gather_ranges). */
  check_bits(lenet, (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the optimizer state sharded across the job, 2 x 1");
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the optimizer state sharded across the job, 2 x 2");

  /* ZeRO-2 across every GPU of the job: each bucket reduced to its owners during backward over both
   * processes' GPUs (comm_reduce_ranges, sums in global rank order as the all-reduce's), each GPU updating
   * its range, the ranges gathered by NCCL broadcasts; with batch norm, its statistics over the same
   * communicator. Within each process (the process scope) it is refused, on every process alike. */
  check_bits(lenet, (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the gradients sharded across the job, 2 x 1");
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the gradients sharded across the job, 2 x 2");
  check_bits(norm, (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "batch norm, the gradients sharded across the job, 2 x 1");
  check_bits(lenet, (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_GRADIENTS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "a bf16 wire, the gradients sharded across the job, 2 x 2");
  /* ZeRO-2 within each process (the process scope, hybrid): each bucket reduced to its owners within the
   * process over NCCL, then the owners' parts summed over the processes by MPI from host buffers: the CPU
   * path's hierarchical sums, (a0 + a1) + (b0 + b1), so the bits of the same run on CPU devices, also with
   * batch norm (its statistics over the host and MPI) and with accumulation (a window's later micro-batches
   * reduced in the staging bucket, summed over the processes, then added). */
  batches[0] = 12, batches[1] = 8;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 0},
             "the gradients sharded within each process, 2 x 2, vs CPU devices");
  check_bits(norm, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 0},
             "batch norm, the gradients sharded within each process, 2 x 2, vs CPU devices");
  accumulation = 2;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_GRADIENTS, PROCESS, 0, 0},
             "the gradients sharded within each process, accumulating 2, vs CPU devices");
  accumulation = 1;
  /* ZeRO-3 within each process: the same gradient path, the parameters gathered by peer copies within the
   * process. */
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, PROCESS, 0, 0},
             "the parameters sharded within each process, 2 x 2, vs CPU devices");
  check_bits(norm, (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, PROCESS, 0, 0},
             "batch norm, the parameters sharded within each process, 2 x 2, vs CPU devices");
  /* A bf16 wire: within the process the 16-bit reduce (each rank's value rounded, summed in rank order,
   * rounded), across the processes MPI's 16-bit sum of the owners' parts: the CPU path's roundings, so its
   * bits; also accumulating 2. */
  check_bits(lenet, (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_GRADIENTS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_GRADIENTS, PROCESS, 0, 0},
             "a bf16 wire, the gradients sharded within each process, 2 x 2, vs CPU devices");
  accumulation = 2;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_GRADIENTS, PROCESS, 0, 1},
             (setup){2, 0, WORLD_MPI, DPT_PRECISION_BF16, DPT_SHARD_GRADIENTS, PROCESS, 0, 0},
             "a bf16 wire, the gradients sharded within each process, accumulating 2, vs CPU devices");
  accumulation = 1;
  batches[0] = 11, batches[1] = 6;
  /* ZeRO-3 across every GPU of the job: a pass reads the other processes' ranges from host copies they
   * expose (refreshed from their GPUs when they publish) into host memory and copies them onto its GPU; the
   * gradient as ZeRO-2 across the job. */
  check_bits(lenet, (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the parameters sharded across the job, 2 x 1");
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the parameters sharded across the job, 2 x 2");
  check_bits(norm, (setup){1, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){1, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "batch norm, the parameters sharded across the job, 2 x 1");
  prefetch = 1; /* the next bucket's gets started into a host buffer while the current one computes */
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 0, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD, 0, 0},
             "the parameters sharded across the job, read ahead, 2 x 2");
  prefetch = 0;

  /* Pipelines across the processes: each runs both stages on its GPUs, a stage's gradient all-reduced by a
   * NCCL communicator over both processes' GPUs of it (two terms: the CPU pipeline's MPI sum's bits). */
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 1},
             (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             "a pipeline, 2 processes x 2 GPUs vs CPU devices");
  check_bits(norm, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 1},
             (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             "a pipeline with batch norm, 2 processes x 2 GPUs vs CPU devices");
  batches[0] = 12, batches[1] = 8;
  check_bits(lenet, (setup){4, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             (setup){4, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 2, 0},
             "a pipeline of 2 x 2 GPUs per process, the optimizer sharded within each process vs unsharded");
  /* The same with each stage in buckets during its last backward, clipping on: each stage's pieces reduced
   * to one owner over both processes' GPUs of the stage, then sent on to the other's (comm_exchange). */
  later_bucket_bytes = 4096;
  clip_norm = 0.05f;
  check_bits(lenet, (setup){4, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             (setup){4, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 2, 0},
             "a pipeline of 2 x 2 GPUs per process in buckets, the optimizer sharded within each process, "
             "clipped, vs unsharded");
  check_reduced_to_owners(lenet, (setup){4, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, PROCESS, 2, 0},
                          "a pipeline of 2 x 2 GPUs per process, the optimizer sharded within each process");
  later_bucket_bytes = 0;
  clip_norm = 0.0f;
  /* The optimizer sharded across every process's replicas of a stage (the world scope): each part's owner
   * updates it, the parts gathered by NCCL broadcasts over the stage's communicator, the norm's squares
   * summed over the processes (clipping on: a norm of this process's parts alone would clip otherwise). */
  clip_norm = 0.05f;
  check_bits(lenet, (setup){4, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             (setup){4, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD, 2, 0},
             "a pipeline of 2 x 2 GPUs per process, the optimizer sharded across the job vs unsharded");
  batches[0] = 11, batches[1] = 6;
  check_bits(lenet, (setup){2, 0, WORLD_MPI, F32, NONE, PROCESS, 2, 0},
             (setup){2, 0, WORLD_MPI, F32, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD, 2, 0},
             "a pipeline of 2 x 1 GPUs per process, the optimizer sharded across the job vs unsharded");
  clip_norm = 0.0f;

  dpt_model_destroy(norm);
  dpt_model_destroy(lenet);
  return finish_processes(rank);
}
