/* What several mpirun tests in C share: the batch generator (the same numbers on every process, reset through
 * `state` before each trainer), the comparison of a vector across the processes and of two files, a folder
 * every process knows, a small model with batch norm and one with a tied head. Include after mpi_check.h. */
#ifndef DPTRAIN_TESTS_MPI_FIXTURES_H
#define DPTRAIN_TESTS_MPI_FIXTURES_H

#include <dptrain/dptrain.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long state = 99;
static inline float next_unit(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((state >> 40) & 0xffffff) / 16777216.0f;
}

/* Every process holds bitwise the same v[0, n). */
static inline int same_on_every_process(const float *v, size_t n) {
  float *lo = malloc(n * sizeof(float)), *hi = malloc(n * sizeof(float));
  MPI_Allreduce(v, lo, (int)n, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(v, hi, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  const int same = memcmp(lo, v, n * sizeof(float)) == 0 && memcmp(hi, v, n * sizeof(float)) == 0;
  free(lo), free(hi);
  return same;
}

static inline char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *bytes = malloc(*size + 1);
  if (fread(bytes, 1, *size, f) != *size) *size = 0;
  fclose(f);
  return bytes;
}

/* Process 0 compares two files byte for byte. */
static inline void check_same_file(int rank, const char *a, const char *b, const char *what) {
  if (rank != 0) return;
  size_t na = 0, nb = 0;
  char *fa = read_all(a, &na), *fb = read_all(b, &nb);
  CHECK(fa != NULL && fb != NULL && na == nb && na > 0 && memcmp(fa, fb, na) == 0,
        "%s: %s (%zu bytes) and %s (%zu bytes) differ", what, a, na, b, nb);
  free(fa), free(fb);
}

/* A new folder under /tmp ("/tmp/NAME-XXXXXX") that process 0 makes and every process learns. */
static inline void shared_temp_dir(int rank, const char *name, char *dir, size_t size) {
  dir[0] = '\0';
  if (rank == 0) {
    snprintf(dir, size, "/tmp/%s-XXXXXX", name);
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
  }
  MPI_Bcast(dir, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* conv (no bias) -> batch norm -> relu -> global average pooling -> dense 10, on 28 x 28 inputs. */
static inline dpt_model *small_batch_norm_model(void) {
  dpt_model *m = NULL;
  size_t a;
  OK(dpt_model_create(&m, 1, 28, 28));
  OK(dpt_model_conv2d(m, 0, 6, 3, 2, 1, 0, "conv1", &a));
  OK(dpt_model_batch_norm(m, a, 1e-5f, 0.1f, "bn1", &a));
  OK(dpt_model_activation(m, a, DPT_ACTIVATION_RELU, "relu1", &a));
  OK(dpt_model_global_avg_pool(m, a, "pool", &a));
  OK(dpt_model_dense(m, a, 10, 1, "fc", &a));
  return m;
}

/* 784 -> dense 10 "a" -> relu -> dense 784 "b" -> relu -> dense 10 "head" (no bias), head.weight tied to
 * a.weight (7840 floats): every cut puts them in different stages. */
static inline dpt_model *tied_head_model(void) {
  dpt_model *tied = NULL;
  size_t t = 0;
  OK(dpt_model_create(&tied, 1, 28, 28));
  OK(dpt_model_dense(tied, 0, 10, 1, "a", &t));
  OK(dpt_model_activation(tied, t, DPT_ACTIVATION_RELU, "relu_a", &t));
  OK(dpt_model_dense(tied, t, 28 * 28, 1, "b", &t));
  OK(dpt_model_activation(tied, t, DPT_ACTIVATION_RELU, "relu_b", &t));
  OK(dpt_model_dense(tied, t, 10, 0, "head", &t));
  OK(dpt_model_tie(tied, "head.weight", "a.weight"));
  return tied;
}

/* The end of main: prints this process's verdict, sums the failures over the processes and ends MPI; the
 * exit status (0 only when every process passed). */
static inline int finish_processes(int rank) {
  printf("process %d: %s\n", rank, failures == 0 ? "ok" : "FAILED");
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}

#endif /* DPTRAIN_TESTS_MPI_FIXTURES_H */
