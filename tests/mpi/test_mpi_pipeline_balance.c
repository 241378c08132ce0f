/* Run by mpirun with 2 processes. A pipeline's cuts balanced by measured time (DPT_PIPELINE_BALANCE_TIME)
 * across MPI processes: process 0 measures, every process takes its cuts.
 *   - every process runs every stage (the process scope): the same cuts on both, and the same parameters
 *     after three steps;
 *   - the stages divided among the processes, process 1's device too small for the whole model (but not
 *     for its stage): process 1 never measures, so its trainer is made and trains, with process 0's cuts;
 *   - process 0's device too small for the whole model: both processes' trainers fail at once (process 0
 *     with its out-of-memory error naming the device, process 1 with its status and a message that says
 *     process 0 failed), and the processes make trainers afterwards.
 * Exit status 0 only when every check passed on every process. */
#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "mpi_fixtures.h"

enum { kInput = 16 * 16, kClasses = 10, kBatch = 8 };

/* 256 -> dense 512 -> relu -> dense 512 -> relu -> dense 10: 398K parameters, whose parameters and
 * gradients (the measuring pass's) take 3.2 MB; any second stage holds at most 267K of them. */
static dpt_model *model(void) {
  dpt_model *m = NULL;
  OK(dpt_model_create(&m, 1, 16, 16));
  OK(dpt_model_add_dense(m, 512));
  OK(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
  OK(dpt_model_add_dense(m, 512));
  OK(dpt_model_add_activation(m, DPT_ACTIVATION_RELU));
  OK(dpt_model_add_dense(m, kClasses));
  return m;
}

enum { kCap = 2800 * 1000 }; /* bytes: a second stage's SGD replica fits, the whole model's pass does not */

static dpt_status start(const dpt_model *m, size_t devices, uint64_t cap, dpt_pipeline_scope scope,
                        dpt_context **ctx, dpt_trainer **trainer) {
  dpt_context_options co;
  dpt_context_options_init(&co);
  co.cpu_devices = devices;
  co.cpu_memory_limit = cap;
  OK(dpt_context_create(ctx, &co));
  dpt_trainer_options to;
  dpt_trainer_options_init(&to);
  to.seed = 3;
  to.communicator = DPT_COMMUNICATOR_MPI;
  to.timeout_seconds = 60;
  to.pipeline_stages = 2;
  to.micro_batches = 2;
  to.pipeline_scope = scope;
  to.pipeline_balance = DPT_PIPELINE_BALANCE_TIME;
  to.pipeline_balance_batch = kBatch;
  *trainer = NULL;
  return dpt_trainer_create(trainer, *ctx, m, &to, NULL);
}

/* The trainer's cuts are process 0's. */
static void check_same_cuts(dpt_trainer *t, const char *what) {
  char cuts[256] = {0}, first[256] = {0};
  OK(dpt_trainer_pipeline_cuts(t, cuts, sizeof cuts, NULL));
  memcpy(first, cuts, sizeof cuts);
  MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(strcmp(cuts, first) == 0 && cuts[0] != '\0', "%s: cuts \"%s\", process 0's \"%s\"", what, cuts,
        first);
}

static void steps(dpt_trainer *t) {
  static float x[kBatch * kInput];
  int32_t y[kBatch];
  state = 17;
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < kBatch * kInput; ++i) x[i] = next_unit() - 0.5f;
    for (size_t i = 0; i < kBatch; ++i) y[i] = (int32_t)(next_unit() * kClasses) % kClasses;
    dpt_step_result r = {.struct_size = sizeof r};
    OK(dpt_trainer_step(t, x, kBatch * kInput, y, kBatch, &r));
    CHECK(r.applied && r.loss > 0, "step %d: applied %d, loss %g", s, r.applied, r.loss);
  }
}

static void process_scope(const dpt_model *m) {
  dpt_context *ctx = NULL;
  dpt_trainer *t = NULL;
  OK(start(m, 2, 0, DPT_PIPELINE_SCOPE_PROCESS, &ctx, &t));
  if (t != NULL) {
    check_same_cuts(t, "every stage in every process");
    steps(t);
    size_t n = 0;
    OK(dpt_model_parameter_count(m, &n));
    float *p = calloc(n, sizeof(float));
    OK(dpt_trainer_get_parameters(t, p, n));
    CHECK(same_on_every_process(p, n), "every stage in every process: the parameters differ");
    free(p);
  }
  dpt_trainer_destroy(t);
  dpt_context_destroy(ctx);
}

static void measured_by_process_0(const dpt_model *m, int rank) {
  dpt_context *ctx = NULL;
  dpt_trainer *t = NULL;
  OK(start(m, 1, rank == 1 ? kCap : 0, DPT_PIPELINE_SCOPE_WORLD, &ctx, &t));
  if (t != NULL) {
    check_same_cuts(t, "the stages divided, process 1 capped");
    steps(t);
  }
  dpt_trainer_destroy(t);
  dpt_context_destroy(ctx);
}

static void failure_of_process_0(const dpt_model *m, int rank) {
  dpt_context *ctx = NULL;
  dpt_trainer *t = NULL;
  const double t0 = MPI_Wtime();
  const dpt_status status = start(m, 1, rank == 0 ? kCap : 0, DPT_PIPELINE_SCOPE_WORLD, &ctx, &t);
  const char *message = dpt_last_error_message();
  CHECK(status == DPT_ERROR_OUT_OF_MEMORY && t == NULL, "process 0 capped: status %d on process %d", status,
        rank);
  CHECK(strstr(message, rank == 0 ? "cpu:0" : "process 0") != NULL, "process %d's message: %s", rank,
        message);
  CHECK(MPI_Wtime() - t0 < 30, "process 0 capped: %.1f s to fail", MPI_Wtime() - t0);
  dpt_context_destroy(ctx);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(size == 2, "run with mpirun -np 2 (got %d processes)", size);
  dpt_model *m = model();
  process_scope(m);
  failure_of_process_0(m, rank);
  measured_by_process_0(m, rank); /* after the failure: the processes still make trainers together */
  dpt_model_destroy(m);
  return finish_processes(rank);
}
