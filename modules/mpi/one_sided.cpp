// The window of one-sided reads: open, expose and withdraw memory, reads (whole or started and finished
// apart), and publish (the exposed values final before anyone reads).
#include "mpi/state.hpp"

namespace dpt_mpi {

namespace {

// The window, or MPI_WIN_NULL with the reason when a one-sided call must not start.
MPI_Win usable_window(char *error, size_t size) {
  if (usable(DPT_WORLD_CHANNEL_MAIN, error, size) == MPI_COMM_NULL) return MPI_WIN_NULL;
  std::lock_guard<std::mutex> hold(mpi_lock);
  if (window == MPI_WIN_NULL) std::snprintf(error, size, "no MPI window: open_window was not called");
  return window;
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

}  // namespace

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

}  // namespace dpt_mpi
