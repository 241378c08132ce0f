/* Run by mpirun with 2 processes: process 1 stalls for 4 s before its first step while process 0, with a
 * 1 s timeout, steps. Process 0's step must end with DPT_ERROR_TIMEOUT within 2.5 s (never hang), and its
 * trainer must then refuse work with DPT_ERROR_INVALID_STATE and still be destroyable. When process 1
 * finally steps, its peer is gone from the step: it times out as well. With the argument "pipeline" the
 * trainers are the two stages of a pipeline divided among the processes (DPT_PIPELINE_SCOPE_WORLD, one
 * device each): process 0 waits for the gradient of its first micro-batch, which never comes, and process 1
 * for activations that never come. With "shard" the optimizer state is sharded among each process's 2
 * devices (the process scope) and the gradient goes in 64 KiB buckets: process 0's device 0 waits in the
 * sum of a bucket's pieces over the processes on its communication thread while device 1 waits for it. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int pipeline = argc > 1 && strcmp(argv[1], "pipeline") == 0;
  const int shard = argc > 1 && strcmp(argv[1], "shard") == 0;
  int failures = 0;
  size_t rank = 0, size = 0;
  dpt_context *ctx = NULL;
  dpt_model *model = NULL;
  dpt_trainer *t = NULL;
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.communicator = DPT_COMMUNICATOR_MPI;
  to.timeout_seconds = 1.0;
  if (pipeline) {
    to.pipeline_stages = 2;
    to.pipeline_scope = DPT_PIPELINE_SCOPE_WORLD;
  }
  if (shard) {
    to.shard = DPT_SHARD_OPTIMIZER;
    to.bucket_bytes = 64 << 10;
  }
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = pipeline ? 1 : 2;
  if (dpt_world_get(&rank, &size) != DPT_OK || dpt_context_create(&ctx, &co) != DPT_OK ||
      dpt_model_create_builtin(&model, "mlp") != DPT_OK ||
      dpt_trainer_create(&t, ctx, model, &to, NULL) != DPT_OK) {
    fprintf(stderr, "setup failed: %s\n", dpt_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  static float x[8 * 784];
  int32_t y[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  if (rank == 1) sleep(4);
  const double t0 = now();
  const dpt_status s = dpt_trainer_step(t, x, 8 * 784, y, 8, NULL);
  const double elapsed = now() - t0;
  char line[1200];
  snprintf(line, sizeof line, "%s", dpt_last_error_message());
  if (s != DPT_ERROR_TIMEOUT || elapsed > 2.5) {
    fprintf(stderr, "process %zu: status %d after %.2f s (%s); expected a timeout within 2.5 s\n", rank,
            (int)s, elapsed, line);
    ++failures;
  }
  if (dpt_trainer_step(t, x, 8 * 784, y, 8, NULL) != DPT_ERROR_INVALID_STATE) {
    fprintf(stderr, "process %zu: a timed-out trainer took another step\n", rank);
    ++failures;
  }
  dpt_trainer_destroy(t);
  dpt_model_destroy(model);
  dpt_context_destroy(ctx);
  printf("process %zu: step ended with status %d after %.2f s (%s): %s\n", rank, (int)s, elapsed, line,
         failures == 0 ? "ok" : "FAILED");
  fflush(stdout);
  /* No collective after the timeout: MPI cannot cancel the abandoned ones (process 0's statistics
   * all-reduce, process 1's gradient all-reduce are still posted), so a new collective may match or wait
   * on them (seen: an MPI_Allreduce here that never returned on one process). Each process reports its own
   * status; mpirun fails the job when either is non-zero. */
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
