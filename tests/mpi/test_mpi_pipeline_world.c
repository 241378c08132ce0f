/* Run by mpirun with 2 processes. A pipeline whose stages are divided among the processes
 * (DPT_PIPELINE_SCOPE_WORLD: process p holds stages p S/2 .. (p+1) S/2 - 1, the activations and gradients
 * between the processes sent as MPI messages), against one process running all S stages on twice the
 * devices (no communicator), on the same global batches:
 *   - LeNet, 2 stages x 1 replica (clipping on), 2 x 2 (GPipe), 4 stages x 1 (two per process: a boundary
 *     within each process and one between them), 5 steps of ragged batches (one of a single sample, fewer
 *     than the micro-batches), AdamW: each step's loss, the parameters, the evaluation loss and the logits
 *     bit for bit, on both processes; each process holds only its stages' parameters;
 *   - a model with batch norm in both stages, 2 stages x 2 replicas: the parameters and running statistics
 *     bit for bit, also after the running statistics are recomputed from data;
 *   - checkpoints and safetensors (collective; process 0 writes): the one-process pipeline's file byte for
 *     byte; its checkpoint loads into the divided pipeline, which trains on to its bits;
 *   - a head tied to the first layer, the two in the two processes' stages (2 stages x 1 replica with
 *     clipping; 4 stages x 1, GPipe): the mirror's gradient and the source's values sent between the
 *     processes, the same checks bit for bit;
 *   - each stage's optimizer state sharded among its 2 replicas in the process (LeNet with clipping, the
 *     tied head): the same checks bit for bit; its checkpoint and safetensors the unsharded one-process
 *     files byte for byte;
 *   - pipeline_copies 2 (both processes hold both stages), the optimizer sharded over the copies, clipping
 *     that bites: the unsharded run's bits;
 *   - refused with DPT_ERROR_UNSUPPORTED: 3 stages over 2 processes, 3 copies of the pipeline over 2
 *     processes, sharded gradients, different device counts.
 * Exit status 0 only when every check passed on every process. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kSteps = 5, kEval = 9, kClasses = 10 };

typedef struct {
  size_t devices, stages;
  dpt_communicator communicator;
  dpt_pipeline_schedule schedule;
  float clip;
  dpt_shard_mode shard;
  size_t mirror_floats; /* a tied parameter's mirror, which the mirror's stage holds beside its own */
  int shard_across;     /* DPT_SHARD_SCOPE_WORLD */
  size_t copies;        /* pipeline_copies */
} setup;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

/* What a run gives: each step's loss, the parameters and running statistics after the steps, the
 * evaluation's loss and the logits of the same batch. */
typedef struct {
  double losses[kSteps], eval_loss;
  float *params, *buffers, *logits;
  uint64_t checksum;
} outcome;

static dpt_status start(const dpt_model *model, setup s, run *r) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = s.devices;
  OK(dpt_context_create(&r->ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 5;
  to.communicator = s.communicator;
  to.timeout_seconds = 60;
  to.pipeline_stages = s.stages;
  to.micro_batches = 3;
  to.pipeline_schedule = s.schedule;
  to.pipeline_scope = DPT_PIPELINE_SCOPE_WORLD; /* no effect without a communicator */
  to.pipeline_copies = s.copies;
  to.shard = s.shard;
  to.shard_scope = s.shard_across ? DPT_SHARD_SCOPE_WORLD : DPT_SHARD_SCOPE_PROCESS;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 0.003f;
  oo.clip_norm = s.clip;
  r->trainer = NULL;
  return dpt_trainer_create(&r->trainer, r->ctx, model, &to, &oo);
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

static void batch(float *x, int32_t *y, size_t n) {
  for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
  for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * kClasses) % kClasses;
}

static outcome train(run r, const dpt_model *model, uint64_t seed) {
  static float x[13 * kInput];
  int32_t y[13];
  static const size_t sizes[kSteps] = {13, 7, 1, 13, 8};
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  outcome o;
  memset(&o, 0, sizeof o);
  o.params = calloc(n, sizeof(float));
  o.buffers = calloc(m + 1, sizeof(float));
  o.logits = calloc(kEval * kClasses, sizeof(float));
  if (r.trainer == NULL) return o;
  state = seed;
  for (int s = 0; s < kSteps; ++s) {
    batch(x, y, sizes[s]);
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, sizes[s] * kInput, y, sizes[s], &res));
    o.losses[s] = res.loss;
  }
  OK(dpt_trainer_get_parameters(r.trainer, o.params, n));
  if (m > 0) OK(dpt_trainer_get_buffers(r.trainer, o.buffers, m));
  OK(dpt_trainer_parameter_checksum(r.trainer, &o.checksum));
  batch(x, y, kEval);
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(r.trainer, x, kEval * kInput, y, kEval, &e));
  o.eval_loss = e.loss;
  OK(dpt_trainer_predict(r.trainer, x, kEval * kInput, kEval, o.logits, kEval * kClasses));
  return o;
}

/* The running statistics recomputed from 12 samples in batches of 6 (calloc'd; NULL without batch norm). */
static float *recomputed(run r, const dpt_model *model) {
  size_t m = 0;
  OK(dpt_model_buffer_count(model, &m));
  if (m == 0 || r.trainer == NULL) return NULL;
  static float x[12 * kInput];
  int32_t y[12] = {0};
  state = 5;
  for (size_t i = 0; i < 12 * kInput; ++i) x[i] = next_unit();
  dpt_dataset *data = NULL;
  OK(dpt_dataset_create(&data, x, 12 * kInput, y, 12, 1, 28, 28, kClasses));
  OK(dpt_trainer_recompute_batch_norm(r.trainer, data, 6, 0));
  dpt_dataset_destroy(data);
  float *buffers = calloc(m, sizeof(float));
  OK(dpt_trainer_get_buffers(r.trainer, buffers, m));
  return buffers;
}

static void release(outcome o) {
  free(o.params), free(o.buffers), free(o.logits);
}

/* Trains the divided pipeline (devices per process) and one process of the same stages on twice the
 * devices; checks that they agree bit for bit, on both processes, and that the parameters moved. */
static void compare(const dpt_model *model, setup divided, const char *what, int rank) {
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(model, &n));
  OK(dpt_model_buffer_count(model, &m));
  setup alone = divided;
  alone.devices = 2 * divided.devices;
  alone.communicator = DPT_COMMUNICATOR_LOCAL;
  run a, b;
  OK(start(model, alone, &a));
  float *initial = calloc(n, sizeof(float));
  OK(dpt_trainer_get_parameters(a.trainer, initial, n));
  const outcome ref = train(a, model, 99);
  float *recomputed_ref = recomputed(a, model);
  stop(a);
  OK(start(model, divided, &b));
  /* Each process holds its stages' parameters only: together, the model once per replica index. */
  unsigned long long mine = 0, job = 0;
  if (b.trainer != NULL) {
    dpt_replica_memory mem = {.struct_size = sizeof mem};
    OK(dpt_trainer_replica_memory(b.trainer, 0, &mem));
    mine = mem.parameters;
    if (divided.stages == 4) { /* two stages in each process: replica 1 holds the second */
      OK(dpt_trainer_replica_memory(b.trainer, 1, &mem));
      mine += mem.parameters;
    }
  }
  MPI_Allreduce(&mine, &job, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  /* AdamW's two floats per parameter, on every device of the job: each stage's once per replica, or (its
   * optimizer state sharded among its replicas) once. */
  unsigned long long state = 0, job_state = 0;
  for (size_t d = 0; d < divided.devices && b.trainer != NULL; ++d) {
    dpt_replica_memory mem = {.struct_size = sizeof mem};
    OK(dpt_trainer_replica_memory(b.trainer, d, &mem));
    state += mem.optimizer_state;
  }
  MPI_Allreduce(&state, &job_state, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  const size_t replicas = divided.devices * 2 / divided.stages;
  const unsigned long long want_state =
      2 * n * sizeof(float) * (divided.shard == DPT_SHARD_OPTIMIZER ? 1 : replicas);
  CHECK(job_state == want_state, "%s: %llu bytes of optimizer state in the job, expected %llu", what,
        job_state, want_state);
  const outcome got = train(b, model, 99);
  float *recomputed_got = recomputed(b, model);
  stop(b);
  if (m > 0)
    CHECK(recomputed_ref != NULL && recomputed_got != NULL &&
              memcmp(recomputed_got, recomputed_ref, m * sizeof(float)) == 0 &&
              memcmp(recomputed_got, got.buffers, m * sizeof(float)) != 0,
          "%s: the recomputed running statistics are not one process's bits (or did not change)", what);
  free(recomputed_ref), free(recomputed_got);
  int same_losses = 1;
  for (int s = 0; s < kSteps; ++s) same_losses &= got.losses[s] == ref.losses[s];
  CHECK(same_losses && got.eval_loss == ref.eval_loss,
        "%s: losses differ from one process's (step 1: %.9g vs %.9g; evaluation %.9g vs %.9g)", what,
        got.losses[0], ref.losses[0], got.eval_loss, ref.eval_loss);
  CHECK(memcmp(got.params, ref.params, n * sizeof(float)) == 0 && got.checksum == ref.checksum,
        "%s: the parameters are not one process's bits", what);
  CHECK(memcmp(got.buffers, ref.buffers, m * sizeof(float)) == 0, "%s: the running statistics differ", what);
  CHECK(memcmp(got.logits, ref.logits, kEval * kClasses * sizeof(float)) == 0, "%s: the logits differ", what);
  CHECK(same_on_every_process(got.params, n) && same_on_every_process(got.logits, kEval * kClasses),
        "%s: the processes differ", what);
  CHECK(memcmp(got.params, initial, n * sizeof(float)) != 0, "%s: the parameters did not move", what);
  CHECK(job == (n + divided.mirror_floats) * sizeof(float) && mine < job,
        "%s: the processes hold %llu bytes of parameters between them (this one %llu), the model %zu", what,
        job, mine, n * sizeof(float));
  if (rank == 0)
    printf("%s: one process's bits (loss %.6f -> %.6f, evaluation %.6f); %llu of %llu parameter bytes here\n",
           what, got.losses[0], got.losses[kSteps - 1], got.eval_loss, mine, job);
  release(ref), release(got);
  free(initial);
}

/* Checkpoints and safetensors of the divided pipeline are the one-process pipeline's files (unsharded, on
 * twice the devices); its checkpoint loads into the divided pipeline, which trains on to the same bits. */
static void check_files(const dpt_model *lenet, int rank, const char *dir, setup divided, const char *what) {
  char paths[4][512];
  const char *names[4] = {"alone.ckpt", "divided.ckpt", "alone.safetensors", "divided.safetensors"};
  for (int i = 0; i < 4; ++i) snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]);
  setup alone = divided;
  alone.devices = 2 * divided.devices;
  alone.communicator = DPT_COMMUNICATOR_LOCAL;
  alone.shard = DPT_SHARD_NONE;
  run a, b;
  OK(start(lenet, alone, &a));
  OK(start(lenet, divided, &b));
  release(train(a, lenet, 21));
  release(train(b, lenet, 21));
  if (rank == 0) OK(dpt_trainer_save(a.trainer, paths[0]));
  if (rank == 0) OK(dpt_trainer_save_safetensors(a.trainer, paths[2]));
  OK(dpt_trainer_save(b.trainer, paths[1]));             /* collective */
  OK(dpt_trainer_save_safetensors(b.trainer, paths[3])); /* collective */
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, paths[0], paths[1], what);
  check_same_file(rank, paths[2], paths[3], what);
  stop(a), stop(b);
  OK(start(lenet, alone, &a));
  OK(start(lenet, divided, &b));
  OK(dpt_trainer_load(a.trainer, paths[0]));
  OK(dpt_trainer_load(b.trainer, paths[0]));
  const outcome ra = train(a, lenet, 22), rb = train(b, lenet, 22);
  size_t n = 0;
  OK(dpt_model_parameter_count(lenet, &n));
  CHECK(memcmp(ra.params, rb.params, n * sizeof(float)) == 0,
        "%s, resumed from a checkpoint: not the one-process bits", what);
  release(ra), release(rb);
  stop(a), stop(b);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (int i = 0; i < 4; ++i) remove(paths[i]);
    printf("%s: the one-process checkpoint and safetensors; resumed: its bits\n", what);
  }
}

static void expect_refused(const dpt_model *model, setup s, const char *needle, const char *what) {
  run r;
  const dpt_status status = start(model, s, &r);
  const char *message = dpt_last_error_message();
  CHECK(status == DPT_ERROR_UNSUPPORTED && strstr(message, needle) != NULL,
        "%s: status %d (%s), expected DPT_ERROR_UNSUPPORTED naming \"%s\"", what, (int)status, message,
        needle);
  stop(r);
}

static void check_refusals(const dpt_model *lenet, int rank) {
  expect_refused(lenet, (setup){1, 3, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 0},
                 "the stage count of the processes per copy (2)", "3 stages over 2 processes");
  expect_refused(lenet, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 3},
                 "a multiple of the copies", "3 copies over 2 processes");
  expect_refused(lenet,
                 (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_GRADIENTS, 0, 0, 0},
                 "shards only the optimizer state", "sharded gradients");
  expect_refused(
      lenet,
      (setup){rank == 0 ? 1 : 2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 0},
      "same device count", "different device counts");
  if (rank == 0) printf("refused: 3 stages over 2 processes, 3 copies, sharded gradients, unequal devices\n");
}

/* A stage's wait for the process before it is idle, as its wait for a stage in its own process is, and not
 * communication: LeNet cut before its last layer, so that process 1's stage (one dense layer) spends the step
 * waiting for process 0's (every convolution) to send each micro-batch. Its device's idle time must exceed
 * both its compute and twice its communication (the transfers themselves: a few KB each). */
static void check_waits_are_idle(const dpt_model *lenet, int rank) {
  enum { kWaitBatch = 16 };
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = 1;
  run r;
  OK(dpt_context_create(&r.ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.communicator = DPT_COMMUNICATOR_MPI;
  to.timeout_seconds = 60;
  to.pipeline_stages = 2;
  to.micro_batches = 8;
  to.pipeline_cuts = "9";
  to.pipeline_scope = DPT_PIPELINE_SCOPE_WORLD;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  r.trainer = NULL;
  OK(dpt_trainer_create(&r.trainer, r.ctx, lenet, &to, &oo));
  static float x[kWaitBatch * kInput];
  int32_t y[kWaitBatch];
  dpt_replica_times t = {.struct_size = sizeof t};
  for (int s = 0; s < 3 && r.trainer != NULL; ++s) { /* the last step's times */
    batch(x, y, kWaitBatch);
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, kWaitBatch * kInput, y, kWaitBatch, &res));
    OK(dpt_trainer_replica_times(r.trainer, 0, &t));
  }
  if (rank == 1)
    CHECK(t.idle_seconds > t.compute_seconds && t.idle_seconds > 2 * t.communication_seconds,
          "the last stage waiting for the process before: idle %.3g s, compute %.3g s, communication %.3g s "
          "(its waits counted as communication?)",
          t.idle_seconds, t.compute_seconds, t.communication_seconds);
  if (rank == 1)
    printf(
        "the last stage's waits for the process before are idle: %.3g s idle, %.3g s compute, %.3g s "
        "communication\n",
        t.idle_seconds, t.compute_seconds, t.communication_seconds);
  stop(r);
}

/* Two copies of the whole pipeline (pipeline_copies 2: both processes hold both stages, each on half of
 * every batch), the optimizer state sharded over the copies (each process updates its parts): the norm
 * takes both copies' parts, so with clipping that bites the parameters are the unsharded run's bits (a norm
 * of this process's parts alone clipped differently until 2026-12-05). */
static void check_copies_sharded(const dpt_model *lenet, int rank) {
  float *params[2] = {NULL, NULL};
  double norm = 0;
  size_t n = 0;
  OK(dpt_model_parameter_count(lenet, &n));
  for (int shard = 0; shard < 2; ++shard) {
    run r;
    OK(start(lenet,
             (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0.05f,
                     shard ? DPT_SHARD_OPTIMIZER : DPT_SHARD_NONE, 0, shard, 2},
             &r));
    params[shard] = calloc(n, sizeof(float));
    static float x[12 * kInput];
    int32_t y[12];
    state = 3;
    for (int s = 0; s < 3 && r.trainer != NULL; ++s) {
      batch(x, y, 12);
      dpt_step_result res = {.struct_size = sizeof res};
      OK(dpt_trainer_step(r.trainer, x, 12 * kInput, y, 12, &res));
      norm = res.grad_norm;
    }
    if (r.trainer != NULL) OK(dpt_trainer_get_parameters(r.trainer, params[shard], n));
    stop(r);
  }
  CHECK(norm > 0.05 && memcmp(params[0], params[1], n * sizeof(float)) == 0,
        "2 copies of 2 stages, the optimizer sharded over the copies: not the unsharded bits (norm %.6g)",
        norm);
  if (rank == 0)
    printf("2 copies of 2 stages, the optimizer sharded over the copies, clipped: the unsharded bits\n");
  free(params[0]), free(params[1]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  dpt_model *lenet = NULL;
  OK(dpt_model_create_builtin(&lenet, "lenet"));
  compare(lenet, (setup){1, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0.5f, DPT_SHARD_NONE, 0, 0, 0},
          "LeNet, 2 stages x 1 replica, clipping", rank);
  compare(lenet, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_GPIPE, 0, DPT_SHARD_NONE, 0, 0, 0},
          "LeNet, 2 stages x 2 replicas, GPipe", rank);
  compare(lenet, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0.5f, DPT_SHARD_OPTIMIZER, 0, 0, 0},
          "LeNet, 2 stages x 2 replicas sharding each stage's optimizer state, clipping", rank);
  /* The world shard scope: one copy of each stage, so the same as the process scope. */
  compare(lenet, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_GPIPE, 0, DPT_SHARD_OPTIMIZER, 0, 1, 0},
          "LeNet, 2 stages x 2 replicas sharding each stage's optimizer state, --shard-scope world", rank);
  compare(lenet, (setup){2, 4, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 0},
          "LeNet, 4 stages x 1 replica (2 per process)", rank);
  dpt_model *norm = small_batch_norm_model();
  compare(norm, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 0},
          "batch norm, 2 stages x 2 replicas", rank);
  dpt_model_destroy(norm);
  /* The head tied to the first layer, the two in the two processes' stages: the mirror's gradient and the
   * source's values go between them. */
  dpt_model *tied = tied_head_model();
  compare(tied,
          (setup){1, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0.5f, DPT_SHARD_NONE, 10 * kInput, 0, 0},
          "a head tied across the processes, 2 stages x 1 replica, clipping", rank);
  compare(tied, (setup){2, 4, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_GPIPE, 0, DPT_SHARD_NONE, 10 * kInput, 0, 0},
          "a head tied across the processes, 4 stages x 1 replica (2 per process), GPipe", rank);
  compare(
      tied, (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_OPTIMIZER, 10 * kInput, 0, 0},
      "a head tied across the processes, 2 stages x 2 replicas sharding each stage's optimizer state", rank);
  dpt_model_destroy(tied);
  char dir[256];
  shared_temp_dir(rank, "dpt-pipeline-divided", dir, sizeof dir);
  check_files(lenet, rank, dir,
              (setup){1, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_NONE, 0, 0, 0},
              "the divided pipeline's files");
  check_files(lenet, rank, dir,
              (setup){2, 2, DPT_COMMUNICATOR_MPI, DPT_PIPELINE_1F1B, 0, DPT_SHARD_OPTIMIZER, 0, 0, 0},
              "the divided pipeline's files, its optimizer sharded among a stage's 2 replicas");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) rmdir(dir);
  check_refusals(lenet, rank);
  check_waits_are_idle(lenet, rank);
  check_copies_sharded(lenet, rank);
  dpt_model_destroy(lenet);
  return finish_processes(rank);
}
