/* Run by mpirun with 2 processes. Pipeline model parallel across processes: every process runs every stage
 * on its own devices (S stages x R replicas) on its share of each global batch, and the stages' gradients are
 * summed over the processes. LeNet, 2 stages, 3 micro-batches, AdamW, 4 steps of ragged global batches and
 * one of a single sample (one process then has nothing to pipeline), against one process on the full batches:
 *   - 2 processes x (2 stages x 1 replica), x (2 x 2), and (2 x 1) beside (2 x 2) (the shares follow the
 *     device counts): within the equivalence tolerance (relative error <= 1e-5) of one process of 2 x 2
 *     and of one process without pipeline on one device; every process holds the same bits;
 *   - evaluation across the processes gives the one-process loss (within 1e-5, relative); prediction gives
 *     every process every logit, the same bits on both;
 *   - a model with batch norm in both stages, 2 processes x (2 stages x 1 replica), 3 micro-batches: each
 *     micro-batch's statistics summed over the processes (each stage on an MPI channel of its own), so the
 *     step is that of 2 processes x 1 device without pipeline accumulating the same micro-batches (each the
 *     processes' micro-batches side by side, statistics summed across the processes): parameters and
 *     running statistics within 1e-5 (relative; measured: the same bits), the evaluation loss too, every
 *     process alike;
 *   - the optimizer state sharded among each process's replicas of a stage and among every process's (the
 *     world scope): the unsharded pipeline's bits, the state held once per process or once in the job; the
 *     world scope's checkpoint (collective) is the unsharded pipeline's file, which loads into it and trains
 *     on to the unsharded bits; a head tied across the stages, both scopes: the unsharded bits.
 * Exit status 0 only when every check passed on every process. */
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

enum { kInput = 28 * 28, kSteps = 5, kEval = 9 };

typedef struct {
  size_t devices, stages;
  dpt_communicator communicator;
  size_t accumulation; /* 0: 1 */
  dpt_shard_mode shard;
  dpt_shard_scope scope;
} setup;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

static dpt_status start(const dpt_model *model, setup s, run *r) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = s.devices;
  OK(dpt_context_create(&r->ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 3;
  to.communicator = s.communicator;
  to.timeout_seconds = 60;
  to.pipeline_stages = s.stages;
  to.micro_batches = s.stages > 1 ? 3 : 0;
  to.accumulation_steps = s.accumulation > 0 ? s.accumulation : 1;
  to.shard = s.shard;
  to.shard_scope = s.scope;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = DPT_OPTIMIZER_ADAMW;
  oo.learning_rate = 0.003f;
  r->trainer = NULL;
  return dpt_trainer_create(&r->trainer, r->ctx, model, &to, &oo);
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

/* The same global batches on every process (each process takes its share of each). */
static void batch(float *x, int32_t *y, size_t n) {
  for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
  for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * 10.0f) % 10;
}

/* Trains, then evaluates and predicts a fixed batch: the parameters (calloc'd), the evaluation's loss and the
 * logits (calloc'd). */
static float *train(run r, size_t n_params, double *eval_loss, float **logits) {
  static float x[13 * kInput];
  int32_t y[13];
  static const size_t sizes[kSteps] = {13, 7, 1, 13, 8};
  state = 99;
  for (int s = 0; s < kSteps && r.trainer != NULL; ++s) {
    batch(x, y, sizes[s]);
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, sizes[s] * kInput, y, sizes[s], &res));
  }
  float *p = calloc(n_params, sizeof(float));
  *logits = calloc(kEval * 10, sizeof(float));
  if (r.trainer == NULL) return p;
  OK(dpt_trainer_get_parameters(r.trainer, p, n_params));
  batch(x, y, kEval);
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(r.trainer, x, kEval * kInput, y, kEval, &e));
  *eval_loss = e.loss;
  OK(dpt_trainer_predict(r.trainer, x, kEval * kInput, kEval, *logits, kEval * 10));
  return p;
}

/* Batch norm: global batches of 12 rows; each process's share is 6, cut into 3 micro-batches of 2. The
 * pipeline gets the batches whole; the reference (accumulating 3 micro-batches on 1 device per process) gets
 * micro-batch m as process 0's 2 rows of it and process 1's, 4 rows, of which each process takes its 2. Then
 * both evaluate the same 9 samples. Returns the parameters and running statistics (calloc'd). */
enum { kNormBatch = 12, kMicro = 3, kNormSteps = 3 };
static void train_norm(run r, int pipelined, size_t n, size_t m, float **params, float **buffers,
                       double *eval_loss) {
  static float x[kNormBatch * kInput], part[kNormBatch / kMicro * kInput];
  int32_t y[kNormBatch], part_y[kNormBatch / kMicro];
  const size_t share = kNormBatch / 2, micro = share / kMicro;
  state = 7;
  for (int s = 0; s < kNormSteps; ++s) {
    batch(x, y, kNormBatch);
    dpt_step_result res = {.struct_size = sizeof res};
    if (pipelined) {
      OK(dpt_trainer_step(r.trainer, x, kNormBatch * kInput, y, kNormBatch, &res));
      continue;
    }
    for (size_t mb = 0; mb < kMicro; ++mb) {
      for (size_t p = 0; p < 2; ++p) {
        const size_t from = p * share + mb * micro;
        memcpy(part + p * micro * kInput, x + from * kInput, micro * kInput * sizeof(float));
        memcpy(part_y + p * micro, y + from, micro * sizeof(int32_t));
      }
      OK(dpt_trainer_step(r.trainer, part, 2 * micro * kInput, part_y, 2 * micro, &res));
    }
  }
  *params = calloc(n, sizeof(float));
  *buffers = calloc(m, sizeof(float));
  OK(dpt_trainer_get_parameters(r.trainer, *params, n));
  OK(dpt_trainer_get_buffers(r.trainer, *buffers, m));
  batch(x, y, kEval);
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(r.trainer, x, kEval * kInput, y, kEval, &e));
  *eval_loss = e.loss;
}

/* Two convolutions with batch norm: with 2 stages, each stage normalises (and sums its statistics across the
 * processes while the other stage does). */
static dpt_model *two_norm_model(void) {
  dpt_model *m = NULL;
  size_t a;
  OK(dpt_model_create(&m, 1, 28, 28));
  OK(dpt_model_conv2d(m, 0, 4, 3, 2, 1, 0, "conv1", &a));
  OK(dpt_model_batch_norm(m, a, 1e-5f, 0.1f, "bn1", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "relu1", &a));
  OK(dpt_model_conv2d(m, a, 8, 3, 2, 1, 0, "conv2", &a));
  OK(dpt_model_batch_norm(m, a, 1e-5f, 0.1f, "bn2", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "relu2", &a));
  OK(dpt_model_global_avg_pool(m, a, "pool", &a));
  OK(dpt_model_dense(m, a, 10, 1, "fc", &a));
  return m;
}

/* The bytes of optimizer state on every device of every process. */
static unsigned long long job_state_bytes(run r, size_t devices) {
  unsigned long long mine = 0, total = 0;
  for (size_t d = 0; d < devices; ++d) {
    dpt_replica_memory m = {.struct_size = sizeof m};
    OK(dpt_trainer_replica_memory(r.trainer, d, &m));
    mine += m.optimizer_state;
  }
  MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

/* The optimizer state sharded among the replicas of a stage across 2 processes: among each process's own
 * (the process scope) in 2 processes x (2 stages x 2) and in 2 x 1 beside 2 x 2 (a process of one replica
 * per stage shards nothing); among every process's (the world scope) in those two and in 2 x (2 x 1), where
 * a stage's only replica in each process keeps half of its state. Each gives the unsharded pipeline's bits;
 * AdamW's two floats per parameter are held once per process (process scope) or once in the job (world). */
static void check_sharded(const dpt_model *lenet, size_t n, int rank) {
  static const size_t devices[3][2] = {{4, 4}, {2, 4}, {2, 2}};
  static const char *what[3] = {"2 x (2 x 2)", "(2 x 1) + (2 x 2)", "2 x (2 x 1)"};
  const unsigned long long state = 2ull * n * sizeof(float);
  for (int c = 0; c < 3; ++c) {
    const size_t mine = devices[c][rank];
    run r;
    double loss = 0;
    float *logits = NULL;
    OK(start(lenet, (setup){mine, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
    float *plain = train(r, n, &loss, &logits);
    stop(r);
    for (int world = c == 2; world < 2; ++world) {
      double loss_sharded = 0;
      float *logits_sharded = NULL;
      const dpt_shard_scope scope = world ? DPT_SHARD_SCOPE_WORLD : DPT_SHARD_SCOPE_PROCESS;
      OK(start(lenet, (setup){mine, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_OPTIMIZER, scope}, &r));
      float *sharded = train(r, n, &loss_sharded, &logits_sharded);
      const unsigned long long held = r.trainer != NULL ? job_state_bytes(r, mine) : 0;
      stop(r);
      CHECK(memcmp(plain, sharded, n * sizeof(float)) == 0 && loss == loss_sharded &&
                memcmp(logits, logits_sharded, kEval * 10 * sizeof(float)) == 0 &&
                same_on_every_process(sharded, n),
            "a sharded optimizer in the pipeline across processes (%s, %s scope): not the unsharded bits",
            what[c], world ? "world" : "process");
      CHECK(held == (world ? state : 2 * state),
            "%s, %s scope: %llu bytes of AdamW state in the job, expected %llu", what[c],
            world ? "world" : "process", held, world ? state : 2 * state);
      free(sharded), free(logits_sharded);
    }
    free(plain), free(logits);
  }
  if (rank == 0)
    printf(
        "a sharded optimizer in the pipeline across processes, process and world scopes: the unsharded "
        "bits; the world scope holds the state once in the job (%llu bytes)\n",
        state);
}

/* A parameter tied across the stages (a head tied to the first stage's layer: the second stage keeps a
 * mirror of it, whose gradient is summed over the processes beside the stage's reduce-scatter) with the
 * optimizer state sharded across the processes: 2 processes x (2 stages x 1) and x (2 x 2) (the balanced cut
 * puts the head in the second stage), 4 steps of 8 samples: the unsharded pipeline's parameters, bit for
 * bit, on both processes. The same with the state sharded within each process (the process scope, 2 x
 * (2 x 2): the parts summed over the processes in place, the mirror from the stage's first replica). */
enum { kTiedWidth = 256, kTiedBatch = 8 };
static void check_world_tied(int rank) {
  dpt_model *m = NULL;
  size_t t = 0, n = 0;
  OK(dpt_model_create(&m, 1, 1, kTiedWidth));
  OK(dpt_model_dense(m, 0, kTiedWidth, 1, "a", &t));
  OK(dpt_model_activation(m, t, DPT_ACTIVATION_RELU, "relu_a", &t));
  OK(dpt_model_dense(m, t, kTiedWidth, 1, "b", &t));
  OK(dpt_model_activation(m, t, DPT_ACTIVATION_RELU, "relu_b", &t));
  OK(dpt_model_dense(m, t, kTiedWidth, 0, "head", &t));
  OK(dpt_model_tie(m, "head.weight", "a.weight"));
  OK(dpt_model_parameter_count(m, &n));
  for (size_t devices = 2; devices <= 6; devices += 2) {
    /* 6: 4 devices, the process scope */
    const dpt_shard_scope scope = devices == 6 ? DPT_SHARD_SCOPE_PROCESS : DPT_SHARD_SCOPE_WORLD;
    float *p[2] = {NULL, NULL};
    for (int sharded = 0; sharded < 2; ++sharded) {
      run r;
      OK(start(m,
               (setup){devices == 6 ? 4 : devices, 2, DPT_COMMUNICATOR_MPI, 0,
                       sharded ? DPT_SHARD_OPTIMIZER : DPT_SHARD_NONE, scope},
               &r));
      static float x[kTiedBatch * kTiedWidth];
      int32_t y[kTiedBatch];
      state = 11;
      for (int step = 0; step < 4 && r.trainer != NULL; ++step) {
        for (size_t i = 0; i < kTiedBatch * kTiedWidth; ++i) x[i] = next_unit() - 0.5f;
        for (size_t i = 0; i < kTiedBatch; ++i) y[i] = (int32_t)(next_unit() * kTiedWidth) % kTiedWidth;
        dpt_step_result res = {.struct_size = sizeof res};
        OK(dpt_trainer_step(r.trainer, x, kTiedBatch * kTiedWidth, y, kTiedBatch, &res));
      }
      p[sharded] = calloc(n, sizeof(float));
      if (r.trainer != NULL) OK(dpt_trainer_get_parameters(r.trainer, p[sharded], n));
      stop(r);
    }
    CHECK(memcmp(p[0], p[1], n * sizeof(float)) == 0 && same_on_every_process(p[1], n),
          "a head tied across the stages, optimizer sharded (%s scope, %zu devices each): not the "
          "unsharded bits",
          scope == DPT_SHARD_SCOPE_PROCESS ? "process" : "world", devices == 6 ? 4 : devices);
    free(p[0]), free(p[1]);
  }
  if (rank == 0)
    printf("a head tied across the stages, optimizer sharded across the processes: the unsharded bits\n");
  dpt_model_destroy(m);
}

/* A checkpoint of a pipeline whose optimizer state is sharded in the world scope (2 processes x (2 stages x
 * 2)): dpt_trainer_save is collective and process 0 writes the unsharded pipeline's bytes; the unsharded
 * checkpoint loads into the sharded trainer, which saves it back unchanged and trains on from it to the
 * unsharded trainer's bits. */
static void check_world_checkpoint(const dpt_model *lenet, size_t n, int rank, const char *dir) {
  char plain_path[512], sharded_path[512], again_path[512];
  snprintf(plain_path, sizeof plain_path, "%s/plain.ckpt", dir);
  snprintf(sharded_path, sizeof sharded_path, "%s/sharded.ckpt", dir);
  snprintf(again_path, sizeof again_path, "%s/again.ckpt", dir);
  const setup plain = {4, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS};
  const setup sharded = {4, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD};
  run a, b;
  double loss = 0;
  float *logits = NULL;
  OK(start(lenet, plain, &a));
  OK(start(lenet, sharded, &b));
  free(train(a, n, &loss, &logits)), free(logits);
  free(train(b, n, &loss, &logits)), free(logits);
  if (rank == 0) OK(dpt_trainer_save(a.trainer, plain_path));
  OK(dpt_trainer_save(b.trainer, sharded_path)); /* collective */
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, plain_path, sharded_path, "a checkpoint of the pipeline sharded across processes");
  stop(a), stop(b);
  OK(start(lenet, sharded, &b));
  OK(dpt_trainer_load(b.trainer, plain_path));
  OK(dpt_trainer_save(b.trainer, again_path));
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, plain_path, again_path, "loaded into the pipeline sharded across processes, saved");
  stop(b);
  OK(start(lenet, plain, &a));
  OK(start(lenet, sharded, &b));
  OK(dpt_trainer_load(a.trainer, plain_path));
  OK(dpt_trainer_load(b.trainer, plain_path));
  float *pa = train(a, n, &loss, &logits);
  free(logits);
  float *pb = train(b, n, &loss, &logits);
  free(logits);
  CHECK(memcmp(pa, pb, n * sizeof(float)) == 0,
        "the pipeline sharded across processes, resumed from a checkpoint: not the unsharded bits");
  free(pa), free(pb);
  stop(a), stop(b);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    remove(plain_path), remove(sharded_path), remove(again_path), rmdir(dir);
    printf("a checkpoint of the pipeline sharded across processes: the unsharded pipeline's bytes\n");
  }
}

static void check_batch_norm(int rank) {
  dpt_model *norm = two_norm_model();
  size_t n = 0, m = 0;
  OK(dpt_model_parameter_count(norm, &n));
  OK(dpt_model_buffer_count(norm, &m));
  run r;
  float *p_ref, *b_ref, *p, *b;
  double loss_ref = 0, loss = 0;
  OK(start(norm, (setup){1, 1, DPT_COMMUNICATOR_MPI, kMicro, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
  float *initial = calloc(n, sizeof(float));
  OK(dpt_trainer_get_parameters(r.trainer, initial, n));
  train_norm(r, 0, n, m, &p_ref, &b_ref, &loss_ref);
  stop(r);
  OK(start(norm, (setup){2, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
  train_norm(r, 1, n, m, &p, &b, &loss);
  stop(r);
  const double e = tu_relative_error(p, p_ref, initial, n);
  float *no_buffers = calloc(m, sizeof(float));
  const double e_buffers = tu_relative_error(b, b_ref, no_buffers, m);
  CHECK(e <= 1e-5 && e_buffers <= 1e-5,
        "batch norm, pipeline across 2 processes: relative error %g (running statistics %g) vs accumulating "
        "on 1 device per process",
        e, e_buffers);
  CHECK(fabs(loss - loss_ref) <= 1e-5 * fabs(loss_ref), "batch norm: evaluation loss %.9g, reference %.9g",
        loss, loss_ref);
  CHECK(same_on_every_process(p, n) && same_on_every_process(b, m),
        "batch norm, pipeline across 2 processes: the processes differ");
  if (rank == 0)
    printf(
        "batch norm, pipeline across 2 processes x (2 stages x 1): relative error %.3g, running statistics "
        "%.3g vs 2 processes x 1 device accumulating the micro-batches; evaluation loss %.9g (%.9g)\n",
        e, e_buffers, loss, loss_ref);
  free(p_ref), free(b_ref), free(p), free(b), free(initial), free(no_buffers);
  dpt_model_destroy(norm);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  dpt_model *lenet = NULL;
  OK(dpt_model_create_builtin(&lenet, "lenet"));
  size_t n = 0;
  OK(dpt_model_parameter_count(lenet, &n));

  /* The references, in one process: the pipeline on 2 x 2 devices, and one device without pipeline. */
  run r;
  double loss_pipeline = 0, loss_one = 0, loss = 0;
  float *logits_pipeline = NULL, *logits_one = NULL, *logits = NULL;
  OK(start(lenet, (setup){4, 2, DPT_COMMUNICATOR_LOCAL, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
  float *pipeline = train(r, n, &loss_pipeline, &logits_pipeline);
  stop(r);
  OK(start(lenet, (setup){1, 1, DPT_COMMUNICATOR_LOCAL, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
  float *one = train(r, n, &loss_one, &logits_one);
  stop(r);
  OK(start(lenet, (setup){1, 1, DPT_COMMUNICATOR_LOCAL, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS},
           &r)); /* the starting point: no step taken */
  float *initial = calloc(n, sizeof(float));
  OK(dpt_trainer_get_parameters(r.trainer, initial, n));
  stop(r);

  /* 2 x 1 and 2 x 2 replicas per stage in both processes; 2 x 1 in process 0 beside 2 x 2 in process 1
   * (devices 0: the shares follow the device counts, a third and two thirds). */
  const size_t devices[3] = {2, 4, 0};
  const char *what[3] = {"2 processes x (2 stages x 1)", "2 processes x (2 stages x 2)",
                         "(2 stages x 1) + (2 stages x 2)"};
  for (int c = 0; c < 3; ++c) {
    const size_t mine = devices[c] > 0 ? devices[c] : rank == 0 ? 2 : 4;
    OK(start(lenet, (setup){mine, 2, DPT_COMMUNICATOR_MPI, 0, DPT_SHARD_NONE, DPT_SHARD_SCOPE_PROCESS}, &r));
    float *p = train(r, n, &loss, &logits);
    stop(r);
    const double e_pipeline = tu_relative_error(p, pipeline, initial, n);
    const double e_one = tu_relative_error(p, one, initial, n);
    CHECK(e_pipeline <= 1e-5 && e_one <= 1e-5, "%s: relative error %g vs 1 process x (2 x 2), %g vs 1 device",
          what[c], e_pipeline, e_one);
    CHECK(same_on_every_process(p, n), "%s: the processes differ", what[c]);
    CHECK(fabs(loss - loss_one) <= 1e-5 * fabs(loss_one), "%s: evaluation loss %.9g, one device %.9g",
          what[c], loss, loss_one);
    CHECK(same_on_every_process(logits, kEval * 10), "%s: the logits differ", what[c]);
    if (rank == 0)
      printf(
          "pipeline across %s: relative error %.3g vs 1 process, %.3g vs 1 device; evaluation loss %.9g "
          "(one device %.9g)\n",
          what[c], e_pipeline, e_one, loss, loss_one);
    free(p), free(logits);
  }

  check_batch_norm(rank);
  check_sharded(lenet, n, rank);
  check_world_tied(rank);
  char dir[256];
  shared_temp_dir(rank, "dpt-pipeline-world", dir, sizeof dir);
  check_world_checkpoint(lenet, n, rank, dir);

  free(pipeline), free(one), free(initial), free(logits_pipeline), free(logits_one);
  dpt_model_destroy(lenet);
  return finish_processes(rank);
}
