// The collectives on a channel: all-reduce, broadcast, all-to-all, all-gather, reduce-scatter, each
// non-blocking and polled under the timeout.
#include "mpi/state.hpp"

namespace dpt_mpi {

namespace {

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

}  // namespace

int all_reduce_sum(int channel, void *buffer, size_t count, int is_double, double timeout, char *error,
                   size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  return fail(all_reduce_pieces(comm, buffer, count, is_double, timeout, error, error_size), error);
}

int broadcast(int channel, void *buffer, size_t bytes, int root, double timeout, char *error,
              size_t error_size) {
  const MPI_Comm comm = usable(channel, error, error_size);
  if (comm == MPI_COMM_NULL) return DPT_WORLD_FAILED;
  return fail(broadcast_pieces(comm, buffer, bytes, root, timeout, error, error_size), error);
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

}  // namespace dpt_mpi
