/* Run by mpirun with 2 processes against the simulated CUDA module (tests/sim_cuda, 4 simulated GPUs per
 * process, whose device memory the host cannot read: a message sent from it, or received into it, without
 * a host copy dies of SIGSEGV). A pipeline whose stages are divided among the processes
 * (DPT_PIPELINE_SCOPE_WORLD) on GPUs: each stage's activations and gradients copied to host memory, sent as
 * MPI messages and copied in on the other side (Pipeline's host staging); a stage's copies summed over a
 * NCCL communicator of the copies' GPUs. Against the same layout on CPU devices (the simulator runs the CPU
 * kernels, and two terms add alike in any order: the same bits), 4 steps of ragged batches, AdamW with
 * clipping:
 *   - LeNet and a model with batch norm, 2 stages on 1 GPU in each process;
 *   - LeNet, 4 stages on 2 GPUs in each process (a boundary inside each process: a peer copy; one between
 *     them);
 *   - LeNet, 2 stages of 2 replicas (2 GPUs in each process, a stage's replicas summed over NCCL);
 *   - pipeline_copies 2 (every process holds both stages, the copies' sums over NCCL across the processes):
 *     LeNet, and batch norm (its statistics summed over the copies in device memory);
 *   - the optimizer sharded among a stage's 2 replicas, within the process with copies, and over the copies
 *     (the parts gathered over the stage's NCCL communicator);
 *   - a head tied to the first layer across the processes, 2 and 4 stages (the mirror's gradient and the
 *     source's values through host buffers too);
 * the parameters, the running statistics (also recomputed from data) and the evaluation loss bit for bit,
 * every process alike; the checkpoint (collective, process 0 writes) the CPU layout's file byte for byte.
 * Exit status 0 only when every check passed on every process. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kSteps = 4, kEval = 9 };

typedef struct {
  size_t devices, stages, copies; /* in each process; copies: pipeline_copies (0: the default) */
  int cpu;                        /* CPU devices instead of GPUs (the reference) */
  dpt_shard_mode shard;
  int shard_world; /* DPT_SHARD_SCOPE_WORLD */
} setup;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

static dpt_status start(const dpt_model *model, setup s, run *r) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.device_selection = s.cpu ? DPT_DEVICES_CPU : DPT_DEVICES_CUDA;
  co.cpu_devices = s.devices;
  OK(dpt_context_create(&r->ctx, &co));
  size_t devices[4] = {0, 1, 2, 3};
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.devices = devices;
  to.device_count = s.devices;
  to.seed = 11;
  to.communicator = DPT_COMMUNICATOR_MPI;
  to.timeout_seconds = 60;
  to.gpu_flags = DPT_GPU_DETERMINISTIC;
  to.pipeline_stages = s.stages;
  to.micro_batches = 3;
  to.pipeline_scope = DPT_PIPELINE_SCOPE_WORLD;
  to.pipeline_copies = s.copies;
  to.shard = s.shard;
  to.shard_scope = s.shard_world ? DPT_SHARD_SCOPE_WORLD : DPT_SHARD_SCOPE_PROCESS;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 0.003f;
  oo.clip_norm = 0.05f;
  r->trainer = NULL;
  return dpt_trainer_create(&r->trainer, r->ctx, model, &to, &oo);
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

static void batch(float *x, int32_t *y, size_t n) {
  for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
  for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * 10.0f) % 10;
}

/* The same global batches on every process; then the parameters and running statistics, and the running
 * statistics recomputed from data (calloc'd, count floats), and the evaluation loss of a fixed batch. */
static float *train(run r, const dpt_model *model, size_t *count, double *eval_loss) {
  static const size_t sizes[kSteps] = {12, 7, 12, 9};
  static float x[12 * kInput];
  int32_t y[12];
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  float *v = calloc(n + 2 * m + 1, sizeof(float));
  *count = n + 2 * m;
  if (r.trainer == NULL) return v;
  state = 21;
  for (int s = 0; s < kSteps; ++s) {
    batch(x, y, sizes[s]);
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, sizes[s] * kInput, y, sizes[s], &res));
  }
  OK(dpt_trainer_get_parameters(r.trainer, v, n));
  if (m > 0) OK(dpt_trainer_get_buffers(r.trainer, v + n, m));
  batch(x, y, kEval);
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(r.trainer, x, kEval * kInput, y, kEval, &e));
  *eval_loss = e.loss;
  if (m > 0) { /* forwards only, through both processes' stages, in batches of 12 */
    dpt_dataset *data = NULL;
    batch(x, y, 12);
    OK(dpt_dataset_create(&data, x, 12 * kInput, y, 12, 1, 28, 28, 10));
    OK(dpt_trainer_recompute_batch_norm(r.trainer, data, 12, 0));
    dpt_dataset_destroy(data);
    OK(dpt_trainer_get_buffers(r.trainer, v + n + m, m));
  }
  return v;
}

/* The divided pipeline on GPUs against the same layout on CPU devices. */
static void check_bits(const dpt_model *model, setup s, const char *what, int rank, const char *dir) {
  setup cpu = s;
  cpu.cpu = 1;
  char paths[2][512];
  snprintf(paths[0], sizeof paths[0], "%s/cpu.ckpt", dir);
  snprintf(paths[1], sizeof paths[1], "%s/gpu.ckpt", dir);
  run rc, rg;
  size_t n = 0;
  double loss_cpu = 0, loss_gpu = 0;
  OK(start(model, cpu, &rc));
  float *vc = train(rc, model, &n, &loss_cpu);
  if (rc.trainer != NULL) OK(dpt_trainer_save(rc.trainer, paths[0]));
  stop(rc);
  OK(start(model, s, &rg));
  float *vg = train(rg, model, &n, &loss_gpu);
  if (rg.trainer != NULL) OK(dpt_trainer_save(rg.trainer, paths[1]));
  stop(rg);
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, paths[0], paths[1], what);
  if (rank == 0) remove(paths[0]), remove(paths[1]);
  CHECK(memcmp(vc, vg, n * sizeof(float)) == 0, "%s: not the CPU devices' bits", what);
  CHECK(loss_gpu == loss_cpu, "%s: evaluation loss %.9g, on CPU devices %.9g", what, loss_gpu, loss_cpu);
  CHECK(same_on_every_process(vg, n), "%s: the processes differ", what);
  if (rank == 0) printf("%s: the CPU devices' bits, checkpoint and evaluation loss (%.9g)\n", what, loss_gpu);
  free(vc), free(vg);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  char dir[256];
  shared_temp_dir(rank, "dpt-gpu-pipeline-world", dir, sizeof dir);
  dpt_model *lenet = NULL, *norm = small_batch_norm_model(), *tied = tied_head_model();
  OK(dpt_model_create_builtin(&lenet, "lenet"));

  check_bits(lenet, (setup){1, 2, 0, 0, DPT_SHARD_NONE, 0}, "LeNet, 2 stages on 1 GPU in each process", rank,
             dir);
  check_bits(norm, (setup){1, 2, 0, 0, DPT_SHARD_NONE, 0}, "batch norm, 2 stages on 1 GPU in each process",
             rank, dir);
  check_bits(lenet, (setup){2, 4, 0, 0, DPT_SHARD_NONE, 0}, "LeNet, 4 stages on 2 GPUs in each process", rank,
             dir);
  check_bits(lenet, (setup){2, 2, 0, 0, DPT_SHARD_NONE, 0}, "LeNet, 2 stages of 2 replicas in each process",
             rank, dir);
  check_bits(lenet, (setup){2, 2, 2, 0, DPT_SHARD_NONE, 0}, "LeNet, 2 copies of 2 stages (summed over NCCL)",
             rank, dir);
  check_bits(norm, (setup){2, 2, 2, 0, DPT_SHARD_NONE, 0}, "batch norm, 2 copies of 2 stages", rank, dir);

  check_bits(lenet, (setup){2, 2, 0, 0, DPT_SHARD_OPTIMIZER, 0},
             "LeNet, 2 stages of 2 replicas sharding the optimizer", rank, dir);
  check_bits(lenet, (setup){2, 2, 2, 0, DPT_SHARD_OPTIMIZER, 0},
             "LeNet, 2 copies sharding within the process", rank, dir);
  check_bits(lenet, (setup){2, 2, 2, 0, DPT_SHARD_OPTIMIZER, 1}, "LeNet, 2 copies sharding over the copies",
             rank, dir);
  /* A head tied to the first layer, the two in the two processes' stages: the mirror's gradient and the
   * source's values through host buffers, the gradient added on the source's GPU. */
  check_bits(tied, (setup){1, 2, 0, 0, DPT_SHARD_NONE, 0}, "a head tied across the processes, 2 stages", rank,
             dir);
  check_bits(tied, (setup){2, 4, 0, 0, DPT_SHARD_NONE, 0}, "a head tied across the processes, 4 stages", rank,
             dir);

  dpt_model_destroy(tied);
  dpt_model_destroy(norm);
  dpt_model_destroy(lenet);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) rmdir(dir);
  return finish_processes(rank);
}
