/* Run by mpirun with 2 processes. The application initializes MPI itself (dptrain must then use that MPI,
 * not start its own). A trainer over both processes, 2 CPU devices each, with the MPI communicator takes
 * 6 steps (SGD with momentum, ragged global batches of 13 and 7 samples). Then:
 *   - the same trainer with gradient buckets of single layers (each bucket all-reduced across processes
 *     during backward) ends with the very same bits (2 processes: every sum has two terms);
 *   - every process holds bitwise the same parameters (compared with MPI_Allreduce MIN/MAX);
 *   - they equal, within the equivalence tolerance (relative error <= 1e-5, as test_equivalence), a
 *     1-process trainer over 4 devices and a 1-device trainer on the full batches;
 *   - the global evaluation equals the 4-device one.
 * The same for a residual model with batch norm (sync statistics summed over both processes in the middle of
 * forward and backward): 2 x 2 against 1 x 4 and 1 x 1, and the running statistics bitwise the same on
 * both processes; with a bucket per layer (each all-reduced across the processes by a communication thread
 * on its own MPI channel while the device threads sum the statistics on the main one) the same bits.
 * With a 16-bit gradient all-reduce (bf16 and fp16 wires: 16-bit values across the processes, an all-to-all
 * and an all-gather): the processes bitwise identical, buckets bitwise no buckets, and within the wire's
 * rounding of 1 device.
 * Sharded gradients and parameters across the processes (each process shards among its own devices, the
 * ranges summed over the processes in the update): the unsharded bits with one bucket and with a bucket per
 * layer, with batch norm, with a bf16 wire; with accumulation within the equivalence tolerance of unsharded
 * accumulation; a sharded optimizer (each device's range all-reduced over the processes) the unsharded bits
 * with one bucket and a bucket per layer, accumulation and a bf16 wire; processes of 2 and 3 devices (ranges
 * cut differently) the unsharded bits of 2 + 3 devices; a process of 1 device beside one of 2 (it shards
 * nothing, but sums by the other's pieces) the unsharded bits of 1 + 2 devices, within the tolerance with
 * accumulation. Prints one line per process; exit status 0 only when every check passed on this process. */
#include <dptrain/dptrain.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../capi/relative_error.h"
#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kSteps = 6 };

/* The same batches on every process: a fixed generator, reset before each trainer. */
static void make_batch(size_t n, float *x, int32_t *y) {
  for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
  for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * 10.0f) % 10;
}

/* Trains kSteps steps on `devices` CPU devices; returns the parameters (malloc'd) and the evaluation loss
 * of one more batch. */
static float *last_buffers = NULL;              /* the running statistics of the last train() (malloc'd) */
static dpt_precision wire = DPT_PRECISION_FP32; /* what train()'s all-reduce sends */
static dpt_precision precision = DPT_PRECISION_FP32; /* train()'s matrix products */
static dpt_shard_mode shard = DPT_SHARD_NONE;        /* train()'s sharding */
static size_t accumulation = 1;                      /* train()'s micro-batches per optimizer step */
static int recompute = 0; /* train() recomputes batch norm's running statistics after its steps */
static size_t last_buffer_count = 0;

static float *train(size_t devices, dpt_communicator communicator, size_t bucket_bytes,
                    const dpt_model *model, size_t *count, double *eval_loss) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = devices;
  dpt_context *ctx = NULL;
  OK(dpt_context_create(&ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 7;
  to.communicator = communicator;
  to.timeout_seconds = 60;
  to.bucket_bytes = bucket_bytes;
  to.allreduce_dtype = wire;
  to.precision = precision;
  to.shard = shard;
  to.accumulation_steps = accumulation;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.learning_rate = 0.05f;
  oo.momentum = 0.9f;
  dpt_trainer *t = NULL;
  OK(dpt_trainer_create(&t, ctx, model, &to, &oo));
  float x[13 * kInput];
  int32_t y[13];
  state = 12345;
  for (int s = 0; s < kSteps; ++s) {
    const size_t n = s % 2 == 0 ? 13 : 7;
    make_batch(n, x, y);
    dpt_step_result r = {.struct_size = sizeof r};
    OK(dpt_trainer_step(t, x, n * kInput, y, n, &r));
    const int applies = (size_t)(s + 1) % accumulation == 0;
    CHECK(r.applied == applies && r.samples == n, "step %d: applied %d samples %llu", s, r.applied,
          (unsigned long long)r.samples);
  }
  if (recompute) { /* over 29 samples in batches of 10, 10 and 9 (every process passes all of them) */
    float rx[29 * kInput];
    int32_t ry[29];
    make_batch(29, rx, ry);
    dpt_dataset *d = NULL;
    OK(dpt_dataset_create(&d, rx, 29 * kInput, ry, 29, 1, 28, 28, 10));
    OK(dpt_trainer_recompute_batch_norm(t, d, 10, 0));
    dpt_dataset_destroy(d);
  }
  make_batch(13, x, y);
  dpt_eval_result e = {.struct_size = sizeof e};
  OK(dpt_trainer_evaluate(t, x, 13 * kInput, y, 13, &e));
  *eval_loss = e.loss;
  OK(dpt_trainer_parameter_count(t, count));
  float *params = malloc(*count * sizeof(float));
  OK(dpt_trainer_get_parameters(t, params, *count));
  free(last_buffers);
  OK(dpt_model_buffer_count(model, &last_buffer_count));
  last_buffers = malloc((last_buffer_count + 1) * sizeof(float));
  if (last_buffer_count != 0) OK(dpt_trainer_get_buffers(t, last_buffers, last_buffer_count));
  dpt_trainer_destroy(t);
  dpt_context_destroy(ctx);
  return params;
}

/* A token model (token_embedding -> linear: a target at each of 4 positions, every third target ignored)
 * fit for one epoch: 2 processes of 1 device equal 1 process of 2 devices bit for bit. Each process of a fit
 * fills only its own share of a batch's labels, so the loss is divided by the counted targets of every
 * process's share, summed across the processes (not by a count over the whole, partly stale, batch). */
static float *fit_tokens(dpt_communicator communicator, size_t devices, size_t *count) {
  enum { T = 4, V = 7, N = 40 };
  int32_t tokens[N * T], targets[N * T];
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = devices;
  dpt_context *ctx = NULL;
  OK(dpt_context_create(&ctx, &co));
  dpt_model *m = NULL;
  size_t x = 0;
  OK(dpt_model_create_tokens(&m, T));
  OK(dpt_model_token_embedding(m, 0, V, 5, "wte", &x));
  OK(dpt_model_linear(m, x, V, 1, "head", &x));
  state = 777;
  for (size_t i = 0; i < N * T; ++i) tokens[i] = (int32_t)(next_unit() * V) % V;
  for (size_t i = 0; i < N * T; ++i)
    targets[i] = i % 3 == 1 ? DPT_IGNORE_LABEL : (int32_t)(next_unit() * V) % V;
  dpt_dataset *d = NULL;
  OK(dpt_dataset_create_tokens(&d, tokens, N * T, targets, N * T, N, T, V));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 3;
  to.communicator = communicator;
  to.timeout_seconds = 60;
  dpt_trainer *t = NULL;
  OK(dpt_trainer_create(&t, ctx, m, &to, NULL));
  dpt_fit_options fo;
  dpt_fit_options_init(&fo);
  fo.batch_size = 9; /* ragged: 5 batches of 9, the last of 4 */
  dpt_fit_result r = {.struct_size = sizeof r};
  OK(dpt_trainer_fit(t, d, NULL, &fo, &r));
  OK(dpt_trainer_parameter_count(t, count));
  float *params = malloc(*count * sizeof(float));
  OK(dpt_trainer_get_parameters(t, params, *count));
  dpt_trainer_destroy(t);
  dpt_dataset_destroy(d);
  dpt_model_destroy(m);
  dpt_context_destroy(ctx);
  return params;
}

static void check_token_fit(void) {
  size_t n = 0, n_local = 0;
  float *world = fit_tokens(DPT_COMMUNICATOR_MPI, 1, &n);
  float *local = fit_tokens(DPT_COMMUNICATOR_LOCAL, 2, &n_local);
  CHECK(n == n_local && memcmp(world, local, n * sizeof(float)) == 0,
        "token model with ignored targets: 2 processes x 1 device differ from 1 process x 2 devices");
  free(world), free(local);
}

/* conv (no bias) -> batch norm -> relu -> conv -> batch norm, + the first relu's output, relu, global
 * average pooling, dense 10. */
static dpt_model *batch_norm_model(void) {
  dpt_model *m = NULL;
  size_t a, b, c;
  OK(dpt_model_create(&m, 1, 28, 28));
  OK(dpt_model_conv2d(m, 0, 6, 3, 2, 1, 0, "conv1", &a));
  OK(dpt_model_batch_norm(m, a, 1e-5f, 0.1f, "bn1", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "relu1", &a));
  OK(dpt_model_conv2d(m, a, 6, 3, 1, 1, 0, "conv2", &b));
  OK(dpt_model_batch_norm(m, b, 1e-5f, 0.1f, "bn2", &b));
  OK(dpt_model_add(m, a, b, "add", &c));
  OK(dpt_model_activation(m, c, DPT_ACTIVATION_RELU, "relu2", &c));
  OK(dpt_model_global_avg_pool(m, c, "pool", &c));
  OK(dpt_model_dense(m, c, 10, 1, "fc", &c));
  return m;
}

static void check_batch_norm(void) {
  dpt_model *model = batch_norm_model();
  size_t n = 0;
  double loss_world = 0, loss_local = 0, loss_single = 0;
  float *world = train(2, DPT_COMMUNICATOR_MPI, 0, model, &n, &loss_world);
  float *world_buffers = last_buffers;
  const size_t buffer_count = last_buffer_count;
  last_buffers = NULL;
  CHECK(same_on_every_process(world_buffers, buffer_count),
        "batch norm: the processes hold different running statistics");
  /* Buckets overlapped with backward: the statistics' sums and the buckets' never meet in MPI. */
  double loss_bucketed = 0;
  float *bucketed = train(2, DPT_COMMUNICATOR_MPI, 1, model, &n, &loss_bucketed);
  CHECK(memcmp(bucketed, world, n * sizeof(float)) == 0 && loss_bucketed == loss_world &&
            memcmp(last_buffers, world_buffers, buffer_count * sizeof(float)) == 0,
        "batch norm: a bucket per layer across processes changed the parameters or running statistics");
  free(bucketed);
  /* Sharded gradients across the processes: the sums of batch norm's statistics (device threads) and the
   * buckets' reduce-scatters (communication threads, within each process) never meet in MPI. */
  shard = DPT_SHARD_GRADIENTS;
  double loss_sharded = 0;
  float *sharded = train(2, DPT_COMMUNICATOR_MPI, 1, model, &n, &loss_sharded);
  shard = DPT_SHARD_NONE;
  CHECK(memcmp(sharded, world, n * sizeof(float)) == 0 && loss_sharded == loss_world &&
            memcmp(last_buffers, world_buffers, buffer_count * sizeof(float)) == 0,
        "batch norm: sharded gradients across processes changed the parameters or running statistics");
  free(sharded);
  float *four = train(4, DPT_COMMUNICATOR_LOCAL, 0, model, &n, &loss_local);
  float *one = train(1, DPT_COMMUNICATOR_LOCAL, 0, model, &n, &loss_single);
  float *one_buffers = last_buffers;
  last_buffers = NULL;
  /* The starting point of the parameters: a trainer that took no step. */
  dpt_context *ctx = NULL;
  dpt_trainer *t0 = NULL;
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 7;
  OK(dpt_context_create(&ctx, NULL));
  OK(dpt_trainer_create(&t0, ctx, model, &to, NULL));
  float *start = malloc(n * sizeof(float)), *start_buffers = malloc(buffer_count * sizeof(float));
  OK(dpt_trainer_get_parameters(t0, start, n));
  OK(dpt_trainer_get_buffers(t0, start_buffers, buffer_count));
  const double e4 = tu_relative_error(world, four, start, n), e1 = tu_relative_error(world, one, start, n);
  const double eb = tu_relative_error(world_buffers, one_buffers, start_buffers, buffer_count);
  CHECK(e4 <= 1e-5, "batch norm, 2 processes x 2 devices vs 1 x 4: relative error %g", e4);
  CHECK(e1 <= 1e-5, "batch norm, 2 processes x 2 devices vs 1 device: relative error %g", e1);
  CHECK(eb <= 1e-5, "batch norm running statistics, 2 x 2 vs 1 device: relative error %g", eb);
  printf("batch norm: relative error vs 1x4 %.3g, vs 1x1 %.3g, running statistics %.3g\n", e4, e1, eb);
  /* Recomputed running statistics (dpt_trainer_recompute_batch_norm, collective): each batch's statistics
   * summed over both processes' devices, so 2 x 2 give the 1-device statistics, the same on every process,
   * and not the trained ones. */
  recompute = 1;
  double unused = 0;
  free(train(2, DPT_COMMUNICATOR_MPI, 0, model, &n, &unused));
  float *recomputed_world = last_buffers;
  last_buffers = NULL;
  free(train(1, DPT_COMMUNICATOR_LOCAL, 0, model, &n, &unused));
  recompute = 0;
  CHECK(same_on_every_process(recomputed_world, buffer_count),
        "recomputed batch norm: the processes hold different running statistics");
  const double er = tu_relative_error(recomputed_world, last_buffers, start_buffers, buffer_count);
  CHECK(er <= 1e-5, "recomputed running statistics, 2 x 2 vs 1 device: relative error %g", er);
  CHECK(memcmp(recomputed_world, world_buffers, buffer_count * sizeof(float)) != 0,
        "recomputing left the running statistics as they were");
  printf("batch norm: recomputed running statistics, 2 x 2 vs 1 device: relative error %.3g\n", er);
  free(recomputed_world);
  dpt_trainer_destroy(t0);
  dpt_context_destroy(ctx);
  dpt_model_destroy(model);
  free(world), free(world_buffers), free(four), free(one), free(one_buffers), free(start),
      free(start_buffers);
}

/* bf16 and fp16 wires on 2 processes x 2 devices against 1 device (no communication) after kSteps SGD
 * steps: each step's gradient carries the rounding of each contribution and of the sums (u = 2^-8 for bf16,
 * 2^-11 for fp16, relative); momentum carries it on, so the bound is kSteps x 2u. The fp16 wire runs with
 * fp16 precision (and its 1-device reference too): float16's range needs the loss scaler's lift, or the
 * smaller gradients fall among its subnormals (measured here without it: 2.3e-2, above the bound). */
static void check_16_bit_wire(const dpt_model *model, const float *one_fp32, const float *start, size_t n) {
  const dpt_precision wires[] = {DPT_PRECISION_BF16, DPT_PRECISION_FP16};
  for (int w = 0; w < 2; ++w) {
    const char *name = w == 0 ? "bf16" : "fp16";
    const double u = w == 0 ? 1.0 / 256 : 1.0 / 2048;
    double loss = 0;
    size_t count = 0;
    precision = w == 0 ? DPT_PRECISION_FP32 : DPT_PRECISION_FP16;
    float *one_fp16 = w == 0 ? NULL : train(1, DPT_COMMUNICATOR_LOCAL, 0, model, &count, &loss);
    const float *one = w == 0 ? one_fp32 : one_fp16;
    wire = wires[w];
    float *whole = train(2, DPT_COMMUNICATOR_MPI, 0, model, &count, &loss);
    float *bucketed = train(2, DPT_COMMUNICATOR_MPI, 1, model, &count, &loss);
    wire = DPT_PRECISION_FP32;
    precision = DPT_PRECISION_FP32;
    CHECK(memcmp(whole, bucketed, n * sizeof(float)) == 0, "%s wire: buckets changed the parameters", name);
    CHECK(same_on_every_process(whole, n), "%s wire: the processes hold different parameters", name);
    const double e = tu_relative_error(whole, one, start, n), bound = kSteps * 2 * u;
    CHECK(e <= bound && e > 1e-5, "%s wire, 2 x 2 vs 1 device: relative error %g (bound %g)", name, e, bound);
    printf("%s wire: 2 processes x 2 devices vs 1 device: relative error %.3g (bound %.3g)\n", name, e,
           bound);
    free(whole), free(bucketed), free(one_fp16);
  }
}

/* Sharded optimizer, gradients and parameters across 2 processes x 2 devices (hybrid sharding: each process
 * shards among its devices; the optimizer's gradient reduce-scattered within the process and each device's
 * range all-reduced over the processes, the sharded gradients' ranges summed over the processes in the
 * update). world: the unsharded trainer's parameters (no buckets). With two processes every sum across them
 * has two terms, so the bits are those of the unsharded trainer; with accumulation each micro-batch of
 * sharded gradients is summed over a process's devices before the micro-batches are added (one more
 * rounding per micro-batch, as in one process), while the sharded optimizer sums the window once. */
static void check_sharded(const dpt_model *model, const float *world, const float *start, size_t n,
                          int mpi_rank) {
  const dpt_shard_mode modes[] = {DPT_SHARD_OPTIMIZER, DPT_SHARD_GRADIENTS, DPT_SHARD_PARAMETERS};
  const char *names[] = {"optimizer", "gradients", "parameters"};
  size_t count = 0;
  double loss = 0;
  for (int m = 0; m < 3; ++m)
    for (size_t bucket_bytes = 0; bucket_bytes < 2; ++bucket_bytes) { /* one bucket; one per layer */
      shard = modes[m];
      float *p = train(2, DPT_COMMUNICATOR_MPI, bucket_bytes, model, &count, &loss);
      shard = DPT_SHARD_NONE;
      CHECK(count == n && memcmp(p, world, n * sizeof(float)) == 0,
            "shard %s across processes (%s): not the unsharded bits", names[m],
            bucket_bytes == 0 ? "one bucket" : "a bucket per layer");
      free(p);
    }
  accumulation = 2;
  float *plain = train(2, DPT_COMMUNICATOR_MPI, 0, model, &count, &loss);
  shard = DPT_SHARD_GRADIENTS;
  float *sharded = train(2, DPT_COMMUNICATOR_MPI, 1, model, &count, &loss);
  shard = DPT_SHARD_NONE;
  accumulation = 1;
  const double e = tu_relative_error(sharded, plain, start, n);
  CHECK(e <= 1e-5 && same_on_every_process(sharded, n),
        "shard gradients, accumulation, across processes: relative error %g vs unsharded, or they differ", e);
  printf("sharded gradients across processes, accumulation 2: relative error vs unsharded %.3g\n", e);
  free(sharded);
  shard = DPT_SHARD_OPTIMIZER;
  accumulation = 2;
  sharded = train(2, DPT_COMMUNICATOR_MPI, 1, model, &count, &loss);
  shard = DPT_SHARD_NONE;
  accumulation = 1;
  CHECK(memcmp(plain, sharded, n * sizeof(float)) == 0,
        "shard optimizer, accumulation, across processes: not the unsharded bits");
  free(plain), free(sharded);
  for (int m = 0; m < 2; ++m) { /* optimizer, gradients */
    wire = DPT_PRECISION_BF16;
    plain = train(2, DPT_COMMUNICATOR_MPI, 0, model, &count, &loss);
    shard = modes[m];
    sharded = train(2, DPT_COMMUNICATOR_MPI, 1, model, &count, &loss);
    shard = DPT_SHARD_NONE;
    wire = DPT_PRECISION_FP32;
    CHECK(memcmp(plain, sharded, n * sizeof(float)) == 0,
          "shard %s across processes, bf16 wire: not the unsharded bits", names[m]);
    free(plain), free(sharded);
  }
  /* 2 devices here, 3 there: the ranges are cut differently, and summed over the processes by the pieces
   * between every process's cuts. Two terms per sum again: the unsharded bits of 2 + 3 devices. 1 device
   * here, 2 there: the process of one device shards nothing but sums by the other's pieces (its bucket
   * staged and copied into its whole gradient), the unsharded bits of 1 + 2 devices, also with
   * accumulation's micro-batches added into it (checked against the unsharded 1 + 2 run's tolerance). */
  const size_t device_counts[2][2] = {{2, 3}, {1, 2}};
  for (int u = 0; u < 2; ++u) {
    const size_t devices = device_counts[u][mpi_rank == 0 ? 0 : 1];
    float *uneven = train(devices, DPT_COMMUNICATOR_MPI, 0, model, &count, &loss);
    for (int m = 0; m < 3; ++m)
      for (size_t bucket_bytes = 0; bucket_bytes < 2; ++bucket_bytes) {
        shard = modes[m];
        float *p = train(devices, DPT_COMMUNICATOR_MPI, bucket_bytes, model, &count, &loss);
        shard = DPT_SHARD_NONE;
        CHECK(count == n && memcmp(p, uneven, n * sizeof(float)) == 0 && same_on_every_process(p, n),
              "shard %s across processes of %zu and %zu devices (%s): not the unsharded bits", names[m],
              device_counts[u][0], device_counts[u][1],
              bucket_bytes == 0 ? "one bucket" : "a bucket per layer");
        free(p);
      }
    free(uneven);
  }
  accumulation = 2;
  plain = train(mpi_rank == 0 ? 1 : 2, DPT_COMMUNICATOR_MPI, 0, model, &count, &loss);
  shard = DPT_SHARD_GRADIENTS;
  sharded = train(mpi_rank == 0 ? 1 : 2, DPT_COMMUNICATOR_MPI, 1, model, &count, &loss);
  shard = DPT_SHARD_NONE;
  accumulation = 1;
  const double e12 = tu_relative_error(sharded, plain, start, n);
  CHECK(e12 <= 1e-5 && same_on_every_process(sharded, n),
        "shard gradients over 1 + 2 devices, accumulation: relative error %g vs unsharded, or they differ",
        e12);
  free(plain), free(sharded);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int mpi_rank = 0, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  size_t rank = 99, size = 0;
  OK(dpt_world_get(&rank, &size));
  CHECK(rank == (size_t)mpi_rank && size == (size_t)mpi_size, "dpt_world_get: %zu of %zu, MPI says %d of %d",
        rank, size, mpi_rank, mpi_size);
  CHECK(size == 2, "run with mpirun -np 2 (got %zu processes)", size);

  dpt_model *model = NULL;
  OK(dpt_model_create_builtin(&model, "lenet"));
  size_t n = 0, n_local = 0;
  double loss_world = 0, loss_local = 0, loss_single = 0;
  double loss_bucketed = 0;
  float *world = train(2, DPT_COMMUNICATOR_MPI, 0, model, &n, &loss_world);
  /* Buckets of single layers, each all-reduced across processes during backward: the same bits. */
  float *bucketed = train(2, DPT_COMMUNICATOR_MPI, 1, model, &n, &loss_bucketed);
  CHECK(memcmp(world, bucketed, n * sizeof(float)) == 0, "buckets across processes changed the parameters");

  /* Bitwise the same on every process. */
  CHECK(same_on_every_process(world, n), "the processes hold different parameters");

  /* The references, in this process only. */
  float *four = train(4, DPT_COMMUNICATOR_LOCAL, 0, model, &n_local, &loss_local);
  float *one = train(1, DPT_COMMUNICATOR_LOCAL, 0, model, &n_local, &loss_single);
  /* The starting point: a trainer that took no step has the initial parameters. */
  dpt_context *ctx = NULL;
  dpt_trainer *t0 = NULL;
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 7;
  OK(dpt_context_create(&ctx, NULL));
  OK(dpt_trainer_create(&t0, ctx, model, &to, NULL));
  float *start = malloc(n * sizeof(float));
  OK(dpt_trainer_get_parameters(t0, start, n));
  const double e4 = tu_relative_error(world, four, start, n), e1 = tu_relative_error(world, one, start, n);
  CHECK(e4 <= 1e-5, "2 processes x 2 devices vs 1 x 4: relative error %g", e4);
  CHECK(e1 <= 1e-5, "2 processes x 2 devices vs 1 device: relative error %g", e1);
  CHECK(fabs(loss_world - loss_local) <= 1e-5 * fabs(loss_local), "evaluation loss %.9g vs %.9g", loss_world,
        loss_local);
  printf("process %zu of %zu: %zu parameters, relative error vs 1x4 %.3g, vs 1x1 %.3g, eval loss %.6f: %s\n",
         rank, size, n, e4, e1, loss_world, failures == 0 ? "ok" : "FAILED");
  fflush(stdout);
  check_16_bit_wire(model, one, start, n);
  check_sharded(model, world, start, n, mpi_rank);
  dpt_trainer_destroy(t0);
  dpt_context_destroy(ctx);
  dpt_model_destroy(model);
  free(world), free(bucketed), free(four), free(one), free(start);
  check_batch_norm();
  check_token_fit();
  free(last_buffers);
  OK(dpt_world_finalize()); /* the application started MPI: a no-op */
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
