// libdptrain_mpi.so's shared part: the state of MPI in this process (channels, window, lock, the broken
// flag), the polls that bound every wait by a timeout, and the error reports. Each entry of the module's
// table (module.cpp) is in the file of its job: lifecycle.cpp (init, channels, finalize), collectives.cpp,
// one_sided.cpp (the window of one-sided reads), messages.cpp (point to point). The folder's files are the
// only ones of the project that include <mpi.h>.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "interface/world_interface.h"

namespace dpt_mpi {

// The module's state, shared by its files (defined in state.cpp).
extern bool started_here;  // MPI_Init_thread was called by init (so finalize calls MPI_Finalize)
// The channels (world_interface.h): duplicates of MPI_COMM_WORLD, so that our errors return, our messages
// stay apart from the application's, and two threads' collectives never share a communicator.
// The first DPT_WORLD_CHANNELS come with init, the rest with add_channels; only ever appended to (under
// the lock), and a deque, so that a channel's entries stay where they are.
extern std::deque<MPI_Comm> channels;
// The window of one-sided reads (open_window) over a communicator of its own; a passive-target epoch to
// every process stays open (MPI_Win_lock_all) from its creation to finalize.
extern MPI_Comm window_comm;
extern MPI_Win window;
// Every MPI call of a collective is made under this lock (MPI_THREAD_SERIALIZED): two channels' collectives
// interleave their polls, and MPI progresses both in either thread's MPI_Test.
extern std::mutex mpi_lock;
// Set once an operation failed or timed out: MPI cannot cancel a collective, so the processes are out of
// step for good; every later call fails at once instead of waiting for peers that will never match it.
extern bool broken;
extern char broken_reason[256];
extern pid_t launcher;  // our parent when MPI started (mpirun or its daemon): if it goes, the job is over

// Marks MPI broken (with error as the reason) when result is a failure; returns result.
int fail(int result, char *error);
// The channel's communicator, or MPI_COMM_NULL with the reason when the call must not start.
MPI_Comm usable(int channel, char *error, size_t size);
void describe(int code, const char *call, char *error, size_t size);
double now();

// Polls a non-blocking operation: a peer that never arrives ends in DPT_WORLD_TIMEOUT instead of a hang.
// (MPI cannot cancel a collective: after a timeout the process should end, as after a NCCL abort.)
// Polls test (an MPI call setting its flag, made under the lock) until the flag is set, the timeout passes
// or the launcher is gone.
template <typename Test>
int poll_until(Test test, double timeout, const char *call, char *error, size_t size) {
  const double deadline = timeout > 0 ? now() + timeout : 0;
  for (long round = 0;; ++round) {
    int done = 0, code = MPI_SUCCESS;
    {
      std::lock_guard<std::mutex> hold(mpi_lock);
      code = test(&done);
    }
    if (code != MPI_SUCCESS) {
      describe(code, call, error, size);
      return DPT_WORLD_FAILED;
    }
    if (done) return DPT_WORLD_OK;
    if (deadline != 0 && now() > deadline) {
      std::snprintf(error, size, "%s did not complete within %.3g s: a process stalled or died", call,
                    timeout);
      return DPT_WORLD_TIMEOUT;
    }
    // Reparented: mpirun (or its daemon) is gone, the job is over and no peer will ever answer.
    if (round % 1024 == 0 && launcher > 1 && getppid() != launcher) {
      std::snprintf(error, size, "%s: the MPI launcher (process %d) has exited; this process ends its job",
                    call, int(launcher));
      return DPT_WORLD_FAILED;
    }
    // Poll hard for a moment (the peers are usually close), then give the core away between polls.
    if (round > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

int wait_for(MPI_Request *request, double timeout, const char *call, char *error, size_t size);

// Starts a non-blocking collective under the lock.
template <class Start>
int start(Start start_call, const char *call, char *error, size_t error_size) {
  int code = MPI_SUCCESS;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    code = start_call();
  }
  if (code == MPI_SUCCESS) return DPT_WORLD_OK;
  describe(code, call, error, error_size);
  return DPT_WORLD_FAILED;
}

// Byte counts of one call: MPI takes int counts (the library keeps them far below 2^31).
int checked_count(size_t bytes, const char *call, char *error, size_t size);

// The reads of one get_start (or the sends of one send_start), in pieces of at most 2^30 bytes (MPI counts
// are int).
struct PendingGet {
  std::vector<MPI_Request> requests;
  const char *call = "MPI_Rget";
};
// Waits for every request (each up to timeout); the first failure is returned.
int finish_requests(PendingGet &pending, double timeout, char *error, size_t error_size);

// The table's entries, by file.
int init(int *rank, int *size, char *error, size_t error_size);
int add_channels(int count, int *first, char *error, size_t error_size);
int add_split_channels(int color, int count, int *first, int *rank, int *size, char *error,
                       size_t error_size);
int finalize(char *error, size_t error_size);
const char *library_version();
int all_reduce_sum(int channel, void *buffer, size_t count, int is_double, double timeout, char *error,
                   size_t error_size);
int broadcast(int channel, void *buffer, size_t bytes, int root, double timeout, char *error,
              size_t error_size);
int all_to_all(int channel, const void *send, void *recv, size_t bytes_per_process, double timeout,
               char *error, size_t error_size);
int all_gather(int channel, const void *send, void *recv, size_t bytes, double timeout, char *error,
               size_t error_size);
int reduce_scatter_sum(int channel, float *buffer, const size_t *counts, double timeout, char *error,
                       size_t error_size);
int open_window(char *error, size_t error_size);
int expose(void *base, size_t bytes, uint64_t *address, char *error, size_t error_size);
int withdraw(void *const *bases, size_t count, double timeout, char *error, size_t error_size);
int get(void *destination, size_t bytes, int process, uint64_t address, double timeout, char *error,
        size_t error_size);
int get_start(void *destination, size_t bytes, int process, uint64_t address, void **pending, char *error,
              size_t error_size);
int get_finish(void *pending, double timeout, char *error, size_t error_size);
int publish(int channel, double timeout, char *error, size_t error_size);
int send_start(int channel, const void *buffer, size_t bytes, int process, int tag, void **pending,
               char *error, size_t error_size);
int send_finish(void *pending, double timeout, int abandon, char *error, size_t error_size);
int receive(int channel, void *buffer, size_t bytes, int process, int tag, double timeout, char *error,
            size_t error_size);
int wait_message(int channel, int process, int tag, double timeout, char *error, size_t error_size);

}  // namespace dpt_mpi
