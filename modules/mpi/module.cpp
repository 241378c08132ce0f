// libdptrain_mpi.so: MPI for libdptrain, behind the plain C interface of comm/world_interface.h. The only
// file of the project that includes <mpi.h>.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "interface/world_interface.h"

namespace {

bool started_here = false;
// The channels (world_interface.h): duplicates of MPI_COMM_WORLD, so that our errors return, our messages
// stay apart from the application's, and two threads' collectives never share a communicator.
// The first DPT_WORLD_CHANNELS come with init, the rest with add_channels; only ever appended to (under
// the lock), and a deque, so that a channel's entries stay where they are.
std::deque<MPI_Comm> channels;
// The window of one-sided reads (open_window) over a communicator of its own; a passive-target epoch to
// every process stays open (MPI_Win_lock_all) from its creation to finalize.
MPI_Comm window_comm = MPI_COMM_NULL;
MPI_Win window = MPI_WIN_NULL;
// Every MPI call of a collective is made under this lock (MPI_THREAD_SERIALIZED): two channels' collectives
// interleave their polls, and MPI progresses both in either thread's MPI_Test.
std::mutex mpi_lock;
// Set once an operation failed or timed out: MPI cannot cancel a collective, so the processes are out of
// step for good; every later call fails at once instead of waiting for peers that will never match it.
bool broken = false;
char broken_reason[256] = "";
pid_t launcher = 0;  // our parent when MPI started (mpirun or its daemon): if it goes, the job is over

int fail(int result, char *error) {
  std::lock_guard<std::mutex> hold(mpi_lock);
  if (result != DPT_WORLD_OK && !broken) {
    broken = true;
    std::snprintf(broken_reason, sizeof broken_reason, "%s", error);
  }
  return result;
}

// The channel's communicator, or MPI_COMM_NULL with the reason when the call must not start.
MPI_Comm usable(int channel, char *error, size_t size) {
  std::lock_guard<std::mutex> hold(mpi_lock);
  if (broken) {
    std::snprintf(error, size, "MPI is unusable in this process after an earlier failure: %s", broken_reason);
    return MPI_COMM_NULL;
  }
  if (channel < 0 || size_t(channel) >= channels.size() || channels[size_t(channel)] == MPI_COMM_NULL) {
    std::snprintf(error, size, "no MPI channel %d (init not called, or an unknown channel)", channel);
    return MPI_COMM_NULL;
  }
  return channels[size_t(channel)];
}

void describe(int code, const char *call, char *error, size_t size) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  int result = MPI_SUCCESS;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    result = MPI_Error_string(code, text, &length);
  }
  if (result != MPI_SUCCESS) std::snprintf(text, sizeof text, "error %d", code);
  std::snprintf(error, size, "%s failed: %s", call, text);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

int wait_for(MPI_Request *request, double timeout, const char *call, char *error, size_t size) {
  return poll_until([&](int *done) { return MPI_Test(request, done, MPI_STATUS_IGNORE); }, timeout, call,
                    error, size);
}

// Appends a channel: a duplicate of MPI_COMM_WORLD, or (color >= 0) of its processes of that color, in
// rank order (collective over every process, blocking).
int duplicate_world(char *error, size_t error_size, int color = -1) {
  MPI_Comm channel = MPI_COMM_NULL;
  int code = MPI_SUCCESS;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    code = color < 0 ? MPI_Comm_dup(MPI_COMM_WORLD, &channel)
                     : MPI_Comm_split(MPI_COMM_WORLD, color, rank, &channel);
    // Errors come back as codes (and so as dptrain statuses) instead of ending the process.
    if (code == MPI_SUCCESS) {
      MPI_Comm_set_errhandler(channel, MPI_ERRORS_RETURN);
      channels.push_back(channel);
    }
  }
  if (code == MPI_SUCCESS) return DPT_WORLD_OK;
  describe(code, color < 0 ? "MPI_Comm_dup" : "MPI_Comm_split", error, error_size);
  return DPT_WORLD_FAILED;
}

int init(int *rank, int *size, char *error, size_t error_size) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    std::snprintf(error, error_size, "MPI has already been finalized in this process");
    return DPT_WORLD_FAILED;
  }
  if (!initialized) {
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) {
      describe(code, "MPI_Init_thread", error, error_size);
      return DPT_WORLD_FAILED;
    }
    started_here = true;
    // MPI reports some errors of non-blocking collectives on MPI_COMM_WORLD (Open MPI: MPI_Test's
    // MPI_ERR_TRUNCATE), whose default handler ends the job: as we own MPI here, make them return.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  }
  while (channels.size() < DPT_WORLD_CHANNELS)
    if (int r = duplicate_world(error, error_size); r != DPT_WORLD_OK) return r;
  MPI_Comm_rank(channels[0], rank);
  MPI_Comm_size(channels[0], size);
  if (*size > 1) launcher = getppid();
  return DPT_WORLD_OK;
}

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

int all_reduce_pieces(MPI_Comm comm, void *buffer, size_t count, int is_double, double timeout, char *error,
                      size_t error_size) {
  // MPI counts are int: large buffers go in pieces of at most 2^30 elements.
  const size_t piece = size_t(1) << 30;
  char *bytes = static_cast<char *>(buffer);
  const size_t element = is_double ? sizeof(double) : sizeof(float);
  for (size_t done = 0; done < count; done += piece) {
    const int n = int(count - done < piece ? count - done : piece);
    MPI_Request request;
    if (int r = start(
            [&] {
              return MPI_Iallreduce(MPI_IN_PLACE, bytes + done * element, n,
                                    is_double ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, comm, &request);
            },
            "MPI_Iallreduce", error, error_size);
        r != DPT_WORLD_OK)
      return r;
    if (int r = wait_for(&request, timeout, "MPI_Iallreduce", error, error_size); r != DPT_WORLD_OK) return r;
  }
  return DPT_WORLD_OK;
}

int all_reduce_sum(int channel, void *buffer, size_t count, int is_double, double timeout, char *error,
                   size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  return fail(all_reduce_pieces(comm, buffer, count, is_double, timeout, error, error_size), error);
}

int broadcast_pieces(MPI_Comm comm, void *buffer, size_t bytes, int root, double timeout, char *error,
                     size_t error_size) {
  const size_t piece = size_t(1) << 30;
  for (size_t done = 0; done < bytes; done += piece) {
    const int n = int(bytes - done < piece ? bytes - done : piece);
    MPI_Request request;
    if (int r = start(
            [&] { return MPI_Ibcast(static_cast<char *>(buffer) + done, n, MPI_BYTE, root, comm, &request); },
            "MPI_Ibcast", error, error_size);
        r != DPT_WORLD_OK)
      return r;
    if (int r = wait_for(&request, timeout, "MPI_Ibcast", error, error_size); r != DPT_WORLD_OK) return r;
  }
  return DPT_WORLD_OK;
}

int broadcast(int channel, void *buffer, size_t bytes, int root, double timeout, char *error,
              size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  return fail(broadcast_pieces(comm, buffer, bytes, root, timeout, error, error_size), error);
}

// Byte counts of one call: MPI takes int counts (the library keeps them far below 2^31).
int checked_count(size_t bytes, const char *call, char *error, size_t size) {
  if (bytes <= size_t(1) << 30) return DPT_WORLD_OK;
  std::snprintf(error, size, "%s: %zu bytes per process is more than one call takes", call, bytes);
  return DPT_WORLD_FAILED;
}

int all_to_all(int channel, const void *send, void *recv, size_t bytes_per_process, double timeout,
               char *error, size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  if (int r = checked_count(bytes_per_process, "MPI_Ialltoall", error, error_size); r != DPT_WORLD_OK)
    return r;
  MPI_Request request;
  const int n = int(bytes_per_process);
  if (int r = start([&] { return MPI_Ialltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm, &request); },
                    "MPI_Ialltoall", error, error_size);
      r != DPT_WORLD_OK)
    return fail(r, error);
  return fail(wait_for(&request, timeout, "MPI_Ialltoall", error, error_size), error);
}

int all_gather(int channel, const void *send, void *recv, size_t bytes, double timeout, char *error,
               size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  if (int r = checked_count(bytes, "MPI_Iallgather", error, error_size); r != DPT_WORLD_OK) return r;
  MPI_Request request;
  const int n = int(bytes);
  if (int r = start([&] { return MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm, &request); },
                    "MPI_Iallgather", error, error_size);
      r != DPT_WORLD_OK)
    return fail(r, error);
  return fail(wait_for(&request, timeout, "MPI_Iallgather", error, error_size), error);
}

int reduce_scatter_sum(int channel, float *buffer, const size_t *counts, double timeout, char *error,
                       size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  int size = 0;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    MPI_Comm_size(comm, &size);
  }
  // MPI may read the counts until the operation completes, which after a timeout is never: they stay, one
  // array per channel.
  static std::deque<std::vector<int>> channel_parts;
  std::vector<int> *at = nullptr;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    if (channel_parts.size() <= size_t(channel)) channel_parts.resize(size_t(channel) + 1);
    at = &channel_parts[size_t(channel)];
  }
  std::vector<int> &parts = *at;
  parts.resize(size_t(size));
  for (int p = 0; p < size; ++p) {
    if (int r = checked_count(counts[p] * sizeof(float), "MPI_Ireduce_scatter", error, error_size);
        r != DPT_WORLD_OK)
      return r;
    parts[size_t(p)] = int(counts[p]);
  }
  MPI_Request request;
  if (int r = start(
          [&] {
            return MPI_Ireduce_scatter(MPI_IN_PLACE, buffer, parts.data(), MPI_FLOAT, MPI_SUM, comm,
                                       &request);
          },
          "MPI_Ireduce_scatter", error, error_size);
      r != DPT_WORLD_OK)
    return fail(r, error);
  return fail(wait_for(&request, timeout, "MPI_Ireduce_scatter", error, error_size), error);
}

int add_channels(int count, int *first, char *error, size_t error_size) {
  if (usable(DPT_WORLD_CHANNEL_MAIN, error, error_size) == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    *first = int(channels.size());
  }
  for (int c = 0; c < count; ++c)
    if (int r = duplicate_world(error, error_size); r != DPT_WORLD_OK) return fail(r, error);
  return DPT_WORLD_OK;
}

int add_split_channels(int color, int count, int *first, int *rank, int *size, char *error,
                       size_t error_size) {
  if (usable(DPT_WORLD_CHANNEL_MAIN, error, error_size) == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  if (color < 0) {
    std::snprintf(error, error_size, "add_split_channels: color %d is negative", color);
    return DPT_WORLD_FAILED;
  }
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    *first = int(channels.size());
  }
  for (int c = 0; c < count; ++c)
    if (int r = duplicate_world(error, error_size, color); r != DPT_WORLD_OK) return fail(r, error);
  std::lock_guard<std::mutex> hold(mpi_lock);
  MPI_Comm_rank(channels[size_t(*first)], rank);
  MPI_Comm_size(channels[size_t(*first)], size);
  return DPT_WORLD_OK;
}

int open_window(char *error, size_t error_size) {
  if (usable(DPT_WORLD_CHANNEL_MAIN, error, error_size) == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  std::lock_guard<std::mutex> hold(mpi_lock);
  if (window != MPI_WIN_NULL) return DPT_WORLD_OK;
  // Blocking collectives (MPI has no non-blocking window creation): every process calls this at the
  // same point, right after the processes agreed on the trainer.
  int code = MPI_Comm_dup(MPI_COMM_WORLD, &window_comm);
  const char *call = "MPI_Comm_dup";
  if (code == MPI_SUCCESS) {
    MPI_Comm_set_errhandler(window_comm, MPI_ERRORS_RETURN);
    call = "MPI_Win_create_dynamic";
    code = MPI_Win_create_dynamic(MPI_INFO_NULL, window_comm, &window);
  }
  if (code == MPI_SUCCESS) {
    MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN);
    call = "MPI_Win_lock_all";
    code = MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
  }
  if (code == MPI_SUCCESS) return DPT_WORLD_OK;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    std::snprintf(text, sizeof text, "error %d", code);
  std::snprintf(error, error_size, "%s failed: %s", call, text);
  return DPT_WORLD_FAILED;
}

// The window, or MPI_WIN_NULL with the reason when a one-sided call must not start.
MPI_Win usable_window(char *error, size_t size) {
  if (usable(DPT_WORLD_CHANNEL_MAIN, error, size) == MPI_COMM_NULL) return MPI_WIN_NULL;
  std::lock_guard<std::mutex> hold(mpi_lock);
  if (window == MPI_WIN_NULL) std::snprintf(error, size, "no MPI window: open_window was not called");
  return window;
}

int expose(void *base, size_t bytes, uint64_t *address, char *error, size_t error_size) {
  *address = 0;
  if (bytes == 0) return DPT_WORLD_OK;
  const MPI_Win win = usable_window(error, error_size);
  if (win == MPI_WIN_NULL) return DPT_WORLD_FAILED;
  MPI_Aint at = 0;
  int code = MPI_SUCCESS;
  {
    std::lock_guard<std::mutex> hold(mpi_lock);
    code = MPI_Win_attach(win, base, MPI_Aint(bytes));
    if (code == MPI_SUCCESS) code = MPI_Get_address(base, &at);
  }
  if (code != MPI_SUCCESS) {
    describe(code, "MPI_Win_attach", error, error_size);
    return DPT_WORLD_FAILED;
  }
  *address = uint64_t(at);
  return DPT_WORLD_OK;
}

int withdraw(void *const *bases, size_t count, double timeout, char *error, size_t error_size) {
  const MPI_Win win = usable_window(error, error_size);
  if (win == MPI_WIN_NULL) return DPT_WORLD_FAILED;
  MPI_Request request;
  int result = start([&] { return MPI_Ibarrier(window_comm, &request); }, "MPI_Ibarrier", error, error_size);
  if (result == DPT_WORLD_OK) result = wait_for(&request, timeout, "MPI_Ibarrier", error, error_size);
  for (size_t i = 0; i < count; ++i) {
    int code = MPI_SUCCESS;
    {
      std::lock_guard<std::mutex> hold(mpi_lock);
      code = MPI_Win_detach(win, bases[i]);
    }
    if (code != MPI_SUCCESS && result == DPT_WORLD_OK) {
      describe(code, "MPI_Win_detach", error, error_size);
      result = DPT_WORLD_FAILED;
    }
  }
  return fail(result, error);
}

// The reads of one get_start (or the sends of one send_start), in pieces of at most 2^30 bytes (MPI counts
// are int).
struct PendingGet {
  std::vector<MPI_Request> requests;
  const char *call = "MPI_Rget";
};

int finish_requests(PendingGet &pending, double timeout, char *error, size_t error_size) {
  int result = DPT_WORLD_OK;
  for (MPI_Request &request : pending.requests)
    if (int r = wait_for(&request, timeout, pending.call, error, error_size);
        r != DPT_WORLD_OK && result == DPT_WORLD_OK)
      result = r;
  return result;
}

// Starts the pieces' reads into pending; on a failed start, waits for those already started.
int start_pieces(MPI_Win win, void *destination, size_t bytes, int process, uint64_t address, double timeout,
                 PendingGet &pending, char *error, size_t error_size) {
  const size_t piece = size_t(1) << 30;
  for (size_t done = 0; done < bytes; done += piece) {
    const int n = int(bytes - done < piece ? bytes - done : piece);
    MPI_Request request;
    if (int r = start(
            [&] {
              return MPI_Rget(static_cast<char *>(destination) + done, n, MPI_BYTE, process,
                              MPI_Aint(address + done), n, MPI_BYTE, win, &request);
            },
            "MPI_Rget", error, error_size);
        r != DPT_WORLD_OK) {
      char ignored[256];
      finish_requests(pending, timeout, ignored, sizeof ignored);
      return r;
    }
    pending.requests.push_back(request);
  }
  return DPT_WORLD_OK;
}

int get(void *destination, size_t bytes, int process, uint64_t address, double timeout, char *error,
        size_t error_size) {
  if (bytes == 0) return DPT_WORLD_OK;
  const MPI_Win win = usable_window(error, error_size);
  if (win == MPI_WIN_NULL) return DPT_WORLD_FAILED;
  PendingGet pending;
  int r = start_pieces(win, destination, bytes, process, address, timeout, pending, error, error_size);
  if (r == DPT_WORLD_OK) r = finish_requests(pending, timeout, error, error_size);
  return fail(r, error);
}

int get_start(void *destination, size_t bytes, int process, uint64_t address, void **pending, char *error,
              size_t error_size) {
  *pending = nullptr;
  if (bytes == 0) return DPT_WORLD_OK;
  const MPI_Win win = usable_window(error, error_size);
  if (win == MPI_WIN_NULL) return DPT_WORLD_FAILED;
  auto started = std::make_unique<PendingGet>();
  // A failed start waits for the pieces already started (no limit: they read local or shared memory, or
  // MPI is broken and fails them).
  const int r = start_pieces(win, destination, bytes, process, address, 0, *started, error, error_size);
  if (r != DPT_WORLD_OK) return fail(r, error);
  *pending = started.release();
  return DPT_WORLD_OK;
}

int get_finish(void *pending, double timeout, char *error, size_t error_size) {
  if (pending == nullptr) return DPT_WORLD_OK;
  std::unique_ptr<PendingGet> owned(static_cast<PendingGet *>(pending));
  return fail(finish_requests(*owned, timeout, error, error_size), error);
}

// Starts MPI_Isend or MPI_Irecv of each piece of bytes into pending; on a failed start, waits for those
// already started (no limit: MPI is broken then and fails them, or they complete).
template <class Post>
int start_messages(size_t bytes, const char *call, PendingGet &pending, Post post, char *error,
                   size_t error_size) {
  pending.call = call;
  const size_t piece = size_t(1) << 30;
  for (size_t done = 0; done < bytes; done += piece) {
    const int n = int(bytes - done < piece ? bytes - done : piece);
    MPI_Request request;
    if (int r = start([&] { return post(done, n, &request); }, call, error, error_size); r != DPT_WORLD_OK) {
      char ignored[256];
      finish_requests(pending, 0, ignored, sizeof ignored);
      return r;
    }
    pending.requests.push_back(request);
  }
  return DPT_WORLD_OK;
}

int send_start(int channel, const void *buffer, size_t bytes, int process, int tag, void **pending,
               char *error, size_t error_size) {
  *pending = nullptr;
  if (bytes == 0) return DPT_WORLD_OK;
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  auto started = std::make_unique<PendingGet>();
  const int r = start_messages(
      bytes, "MPI_Isend", *started,
      [&](size_t done, int n, MPI_Request *request) {
        return MPI_Isend(static_cast<const char *>(buffer) + done, n, MPI_BYTE, process, tag, comm, request);
      },
      error, error_size);
  if (r != DPT_WORLD_OK) return fail(r, error);
  *pending = started.release();
  return DPT_WORLD_OK;
}

// Withdraws the requests still open after a failure or a timeout: a receive must not write into memory its
// caller frees, nor a send read it, once no peer will ever match them (MPI_Cancel; a send already matched
// completes on its own), and frees them.
void withdraw_requests(PendingGet &pending) {
  std::lock_guard<std::mutex> hold(mpi_lock);
  for (MPI_Request &request : pending.requests)
    if (request != MPI_REQUEST_NULL) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
}

int send_finish(void *pending, double timeout, int abandon, char *error, size_t error_size) {
  if (pending == nullptr) return DPT_WORLD_OK;
  std::unique_ptr<PendingGet> owned(static_cast<PendingGet *>(pending));
  const int r = abandon == 0 ? finish_requests(*owned, timeout, error, error_size) : DPT_WORLD_OK;
  if (abandon != 0 || r != DPT_WORLD_OK) withdraw_requests(*owned);
  return abandon != 0 ? DPT_WORLD_OK : fail(r, error);
}

int receive(int channel, void *buffer, size_t bytes, int process, int tag, double timeout, char *error,
            size_t error_size) {
  if (bytes == 0) return DPT_WORLD_OK;
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  PendingGet pending;
  int r = start_messages(
      bytes, "MPI_Irecv", pending,
      [&](size_t done, int n, MPI_Request *request) {
        return MPI_Irecv(static_cast<char *>(buffer) + done, n, MPI_BYTE, process, tag, comm, request);
      },
      error, error_size);
  if (r == DPT_WORLD_OK) r = finish_requests(pending, timeout, error, error_size);
  if (r != DPT_WORLD_OK) withdraw_requests(pending);
  return fail(r, error);
}

int wait_message(int channel, int process, int tag, double timeout, char *error, size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  return fail(poll_until([&](int *there) { return MPI_Iprobe(process, tag, comm, there, MPI_STATUS_IGNORE); },
                         timeout, "MPI_Iprobe", error, error_size),
              error);
}

int publish(int channel, double timeout, char *error, size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  const MPI_Win win = usable_window(error, error_size);
  if (win == MPI_WIN_NULL) return DPT_WORLD_FAILED;
  MPI_Request request;
  // The window's public and private copies agree (a no-op where memory is unified), then nobody reads
  // before everybody has written.
  if (int r = start(
          [&] {
            const int code = MPI_Win_sync(win);
            return code != MPI_SUCCESS ? code : MPI_Ibarrier(comm, &request);
          },
          "MPI_Win_sync and MPI_Ibarrier", error, error_size);
      r != DPT_WORLD_OK)
    return fail(r, error);
  return fail(wait_for(&request, timeout, "MPI_Ibarrier", error, error_size), error);
}

int finalize(char *error, size_t error_size) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return DPT_WORLD_OK;
  // MPI_Finalize may wait for the peers a failed collective is still pending with. Exiting without it
  // makes the launcher end the whole job, which is what a broken job needs.
  if (broken) {
    std::snprintf(error, error_size, "MPI_Finalize skipped after an earlier failure (%s)", broken_reason);
    return DPT_WORLD_FAILED;
  }
  if (window != MPI_WIN_NULL) {
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
    MPI_Comm_free(&window_comm);
  }
  for (MPI_Comm &channel : channels)
    if (channel != MPI_COMM_NULL) MPI_Comm_free(&channel);
  if (!started_here) return DPT_WORLD_OK;
  const int code = MPI_Finalize();
  if (code != MPI_SUCCESS) {
    describe(code, "MPI_Finalize", error, error_size);
    return DPT_WORLD_FAILED;
  }
  return DPT_WORLD_OK;
}

const char *library_version() {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (text[0] == '\0') MPI_Get_library_version(text, &length);
  char *newline = std::strchr(text, '\n');
  if (newline != nullptr) *newline = '\0';
  return text;
}

const dpt_world_v1 kWorld = {DPT_WORLD_ABI_VERSION,
                             sizeof(dpt_world_v1),
                             init,
                             all_reduce_sum,
                             broadcast,
                             finalize,
                             library_version,
                             all_to_all,
                             all_gather,
                             reduce_scatter_sum,
                             open_window,
                             expose,
                             withdraw,
                             get,
                             publish,
                             add_channels,
                             get_start,
                             get_finish,
                             send_start,
                             send_finish,
                             receive,
                             add_split_channels,
                             wait_message};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dpt_world_v1 *dptrain_mpi_world_v1(void) {
  return &kWorld;
}
