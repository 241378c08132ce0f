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

/* 2: all_to_all and all_gather; 3: reduce_scatter_sum; 4: channels (every collective's first argument);
 * 5: one-sided reads of exposed memory (open_window, expose, withdraw, get, publish) and add_channels;
 * 6: reads started and finished apart (get_start, get_finish); 7: messages between two processes (send_start,
 * send_finish, receive) and channels over a part of the processes (add_split_channels); 8: waiting for a
 * message apart from receiving it (wait_message) */
#define DPT_WORLD_ABI_VERSION 8u
#if defined(_WIN32)
#define DPT_WORLD_MODULE_MPI "dptrain_mpi.dll"
#else
#define DPT_WORLD_MODULE_MPI "libdptrain_mpi.so"
#endif
#define DPT_WORLD_ENTRY_MPI "dptrain_mpi_world_v1"

/* Independent channels (these two, and any number more from add_channels): each a duplicate of
 * MPI_COMM_WORLD of its own, so that collectives called from
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
  /* One-sided reads of other processes' memory (MPI's passive-target RMA on one dynamic window; sharded
   * parameters across processes read the peers' ranges inside a pass, each device thread on its own, with
   * no collective to match). Creates the window (collective over every process: each calls it once, at
   * the same point; idempotent afterwards). */
  int (*open_window)(char *error, size_t error_size);
  /* Makes bytes of this process's memory from base readable by the other processes (MPI_Win_attach, a
   * local call) and reports the address they read it by. bytes 0: nothing exposed, address 0. */
  int (*expose)(void *base, size_t bytes, uint64_t *address, char *error, size_t error_size);
  /* Ends expose() of count bases, once no process reads them any more: a barrier over every process (on
   * the window's communicator, polled as all_reduce_sum; every process calls it, in the same order, even
   * with count 0), then MPI_Win_detach of each. After a failed barrier the bases are detached all the
   * same (and the error returned). */
  int (*withdraw)(void *const *bases, size_t count, double timeout_seconds, char *error, size_t error_size);
  /* Copies bytes from process's exposed memory at address into destination (MPI_Rget, polled as
   * all_reduce_sum). Any thread; the data must not change while it is read (publish below). */
  int (*get)(void *destination, size_t bytes, int process, uint64_t address, double timeout_seconds,
             char *error, size_t error_size);
  /* After this process changed its exposed memory: MPI_Win_sync, then a barrier on the channel; once
   * every process has returned, each one's get() sees every process's changes. */
  int (*publish)(int channel, double timeout_seconds, char *error, size_t error_size);
  /* Creates count more channels (duplicates of MPI_COMM_WORLD; collective and blocking: every process calls
   * it at the same point) and reports the first one's number; they last until finalize. */
  int (*add_channels)(int count, int *first, char *error, size_t error_size);
  /* get() in two halves, so that the read proceeds while the caller computes (sharded parameters: the next
   * bucket read while the current one's layers run): get_start starts the reads (MPI_Rget) and returns a
   * handle in *pending (NULL when bytes is 0); get_finish waits for them (polled as all_reduce_sum) and
   * frees the handle, also when it fails. Every started read must be finished, also one no longer wanted:
   * until then destination may still be written. */
  int (*get_start)(void *destination, size_t bytes, int process, uint64_t address, void **pending,
                   char *error, size_t error_size);
  int (*get_finish)(void *pending, double timeout_seconds, char *error, size_t error_size);
  /* Messages between two processes (a pipeline's activations and gradients between stages in different
   * processes): send_start starts sending bytes to process with tag (MPI_Isend on the channel, in pieces of
   * at most 2^30 bytes) and returns a handle in *pending (NULL when bytes is 0); the buffer must stay as it
   * is until send_finish, which waits for the send (polled as all_reduce_sum) or, with abandon nonzero
   * (after a failure, when the receiver may never come), withdraws it (MPI_Cancel, then MPI_Request_free: a
   * send already matched completes on its own), and frees the handle either way; a send that fails or
   * times out is withdrawn too. Messages of one channel, sender and tag arrive in the order sent. receive
   * waits for bytes from process with tag into buffer (MPI_Irecv, polled as all_reduce_sum; withdrawn when
   * it fails or times out, so that it never writes into the buffer afterwards): the receiver knows the
   * size; a longer message fails. Any thread. */
  int (*send_start)(int channel, const void *buffer, size_t bytes, int process, int tag, void **pending,
                    char *error, size_t error_size);
  int (*send_finish)(void *pending, double timeout_seconds, int abandon, char *error, size_t error_size);
  int (*receive)(int channel, void *buffer, size_t bytes, int process, int tag, double timeout_seconds,
                 char *error, size_t error_size);
  /* Creates count channels over the processes that pass the same color (>= 0), each an MPI_Comm_split of
   * MPI_COMM_WORLD ranked as there (collective and blocking: every process calls it at the same point, each
   * with its color), and reports the first one's number and this process's rank and the size there. */
  int (*add_split_channels)(int color, int count, int *first, int *rank, int *size, char *error,
                            size_t error_size);
  /* Waits until a message from process with tag is there to receive (MPI_Iprobe, polled as all_reduce_sum),
   * without receiving it: the time a pipeline stage waits for its neighbour (idle) apart from the time the
   * message takes to come in (receive, communication). Any thread. */
  int (*wait_message)(int channel, int process, int tag, double timeout_seconds, char *error,
                      size_t error_size);
} dpt_world_v1;

typedef const dpt_world_v1 *(*dpt_world_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DPTRAIN_WORLD_INTERFACE_H */
