/* The interface between libdptrain and its loadable MPI module (libdptrain_mpi.so): plain C, versioned, so
 * that libdptrain.so works where no MPI is installed (the module then simply fails to load). Internal: not
 * a public header. */
#ifndef DPTRAIN_WORLD_INTERFACE_H
#define DPTRAIN_WORLD_INTERFACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: all_to_all and all_gather; 3: reduce_scatter_sum; 4: channels (every collective's first argument) */
#define DPT_WORLD_ABI_VERSION 4u
#if defined(_WIN32)
#define DPT_WORLD_MODULE_MPI "dptrain_mpi.dll"
#else
#define DPT_WORLD_MODULE_MPI "libdptrain_mpi.so"
#endif
#define DPT_WORLD_ENTRY_MPI "dptrain_mpi_world_v1"

/* Independent channels: each a duplicate of MPI_COMM_WORLD of its own, so that collectives called from
 * two threads (the device threads' batch statistics and the communication threads' gradient buckets) never
 * meet on one communicator, where the processes could post them in different orders. Within a channel,
 * every process calls the same collectives in the same order; calls on different channels may come from
 * different threads at the same time (the module takes each MPI call under its own lock, so MPI's
 * MPI_THREAD_SERIALIZED is enough). */
enum { DPT_WORLD_CHANNEL_MAIN = 0, DPT_WORLD_CHANNEL_BUCKETS = 1, DPT_WORLD_CHANNELS = 2 };

/* Results of the module's calls. */
enum { DPT_WORLD_OK = 0, DPT_WORLD_TIMEOUT = 1, DPT_WORLD_FAILED = 2 };

typedef struct dpt_world_v1 {
  uint32_t abi_version; /* DPT_WORLD_ABI_VERSION */
  uint32_t struct_size; /* sizeof(dpt_world_v1) of the module */
  /* Initializes MPI when the process has not (thread level MPI_THREAD_SERIALIZED: the module serializes its
   * calls), creates the channels and reports this process's rank and the world size. Idempotent. */
  int (*init)(int *rank, int *size, char *error, size_t error_size);
  /* Sums count floats (is_double = 0) or doubles (is_double = 1) in place over every process, with a
   * non-blocking all-reduce polled until timeout_seconds (0 = no limit). */
  int (*all_reduce_sum)(int channel, void *buffer, size_t count, int is_double, double timeout_seconds,
                        char *error, size_t error_size);
  /* Copies root's bytes to every process, polled as all_reduce_sum. */
  int (*broadcast)(int channel, void *buffer, size_t bytes, int root, double timeout_seconds, char *error,
                   size_t error_size);
  /* Ends MPI when init() started it; a no-op otherwise. */
  int (*finalize)(char *error, size_t error_size);
  /* The MPI library's own version line. */
  const char *(*library_version)(void);
  /* Every process sends bytes_per_process bytes to each process (send: size x bytes_per_process, in process
   * order) and receives as many from each (recv, in process order), polled as all_reduce_sum. */
  int (*all_to_all)(int channel, const void *send, void *recv, size_t bytes_per_process,
                    double timeout_seconds, char *error, size_t error_size);
  /* recv (size x bytes) receives every process's bytes of send, in process order, polled as all_reduce_sum.
   */
  int (*all_gather)(int channel, const void *send, void *recv, size_t bytes, double timeout_seconds,
                    char *error, size_t error_size);
  /* Sums floats over every process and leaves process p's part: buffer holds counts[0] + ... +
   * counts[size - 1] floats, the parts in process order; afterwards buffer[0, counts[rank]) holds the sum of
   * this process's part (MPI_Reduce_scatter in place), the rest is undefined. Each count at most 2^28. Polled
   * as all_reduce_sum. */
  int (*reduce_scatter_sum)(int channel, float *buffer, const size_t *counts, double timeout_seconds,
                            char *error, size_t error_size);
} dpt_world_v1;

typedef const dpt_world_v1 *(*dpt_world_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DPTRAIN_WORLD_INTERFACE_H */
