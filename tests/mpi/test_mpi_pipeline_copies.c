/* Run by mpirun with 4 processes. A pipeline of 2 stages divided among 4 processes
 * (DPT_PIPELINE_SCOPE_WORLD with more processes than stages): processes 0 and 1 hold copies of the first
 * stage, 2 and 3 of the second, one device each; processes 0 and 2 train on the first half of each batch, 1
 * and 3 on the second, the activations crossing 0 -> 2 and 1 -> 3, a stage's gradients (and its batch norm
 * statistics, per micro-batch) summed over its two copies. Against one process of the same 2 stages on 2
 * replicas each (no communicator), given each batch reordered so that its micro-batch m holds the halves'
 * m-th micro-batches side by side (replica r then trains on half r's): LeNet with clipping and a model with
 * batch norm (its running statistics also recomputed from data, the statistics of each micro-batch
 * summed over the copies) and a model whose head is tied to its first layer (the mirror's gradient and the
 * source's values sent between copy c of each stage), 3 micro-batches, 4 steps: the parameters and the
 * running statistics bit for bit on every process, the evaluation loss within 1e-6 (summed in another order),
 * each process holding one stage's parameters. Then pipeline_copies: 4 stages in 2 copies (2 stages on 2
 * devices in each process; processes 0 and 1 hold stages 0-1, 2 and 3 stages 2-3), LeNet with clipping, batch
 * norm, the tied head and the optimizer sharded over the copies, the same checks bit for bit against one
 * process of 4 stages on 2 replicas each; and 2 stages in 4 copies (every process holds the whole pipeline):
 * LeNet (also sharding the optimizer over the copies) and batch norm within 1e-5 of one process of 2 stages
 * on 4 replicas each (a stage's sums over 4 copies go over MPI in another order), the processes bitwise
 * identical. Clipping at 0.05 bites in every case (checked: every step's norm is above it). And 2 stages
 * in 2 copies of 2 replicas each, the optimizer sharded among each process's replicas (the process scope):
 * the unsharded divided pipeline's bits. Exit status 0 only when every check passed on every process.
 */
#include <dptrain/dptrain.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../capi/relative_error.h"
#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kBatch = 12, kMicro = 3, kSteps = 4, kEval = 10, kClasses = 10 };
/* Clipping that bites (every case's norms are above it): a norm that leaves a copy's or a stage's part out
 * clips differently. */
static const float kClip = 0.05f;
/* The smallest gradient norm of the last train()'s steps. */
static double least_norm = 0;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

/* A layout of the divided pipeline: its stages and the copies the 4 processes hold of it (0: the default,
 * 4 / stages), each process on `devices` devices. */
typedef struct {
  size_t stages, copies, devices;
} layout;

/* shard: 1, the divided pipeline's optimizer state sharded among every copy's replicas of a stage; 2, among
 * each process's own replicas (the process scope). */
static dpt_status start(const dpt_model *model, layout l, size_t devices, dpt_communicator communicator,
                        int shard, run *r) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = devices;
  OK(dpt_context_create(&r->ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 9;
  to.communicator = communicator;
  to.timeout_seconds = 60;
  to.pipeline_stages = l.stages;
  to.micro_batches = kMicro;
  to.pipeline_scope = DPT_PIPELINE_SCOPE_WORLD;
  if (communicator == DPT_COMMUNICATOR_MPI) to.pipeline_copies = l.copies;
  if (shard) {
    to.shard = DPT_SHARD_OPTIMIZER;
    to.shard_scope = shard == 1 ? DPT_SHARD_SCOPE_WORLD : DPT_SHARD_SCOPE_PROCESS;
  }
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 0.003f;
  oo.clip_norm = kClip;
  r->trainer = NULL;
  return dpt_trainer_create(&r->trainer, r->ctx, model, &to, &oo);
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

/* The reference's order of a batch: micro-batch m = copy 0's share's m-th micro-batch, then copy 1's, ... */
static size_t copies_of(layout l) {
  return l.copies != 0 ? l.copies : 4 / l.stages;
}
static void interleave(layout l, const float *x, const int32_t *y, float *xo, int32_t *yo) {
  const size_t copies = copies_of(l), share = kBatch / copies, micro = share / kMicro;
  size_t at = 0;
  for (size_t m = 0; m < kMicro; ++m)
    for (size_t h = 0; h < copies; ++h)
      for (size_t i = 0; i < micro; ++i, ++at) {
        const size_t from = h * share + m * micro + i;
        memcpy(xo + at * kInput, x + from * kInput, kInput * sizeof(float));
        yo[at] = y[from];
      }
}

/* Trains 4 steps (the reference on the interleaved batches), then evaluates a fixed batch: the parameters
 * and running statistics (calloc'd) and the evaluation loss. */
static void train(run r, layout l, const dpt_model *model, int reference, float **params, float **buffers,
                  double *eval_loss) {
  static float x[kBatch * kInput], xo[kBatch * kInput];
  int32_t y[kBatch], yo[kBatch];
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  *params = calloc(n, sizeof(float));
  *buffers = calloc(m + 1, sizeof(float));
  if (r.trainer == NULL) return;
  state = 17;
  for (int s = 0; s < kSteps; ++s) {
    for (size_t i = 0; i < kBatch * kInput; ++i) x[i] = next_unit();
    for (size_t i = 0; i < kBatch; ++i) y[i] = (int32_t)(next_unit() * kClasses) % kClasses;
    interleave(l, x, y, xo, yo);
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, reference ? xo : x, kBatch * kInput, reference ? yo : y, kBatch, &res));
    if (s == 0 || res.grad_norm < least_norm) least_norm = res.grad_norm;
  }
  OK(dpt_trainer_get_parameters(r.trainer, *params, n));
  if (m > 0) OK(dpt_trainer_get_buffers(r.trainer, *buffers, m));
  for (size_t i = 0; i < kEval * kInput; ++i) x[i] = next_unit();
  for (size_t i = 0; i < kEval; ++i) y[i] = (int32_t)(next_unit() * kClasses) % kClasses;
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(r.trainer, x, kEval * kInput, y, kEval, &e));
  *eval_loss = e.loss;
}

/* Batch norm's running statistics recomputed from two batches of kBatch samples (the reference's
 * interleaved), in batches of kBatch: calloc'd, NULL without batch norm. */
static float *recomputed(run r, layout l, const dpt_model *model, int reference) {
  size_t m = 0;
  OK(dpt_model_buffer_count(model, &m));
  if (m == 0 || r.trainer == NULL) return NULL;
  static float x[2 * kBatch * kInput], xo[2 * kBatch * kInput];
  int32_t y[2 * kBatch] = {0}, yo[2 * kBatch];
  state = 5;
  for (size_t i = 0; i < 2 * kBatch * kInput; ++i) x[i] = next_unit();
  for (size_t b = 0; b < 2; ++b)
    interleave(l, x + b * kBatch * kInput, y + b * kBatch, xo + b * kBatch * kInput, yo + b * kBatch);
  dpt_dataset *data = NULL;
  OK(dpt_dataset_create(&data, reference ? xo : x, 2 * kBatch * kInput, reference ? yo : y, 2 * kBatch, 1, 28,
                        28, kClasses));
  OK(dpt_trainer_recompute_batch_norm(r.trainer, data, kBatch, 0));
  dpt_dataset_destroy(data);
  float *buffers = calloc(m, sizeof(float));
  OK(dpt_trainer_get_buffers(r.trainer, buffers, m));
  return buffers;
}

/* mirror_floats: a tied parameter's mirror, which the mirror's stage holds beside its own. */
static void compare(const dpt_model *model, layout l, size_t mirror_floats, int shard, const char *what,
                    int rank, const char *dir) {
  const size_t copies = copies_of(l);
  /* Two copies' sums have one addition, as the reference's two replicas'; more copies are summed over MPI in
   * another order than the reference's replicas in one process (within 1e-5, as data parallel across
   * processes). */
  const int exact = copies <= 2;
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  run a, b;
  float *p_ref, *b_ref, *p, *bufs;
  double loss_ref = 0, loss = 0;
  /* The reference: the copies' replicas of a stage side by side in one process. */
  OK(start(model, l, 4 * l.devices, DPT_COMMUNICATOR_LOCAL, 0, &a));
  float *initial = calloc(n, sizeof(float));
  OK(dpt_trainer_get_parameters(a.trainer, initial, n));
  train(a, l, model, 1, &p_ref, &b_ref, &loss_ref);
  char paths[2][512];
  snprintf(paths[0], sizeof paths[0], "%s/reference.ckpt", dir);
  snprintf(paths[1], sizeof paths[1], "%s/divided.ckpt", dir);
  if (rank == 0 && a.trainer != NULL) OK(dpt_trainer_save(a.trainer, paths[0]));
  float *recomputed_ref = recomputed(a, l, model, 1);
  stop(a);
  OK(start(model, l, l.devices, DPT_COMMUNICATOR_MPI, shard, &b));
  /* Parameter and optimizer-state bytes of this process's devices; the first device's parameters. */
  unsigned long long mine[2] = {0, 0}, job[2] = {0, 0}, first = 0;
  for (size_t d = 0; b.trainer != NULL && d < l.devices; ++d) {
    dpt_replica_memory mem = {.struct_size = sizeof mem};
    OK(dpt_trainer_replica_memory(b.trainer, d, &mem));
    mine[0] += mem.parameters;
    mine[1] += mem.optimizer_state;
    if (d == 0) first = mem.parameters;
  }
  MPI_Allreduce(mine, job, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  train(b, l, model, 0, &p, &bufs, &loss);
  CHECK(least_norm > kClip, "%s: a step's gradient norm %.3g is below the clip %.3g", what, least_norm,
        kClip);
  /* The checkpoint (collective; each copy gives its parts of the optimizer state when they shard it): the
   * reference's file byte for byte. */
  if (b.trainer != NULL) OK(dpt_trainer_save(b.trainer, paths[1]));
  MPI_Barrier(MPI_COMM_WORLD);
  if (exact) check_same_file(rank, paths[0], paths[1], what);
  if (rank == 0) remove(paths[0]), remove(paths[1]);
  float *recomputed_got = recomputed(b, l, model, 0);
  stop(b);
  float *zeros = calloc(m + 1, sizeof(float));
  if (m > 0)
    CHECK(recomputed_ref != NULL && recomputed_got != NULL &&
              (exact ? memcmp(recomputed_got, recomputed_ref, m * sizeof(float)) == 0
                     : tu_relative_error(recomputed_got, recomputed_ref, zeros, m) <= 1e-5) &&
              memcmp(recomputed_got, bufs, m * sizeof(float)) != 0,
          "%s: the recomputed running statistics are not the reference's (or did not change)", what);
  free(recomputed_ref), free(recomputed_got);
  const double error = tu_relative_error(p, p_ref, initial, n);
  CHECK(exact ? memcmp(p, p_ref, n * sizeof(float)) == 0 : error <= 1e-5,
        "%s: the parameters are not the reference's (relative error %.3g)", what, error);
  CHECK(exact ? memcmp(bufs, b_ref, m * sizeof(float)) == 0
              : m == 0 || tu_relative_error(bufs, b_ref, zeros, m) <= 1e-5,
        "%s: the running statistics differ", what);
  free(zeros);
  CHECK(fabs(loss - loss_ref) <= 1e-6 * fabs(loss_ref), "%s: evaluation loss %.9g, reference %.9g", what,
        loss, loss_ref);
  CHECK(same_on_every_process(p, n), "%s: the processes differ", what);
  CHECK(memcmp(p, initial, n * sizeof(float)) != 0, "%s: the parameters did not move", what);
  CHECK(
      job[0] == copies * (n + mirror_floats) * sizeof(float) && first < (n + mirror_floats) * sizeof(float),
      "%s: %llu parameter bytes in the job (the first device here %llu), expected %zu copies of the model's "
      "%zu",
      what, job[0], first, copies, n * sizeof(float));
  /* AdamW's two floats per parameter: in each copy, or (sharded among the copies) once in the job. */
  CHECK(job[1] == (shard ? 1 : copies) * 2 * n * sizeof(float),
        "%s: %llu bytes of optimizer state in the job", what, job[1]);
  if (rank == 0)
    printf("%s: %s (relative error %.3g); evaluation loss %.9g (reference %.9g)\n", what,
           exact ? "the reference's bits" : "the reference within 1e-5", error, loss, loss_ref);
  free(p_ref), free(b_ref), free(p), free(bufs), free(initial);
}

/* The process scope with copies: 2 stages on 4 processes, 2 replicas of its stage in each, the optimizer
 * state sharded among each process's 2 replicas (they reduce-scatter the stage's gradient, each part is then
 * summed over the two copies in place): the unsharded divided pipeline's bits on every process (two copies'
 * sums have one addition), AdamW's state held once per copy. */
static void check_process_scope(const dpt_model *model, int rank) {
  const layout l = {2, 0, 2};
  size_t n = 0;
  OK(dpt_model_parameter_count(model, &n));
  float *p[2], *bufs[2];
  unsigned long long state[2] = {0, 0};
  for (int shard = 0; shard < 2; ++shard) {
    run r;
    double loss = 0;
    OK(start(model, l, l.devices, DPT_COMMUNICATOR_MPI, shard ? 2 : 0, &r));
    unsigned long long mine = 0;
    for (size_t d = 0; r.trainer != NULL && d < l.devices; ++d) {
      dpt_replica_memory mem = {.struct_size = sizeof mem};
      OK(dpt_trainer_replica_memory(r.trainer, d, &mem));
      mine += mem.optimizer_state;
    }
    MPI_Allreduce(&mine, &state[shard], 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    train(r, l, model, 0, &p[shard], &bufs[shard], &loss);
    stop(r);
  }
  CHECK(memcmp(p[0], p[1], n * sizeof(float)) == 0 && same_on_every_process(p[1], n),
        "LeNet, 2 stages in 2 copies of 2 replicas, the optimizer sharded in the process scope: not the "
        "unsharded bits");
  CHECK(state[1] * 2 == state[0] && state[1] == 2ull * 2 * n * sizeof(float),
        "the process scope with copies: %llu bytes of optimizer state in the job, unsharded %llu", state[1],
        state[0]);
  if (rank == 0)
    printf(
        "LeNet, 2 stages in 2 copies of 2 replicas, the optimizer sharded in the process scope: the "
        "unsharded bits, %llu bytes of AdamW state in the job (unsharded %llu)\n",
        state[1], state[0]);
  for (int i = 0; i < 2; ++i) free(p[i]), free(bufs[i]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 4, "run with mpirun -np 4 (got %d processes)", size);
  char dir[256];
  shared_temp_dir(rank, "dpt-pipeline-copies", dir, sizeof dir);
  dpt_model *lenet = NULL;
  OK(dpt_model_create_builtin(&lenet, "lenet"));
  const layout two = {2, 0, 1}; /* the default copies: one stage per process */
  compare(lenet, two, 0, 0, "LeNet, 2 stages on 4 processes (2 copies of each), clipping", rank, dir);
  dpt_model *norm = small_batch_norm_model();
  compare(norm, two, 0, 0, "batch norm, 2 stages on 4 processes (2 copies of each)", rank, dir);
  dpt_model *tied = tied_head_model(); /* copy c of the head's stage sends to copy c of the first stage */
  compare(tied, two, 10 * kInput, 0,
          "a head tied across the processes, 2 stages on 4 processes (2 copies of each)", rank, dir);
  /* Each stage's optimizer state sharded among its two copies (--shard optimizer --shard-scope world): the
   * copies reduce-scatter the stage's gradient and gather the parts they updated. */
  compare(lenet, two, 0, 1,
          "LeNet, 2 stages on 4 processes, the optimizer state sharded over the copies, clipping", rank, dir);
  compare(tied, two, 10 * kInput, 1,
          "a tied head, 2 stages on 4 processes, the optimizer state sharded over the copies", rank, dir);
  /* pipeline_copies: several stages in each process and copies of them at once. 4 stages in 2 copies:
   * processes 0 and 1 hold stages 0-1 (one device each), 2 and 3 stages 2-3; a boundary inside each
   * process and one between them. */
  const layout four = {4, 2, 2};
  compare(lenet, four, 0, 0, "LeNet, 4 stages in 2 copies (2 stages per process), clipping", rank, dir);
  compare(norm, four, 0, 0, "batch norm, 4 stages in 2 copies (2 stages per process)", rank, dir);
  compare(tied, four, 10 * kInput, 0, "a tied head, 4 stages in 2 copies (2 stages per process)", rank, dir);
  compare(lenet, four, 0, 1, "LeNet, 4 stages in 2 copies, the optimizer state sharded over the copies", rank,
          dir);
  /* As many copies as processes: every process holds the whole pipeline (no messages between stages). */
  const layout whole = {2, 4, 2};
  compare(lenet, whole, 0, 0, "LeNet, 2 stages in 4 copies (every stage in every process)", rank, dir);
  compare(norm, whole, 0, 0, "batch norm, 2 stages in 4 copies (every stage in every process)", rank, dir);
  compare(lenet, whole, 0, 1, "LeNet, 2 stages in 4 copies, the optimizer state sharded over the copies",
          rank, dir);
  check_process_scope(lenet, rank);
  dpt_model_destroy(tied);
  dpt_model_destroy(norm);
  dpt_model_destroy(lenet);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) rmdir(dir);
  return finish_processes(rank);
}
