/* Run by mpirun with 2 processes. The optimizer state (DPT_SHARD_OPTIMIZER, ZeRO stage 1) and the gradient
 * (DPT_SHARD_GRADIENTS, stage 2) sharded across every device of both processes (DPT_SHARD_SCOPE_WORLD),
 * LeNet, 4 steps of ragged global batches:
 *   - 2 x 2, 2 + 3 and 1 x 1 devices; SGD with momentum and AdamW with clipping; one bucket and a bucket per
 *     layer; a bf16 wire: the parameters are bitwise those of the unsharded trainer on the same devices;
 *   - the devices' ranges partition the optimizer state: summed over every device of both processes its
 *     bytes are those of one unsharded device, and no device of 2 x 2 holds more than a third of it;
 *   - dpt_trainer_save is collective and process 0 writes: the file is byte for byte the one the unsharded
 *     trainer writes (process 0 alone saves it); loaded into a trainer sharded across the world and saved
 *     again, the same bytes (each process takes its ranges from the file and gives them back); training on
 *     from either file, sharded and unsharded, the same bits (optimizer and parameters modes);
 *   - sharded gradients with accumulation: within 1e-5 of unsharded, the processes bitwise alike;
 *   - DPT_SHARD_GRADIENTS on a model with batch norm (its statistics summed across the processes by the
 *     device threads on one MPI channel while the communication threads sum the buckets on another), 2 x 2
 *     and 1 x 1 devices, a bucket per layer: the parameters and running statistics bitwise unsharded;
 *   - DPT_SHARD_PARAMETERS (stage 3) across the world, each pass reading the other process's ranges with
 *     one-sided MPI gets: the same cases (2 x 2, 2 + 3, 1 x 1; SGD, AdamW with clipping; one bucket and a
 *     bucket per layer), batch norm, a model with a tied parameter (its source read from the other
 *     process), accumulation, and the checkpoints, as for DPT_SHARD_GRADIENTS; summed over every device of
 *     both processes, the world scope holds the parameters once (plus each device's gather slot), the
 *     process scope once per process; a process destroying such a trainer waits until the other, which
 *     still reads its parameters, destroys it too.
 * Exit status 0 only when every check passed on every process. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../capi/relative_error.h"
#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 28 * 28, kSteps = 4 };

typedef struct {
  size_t devices; /* in this process */
  dpt_shard_mode shard;
  dpt_shard_scope scope;
  dpt_optimizer_kind optimizer;
  size_t bucket_bytes;
  size_t accumulation; /* micro-batches per optimizer step */
} setup;

typedef struct {
  dpt_context *ctx;
  dpt_trainer *trainer;
} run;

static dpt_precision wire = DPT_PRECISION_FP32; /* what start()'s trainers' gradient sums send */
static int prefetch = 0;                        /* start()'s trainers' prefetch_parameters */

static run start(const dpt_model *model, setup s) {
  run r = {NULL, NULL};
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = s.devices;
  OK(dpt_context_create(&r.ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 3;
  to.communicator = DPT_COMMUNICATOR_MPI;
  to.timeout_seconds = 60;
  to.bucket_bytes = s.bucket_bytes;
  to.shard = s.shard;
  to.shard_scope = s.scope;
  to.accumulation_steps = s.accumulation;
  to.allreduce_dtype = wire;
  to.prefetch_parameters = prefetch;
  dpt_optimizer_options oo;
  dpt_optimizer_options_init(&oo);
  oo.kind = s.optimizer;
  oo.learning_rate = s.optimizer == DPT_OPTIMIZER_ADAMW ? 0.003f : 0.05f;
  oo.momentum = 0.9f;
  oo.clip_norm = s.optimizer == DPT_OPTIMIZER_ADAMW ? 0.5 : 0.0;
  OK(dpt_trainer_create(&r.trainer, r.ctx, model, &to, &oo));
  return r;
}

static void stop(run r) {
  dpt_trainer_destroy(r.trainer);
  dpt_context_destroy(r.ctx);
}

/* The same global batches on every process: a fixed generator, reset for each trainer. */
static void train(run r) {
  static float x[11 * kInput];
  int32_t y[11];
  state = 99;
  for (int s = 0; s < kSteps && r.trainer != NULL; ++s) {
    const size_t n = s % 2 == 0 ? 11 : 6;
    for (size_t i = 0; i < n * kInput; ++i) x[i] = next_unit();
    for (size_t i = 0; i < n; ++i) y[i] = (int32_t)(next_unit() * 10.0f) % 10;
    dpt_step_result res = {.struct_size = sizeof res};
    OK(dpt_trainer_step(r.trainer, x, n * kInput, y, n, &res));
  }
}

static float *parameters(run r, size_t n) {
  float *p = calloc(n, sizeof(float));
  if (r.trainer != NULL) OK(dpt_trainer_get_parameters(r.trainer, p, n));
  return p;
}

/* The trained parameters (and running statistics) of the unsharded trainer and of the one sharded across the
 * world: the same bits. */
static void check_bits(const dpt_model *model, setup s, size_t n, const char *what) {
  setup plain = s;
  plain.shard = DPT_SHARD_NONE;
  plain.scope = DPT_SHARD_SCOPE_PROCESS;
  run a = start(model, plain), b = start(model, s);
  train(a), train(b);
  float *pa = parameters(a, n), *pb = parameters(b, n);
  CHECK(memcmp(pa, pb, n * sizeof(float)) == 0, "%s: not the unsharded bits", what);
  free(pa), free(pb);
  size_t m = 0;
  OK(dpt_model_buffer_count(model, &m));
  if (m > 0) {
    float *ba = calloc(m, sizeof(float)), *bb = calloc(m, sizeof(float));
    OK(dpt_trainer_get_buffers(a.trainer, ba, m));
    OK(dpt_trainer_get_buffers(b.trainer, bb, m));
    CHECK(memcmp(ba, bb, m * sizeof(float)) == 0, "%s: running statistics not the unsharded bits", what);
    free(ba), free(bb);
  }
  stop(a), stop(b);
}

/* Sharded gradients with accumulation add each micro-batch's sums across the job into the ranges (one more
 * rounding per micro-batch than the unsharded sum of micro-batches, as within one process): within the
 * equivalence tolerance of the unsharded trainer, and every process holds the same bits. */
static void check_accumulation(const dpt_model *model, size_t n, dpt_shard_mode mode) {
  const setup sharded = {2, mode, DPT_SHARD_SCOPE_WORLD, DPT_OPTIMIZER_SGD, 1, 2};
  setup plain = sharded;
  plain.shard = DPT_SHARD_NONE;
  run a = start(model, plain), b = start(model, sharded);
  float *initial = parameters(a, n);
  train(a), train(b);
  float *pa = parameters(a, n), *pb = parameters(b, n);
  const double e = tu_relative_error(pb, pa, initial, n);
  const char *what = mode == DPT_SHARD_GRADIENTS ? "gradients" : "parameters";
  CHECK(e <= 1e-5 && same_on_every_process(pb, n),
        "%s across the world, accumulation 2: relative error %g vs unsharded, or the processes differ", what,
        e);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("%s across the world, accumulation 2: relative error vs unsharded %.3g\n", what, e);
  free(initial), free(pa), free(pb);
  stop(a), stop(b);
}

/* Every device's optimizer state bytes (parameters: those of its range and its gather slot), summed over
 * both processes; the largest on one device. */
static void held_bytes(run r, int parameters, unsigned long long *total, unsigned long long *largest) {
  size_t devices = 0;
  OK(dpt_trainer_device_count(r.trainer, &devices));
  unsigned long long mine = 0, most = 0;
  for (size_t d = 0; d < devices; ++d) {
    dpt_replica_memory m = {.struct_size = sizeof m};
    OK(dpt_trainer_replica_memory(r.trainer, d, &m));
    const unsigned long long held = parameters ? m.parameters : m.optimizer_state;
    mine += held;
    if (held > most) most = held;
  }
  MPI_Allreduce(&mine, total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&most, largest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
}

static void check_checkpoints(const dpt_model *model, int rank, const char *dir, dpt_shard_mode mode) {
  char plain_path[512], sharded_path[512], again_path[512];
  snprintf(plain_path, sizeof plain_path, "%s/plain.ckpt", dir);
  snprintf(sharded_path, sizeof sharded_path, "%s/sharded.ckpt", dir);
  snprintf(again_path, sizeof again_path, "%s/again.ckpt", dir);
  const setup sharded = {2, mode, DPT_SHARD_SCOPE_WORLD, DPT_OPTIMIZER_ADAMW, 1, 1};
  setup plain = sharded;
  plain.shard = DPT_SHARD_NONE;
  run a = start(model, plain), b = start(model, sharded);
  train(a), train(b);
  if (rank == 0) OK(dpt_trainer_save(a.trainer, plain_path)); /* as an MPI program saves today */
  OK(dpt_trainer_save(b.trainer, sharded_path));              /* collective */
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, plain_path, sharded_path, "a checkpoint of the shard across processes");
  stop(a), stop(b);
  run c = start(model, sharded);
  OK(dpt_trainer_load(c.trainer, plain_path));
  OK(dpt_trainer_save(c.trainer, again_path));
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_file(rank, plain_path, again_path, "loaded into the shard across processes and saved again");
  stop(c);
  /* The checkpoint of the shard continues: one more round of steps from it, sharded, gives the bits of the
   * unsharded trainer continuing from its own. */
  run d = start(model, plain), e = start(model, sharded);
  OK(dpt_trainer_load(d.trainer, plain_path));
  OK(dpt_trainer_load(e.trainer, sharded_path));
  train(d), train(e);
  size_t n = 0;
  OK(dpt_model_parameter_count(model, &n));
  float *pd = parameters(d, n), *pe = parameters(e, n);
  CHECK(memcmp(pd, pe, n * sizeof(float)) == 0, "mode %d: resumed from the checkpoints, not the same bits",
        (int)mode);
  free(pd), free(pe);
  stop(d), stop(e);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) remove(plain_path), remove(sharded_path), remove(again_path);
}

/* Destroying a trainer whose parameters are sharded across the world waits until every process destroys it:
 * process 1 destroys at once, process 0 first sleeps and then reads the whole parameters (half of them from
 * process 1's memory): it reads the trained values, the unsharded trainer's, not freed memory. */
static void check_destroy_waits_for_readers(const dpt_model *model, size_t n, int rank) {
  const setup world = {1, DPT_SHARD_PARAMETERS, DPT_SHARD_SCOPE_WORLD, DPT_OPTIMIZER_SGD, 0, 1};
  setup plain = world;
  plain.shard = DPT_SHARD_NONE;
  run a = start(model, plain), b = start(model, world);
  train(a), train(b);
  float *expected = parameters(a, n);
  stop(a);
  float *got = calloc(n, sizeof(float));
  if (rank == 1) {
    stop(b);
  } else {
    usleep(300 * 1000);
    OK(dpt_trainer_get_parameters(b.trainer, got, n));
    CHECK(memcmp(got, expected, n * sizeof(float)) == 0,
          "parameters read while the other process was destroying its trainer: not the trained ones");
    stop(b);
  }
  free(expected), free(got);
}

/* check_bits' cases (devices 0: 2 in process 0, 3 in process 1). A bf16 wire rounds each contribution and
 * sum alike in both trainers. */
#define WORLD DPT_SHARD_SCOPE_WORLD
static const struct {
  setup s;
  dpt_precision wire;
  const char *what;
} kBitwise[] = {
    {{2, DPT_SHARD_OPTIMIZER, WORLD, DPT_OPTIMIZER_SGD, 0, 1}, DPT_PRECISION_FP32, "2 x 2, SGD"},
    {{2, DPT_SHARD_OPTIMIZER, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1},
     DPT_PRECISION_FP32,
     "2 x 2, AdamW with clipping, a bucket per layer"},
    {{0, DPT_SHARD_OPTIMIZER, WORLD, DPT_OPTIMIZER_ADAMW, 0, 1}, DPT_PRECISION_FP32, "2 + 3 devices, AdamW"},
    {{1, DPT_SHARD_OPTIMIZER, WORLD, DPT_OPTIMIZER_SGD, 0, 1}, DPT_PRECISION_FP32, "1 x 1, SGD"},
    {{2, DPT_SHARD_OPTIMIZER, WORLD, DPT_OPTIMIZER_SGD, 0, 1}, DPT_PRECISION_BF16, "2 x 2, a bf16 wire"},
    {{2, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_SGD, 0, 1},
     DPT_PRECISION_FP32,
     "gradients, 2 x 2, SGD, one bucket"},
    {{2, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1},
     DPT_PRECISION_FP32,
     "gradients, 2 x 2, AdamW with clipping, a bucket per layer"},
    {{0, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1},
     DPT_PRECISION_FP32,
     "gradients, 2 + 3 devices, AdamW, a bucket per layer"},
    {{1, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_SGD, 1, 1},
     DPT_PRECISION_FP32,
     "gradients, 1 x 1, SGD, a bucket per layer"},
    {{2, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_SGD, 1, 1},
     DPT_PRECISION_BF16,
     "gradients, 2 x 2, a bf16 wire"},
    {{2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 0, 1},
     DPT_PRECISION_FP32,
     "parameters, 2 x 2, SGD, one bucket"},
    {{2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1},
     DPT_PRECISION_FP32,
     "parameters, 2 x 2, AdamW with clipping, a bucket per layer"},
    {{0, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1},
     DPT_PRECISION_FP32,
     "parameters, 2 + 3 devices, AdamW, a bucket per layer"},
    {{1, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 1, 1},
     DPT_PRECISION_FP32,
     "parameters, 1 x 1, SGD, a bucket per layer"},
};

/* Occurrences of needle in the file at path (0 when it cannot be read). */
static size_t count_in_file(const char *path, const char *needle) {
  size_t size = 0, count = 0;
  char *text = read_all(path, &size);
  if (text == NULL) return 0;
  text[size] = '\0';
  for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) ++count;
  free(text);
  return count;
}

/* Reading ahead (prefetch_parameters) with sharded parameters across the world: the bits of the unsharded
 * trainer (every parameters case of kBitwise), one more gather slot per device (the process scope's four
 * slots are its parameter bytes beyond the two whole copies), and the passes really read ahead: the
 * trace's gathers served from a read ahead, none without it. */
static void check_read_ahead(const dpt_model *model, size_t n, int rank) {
  prefetch = 1;
  for (size_t i = 0; i < sizeof kBitwise / sizeof kBitwise[0]; ++i) {
    setup s = kBitwise[i].s;
    if (s.shard != DPT_SHARD_PARAMETERS) continue;
    if (s.devices == 0) s.devices = rank == 0 ? 2 : 3;
    char what[200];
    snprintf(what, sizeof what, "%s, read ahead", kBitwise[i].what);
    check_bits(model, s, n, what);
  }
  const setup world = {2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 1, 1};
  setup process = world;
  process.scope = DPT_SHARD_SCOPE_PROCESS;
  run ahead = start(model, world);
  prefetch = 0;
  run plain = start(model, world), b = start(model, process);
  unsigned long long ahead_total = 0, plain_total = 0, process_total = 0, largest = 0;
  held_bytes(ahead, 1, &ahead_total, &largest);
  held_bytes(plain, 1, &plain_total, &largest);
  held_bytes(b, 1, &process_total, &largest);
  CHECK(
      ahead_total - plain_total == process_total - 2 * n * sizeof(float),
      "parameter bytes over 2 x 2 devices, world scope: %llu reading ahead, %llu without; four gather slots "
      "are %llu",
      ahead_total, plain_total, process_total - 2 * n * sizeof(float));
  char path[2][128];
  const run traced[2] = {ahead, plain};
  size_t served[2];
  for (int t = 0; t < 2; ++t) {
    snprintf(path[t], sizeof path[t], "/tmp/dpt-read-ahead-%d-%d.json", (int)getpid(), t);
    OK(dpt_trainer_trace_start(traced[t].trainer, 4096));
    train(traced[t]);
    OK(dpt_trainer_trace_write(traced[t].trainer, path[t]));
    served[t] = count_in_file(path[t], "(read ahead)");
    unlink(path[t]);
  }
  CHECK(served[0] > 0 && served[1] == 0,
        "read ahead: %zu gathers served from a read ahead with prefetch_parameters, %zu without", served[0],
        served[1]);
  if (rank == 0)
    printf(
        "read ahead, 2 x 2 devices, a bucket per layer: %zu of a process's gathers served from a read "
        "ahead in %d steps; the unsharded bits; %llu bytes more in all\n",
        served[0], kSteps, ahead_total - plain_total);
  stop(ahead), stop(plain), stop(b);
}

/* An MLP whose third layer reads the second's weight (dpt_model_tie): sharded across the world, the tied
 * source lies in another process's range for some devices. */
static dpt_model *tied_model(void) {
  dpt_model *m = NULL;
  size_t a;
  OK(dpt_model_create(&m, 1, 28, 28));
  OK(dpt_model_dense(m, 0, 24, 1, "d0", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "r0", &a));
  OK(dpt_model_dense(m, a, 24, 1, "d1", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "r1", &a));
  OK(dpt_model_dense(m, a, 24, 1, "d2", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "r2", &a));
  OK(dpt_model_dense(m, a, 10, 1, "out", &a));
  OK(dpt_model_tie(m, "d2.weight", "d1.weight"));
  return m;
}

/* Summed over every device of both processes: the parameter bytes of the world scope (the parameters once,
 * plus each device's gather slot) and of the process scope (once per process, plus the same slots). */
static void check_parameter_bytes(const dpt_model *model, size_t n, int rank) {
  const setup world = {2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 1, 1};
  setup process = world;
  process.scope = DPT_SHARD_SCOPE_PROCESS;
  run a = start(model, world), b = start(model, process);
  unsigned long long world_total = 0, world_largest = 0, process_total = 0, process_largest = 0;
  held_bytes(a, 1, &world_total, &world_largest);
  held_bytes(b, 1, &process_total, &process_largest);
  CHECK(process_total - world_total == n * sizeof(float) && world_largest < process_largest,
        "parameter bytes over 2 x 2 devices: world scope %llu in all (largest %llu), process scope %llu "
        "(largest %llu); the parameters are %zu bytes",
        world_total, world_largest, process_total, process_largest, n * sizeof(float));
  if (rank == 0)
    printf(
        "sharded parameters over 2 x 2 devices: at most %llu bytes on a device in the world scope, %llu "
        "in the process scope (%zu bytes of parameters)\n",
        world_largest, process_largest, n * sizeof(float));
  stop(a), stop(b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  dpt_model *model = NULL;
  OK(dpt_model_create_builtin(&model, "lenet"));
  size_t n = 0;
  OK(dpt_model_parameter_count(model, &n));

  for (size_t i = 0; i < sizeof kBitwise / sizeof kBitwise[0]; ++i) {
    setup s = kBitwise[i].s;
    if (s.devices == 0) s.devices = rank == 0 ? 2 : 3;
    wire = kBitwise[i].wire;
    check_bits(model, s, n, kBitwise[i].what);
  }
  wire = DPT_PRECISION_FP32;
  check_accumulation(model, n, DPT_SHARD_GRADIENTS);
  check_accumulation(model, n, DPT_SHARD_PARAMETERS);
  check_parameter_bytes(model, n, rank);
  check_read_ahead(model, n, rank);
  check_destroy_waits_for_readers(model, n, rank);

  /* AdamW keeps two floats per parameter. */
  run r = start(model, (setup){2, DPT_SHARD_OPTIMIZER, DPT_SHARD_SCOPE_WORLD, DPT_OPTIMIZER_ADAMW, 0, 1});
  unsigned long long total = 0, largest = 0;
  held_bytes(r, 0, &total, &largest);
  CHECK(total == 2ull * n * sizeof(float) && largest * 3 < total,
        "optimizer state over 2 x 2 devices: %llu bytes in all, %llu on the largest (one device: %zu)", total,
        largest, 2 * n * sizeof(float));
  if (rank == 0)
    printf("shard across 2 x 2 devices: %llu bytes of AdamW state in all, at most %llu on a device\n", total,
           largest);
  stop(r);

  char dir[256];
  shared_temp_dir(rank, "dpt-world-shard", dir, sizeof dir);
  check_checkpoints(model, rank, dir, DPT_SHARD_OPTIMIZER);
  check_checkpoints(model, rank, dir, DPT_SHARD_PARAMETERS);
  if (rank == 0) rmdir(dir);

  dpt_model *norm = small_batch_norm_model();
  size_t norm_n = 0;
  OK(dpt_model_parameter_count(norm, &norm_n));
  check_bits(norm, (setup){2, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_SGD, 1, 1}, norm_n,
             "gradients with batch norm, 2 x 2, a bucket per layer");
  check_bits(norm, (setup){1, DPT_SHARD_GRADIENTS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1}, norm_n,
             "gradients with batch norm, 1 x 1, AdamW, a bucket per layer");
  check_bits(norm, (setup){2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 1, 1}, norm_n,
             "parameters with batch norm, 2 x 2, a bucket per layer");
  dpt_model *tied = tied_model();
  size_t tied_n = 0;
  OK(dpt_model_parameter_count(tied, &tied_n));
  check_bits(tied, (setup){2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1}, tied_n,
             "parameters with a tied weight, 2 x 2, AdamW, a bucket per layer");
  check_bits(tied, (setup){1, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 0, 1}, tied_n,
             "parameters with a tied weight, 1 x 1, one bucket");
  prefetch = 1;
  check_bits(norm, (setup){2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_SGD, 1, 1}, norm_n,
             "parameters with batch norm, 2 x 2, a bucket per layer, read ahead");
  check_bits(tied, (setup){2, DPT_SHARD_PARAMETERS, WORLD, DPT_OPTIMIZER_ADAMW, 1, 1}, tied_n,
             "parameters with a tied weight, 2 x 2, AdamW, a bucket per layer, read ahead");
  prefetch = 0;
  dpt_model_destroy(tied);
  dpt_model_destroy(norm);
  dpt_model_destroy(model);
  return finish_processes(rank);
}
