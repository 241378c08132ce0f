// Point-to-point messages between two processes: sends started and finished apart, receives, and the
// wait for a message to arrive.
#include <memory>

#include "mpi/state.hpp"

namespace dpt_mpi {

namespace {

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

}  // namespace

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

}  // namespace dpt_mpi
