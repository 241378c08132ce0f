// Starting MPI (or joining the application's), the channels, and finalizing.
#include <cstring>

#include "mpi/state.hpp"

namespace dpt_mpi {

namespace {

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

}  // namespace

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

}  // namespace dpt_mpi
