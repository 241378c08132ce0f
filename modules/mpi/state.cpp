// The state of MPI in this process and the helpers every entry uses (state.hpp).
#include <cstring>

#include "mpi/state.hpp"

namespace dpt_mpi {

// (state.hpp says what each is.)
bool started_here = false;
std::deque<MPI_Comm> channels;
MPI_Comm window_comm = MPI_COMM_NULL;
MPI_Win window = MPI_WIN_NULL;
std::mutex mpi_lock;
bool broken = false;
char broken_reason[256] = "";
pid_t launcher = 0;

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

int wait_for(MPI_Request *request, double timeout, const char *call, char *error, size_t size) {
  return poll_until([&](int *done) { return MPI_Test(request, done, MPI_STATUS_IGNORE); }, timeout, call,
                    error, size);
}

int checked_count(size_t bytes, const char *call, char *error, size_t size) {
  if (bytes <= size_t(1) << 30) return DPT_WORLD_OK;
  std::snprintf(error, size, "%s: %zu bytes per process is more than one call takes", call, bytes);
  return DPT_WORLD_FAILED;
}

int finish_requests(PendingGet &pending, double timeout, char *error, size_t error_size) {
  int result = DPT_WORLD_OK;
  for (MPI_Request &request : pending.requests)
    if (int r = wait_for(&request, timeout, pending.call, error, error_size);
        r != DPT_WORLD_OK && result == DPT_WORLD_OK)
      result = r;
  return result;
}

}  // namespace dpt_mpi
