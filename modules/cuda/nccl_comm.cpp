#include "cuda/nccl_comm.hpp"

#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda/context.hpp"
#include "cuda/nccl_state.hpp"
#include "cuda/nccl_wire16.hpp"

namespace dpt::cuda {

namespace {

std::string rank_names(const int *ordinals, int count) {
  std::string text = "cuda:";
  for (int r = 0; r < count; ++r) {
    if (r > 0) text += ',';
    text += std::to_string(ordinals[r]);
  }
  return text;
}

// Enqueues the grouped float32 all-reduce and, on each rank's stream, its completion event.
int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
            float *const *buffers, const size_t *counts, const Error &e) {
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
  status = queue_all_reduces(c, contexts, buffer_count, buffers, counts, &dpt_backend_context::stream);
  return end_group(c, status, "ncclAllReduce", contexts, e);
}

// Every ordinal names a device of this process, none twice.
int check_ordinals(const int *ordinals, int count, const char *ranks, const char *call, const Error &e) {
  int devices = 0;
  const cudaError_t s = cudaGetDeviceCount(&devices);
  if (s != cudaSuccess) return cuda_failed(e, ordinals[0], "cudaGetDeviceCount", s);
  for (int r = 0; r < count; ++r) {
    if (ordinals[r] < 0 || ordinals[r] >= devices)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: no device cuda:%d (%d CUDA devices)",
                    ranks, call, ordinals[r], devices);
    for (int q = 0; q < r; ++q)
      if (ordinals[q] == ordinals[r])
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                      "%s: %s: cuda:%d appears twice; NCCL needs distinct GPUs (replicas on one GPU: "
                      "virtual_all_reduce)",
                      ranks, call, ordinals[r]);
  }
  return 0;
}

}  // namespace

ncclResult_t queue_all_reduces(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                               float *const *buffers, const size_t *counts, StreamOf on) {
  ncclResult_t status = ncclSuccess;
  for (size_t r = 0; r < c.comms.size() && status == ncclSuccess; ++r) {
    if (int(r) == c.hang_rank) continue;
    for (size_t b = 0; b < buffer_count && status == ncclSuccess; ++b) {
      if (counts[b] == 0) continue;
      float *buffer = buffers[r * buffer_count + b];
      status = ncclAllReduce(buffer, buffer, counts[b], ncclFloat, ncclSum, c.comms[r], contexts[r]->*on);
    }
  }
  return status;
}

// Aborts every rank: NCCL kernels still waiting for a peer end, the communicator is unusable.
void abort_all(dpt_backend_comm &c) {
  for (size_t r = 0; r < c.comms.size(); ++r) {
    if (c.comms[r] == nullptr) continue;
    DeviceGuard guard(c.ordinals[r]);
    ncclCommAbort(c.comms[r]);
    c.comms[r] = nullptr;
  }
  c.aborted = true;
  cudaGetLastError();
}

int check_contexts(const dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, call);
  if (contexts == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (contexts[r] == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL context of rank %zu", ranks, call,
                    r);
    if (contexts[r]->ordinal != c.ordinals[r])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: %s: the context of rank %zu is on cuda:%d, the rank on cuda:%d", ranks, call, r,
                    contexts[r]->ordinal, c.ordinals[r]);
  }
  return 0;
}

int check_ranks(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                float *const *buffers, const size_t *counts, const char *call, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted) return check_contexts(c, contexts, call, e);  // (which says so)
  if (buffer_count == 0) return 0;
  if (buffers == nullptr || counts == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  if (const int rc = check_contexts(c, contexts, call, e)) return rc;
  for (size_t r = 0; r < c.ordinals.size(); ++r)
    for (size_t b = 0; b < buffer_count; ++b)
      if (counts[b] > 0 && buffers[r * buffer_count + b] == nullptr)
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL buffer %zu of rank %zu", ranks,
                      call, b, r);
  return 0;
}

// Waits for every rank's event; checks NCCL's asynchronous errors and the deadline on the way.
int wait_for_ranks(dpt_backend_comm &c, dpt_backend_context *const *contexts, double timeout_seconds,
                   const char *what, const Error &e) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const size_t n = c.comms.size();
  std::vector<bool> done(n, false);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    bool all_done = true;
    for (size_t r = 0; r < n; ++r) {
      if (done[r]) continue;
      ncclResult_t async = ncclSuccess;
      const ncclResult_t status = ncclCommGetAsyncError(c.comms[r], &async);
      if (status != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        char ranks[32];
        std::snprintf(ranks, sizeof ranks, "cuda:%d", c.ordinals[r]);
        char call[96];
        std::snprintf(call, sizeof call, "%s (ncclCommGetAsyncError)", what);
        const int rc = nccl_failed(e, ranks, call, status != ncclSuccess ? status : async, c.comms[r]);
        abort_all(c);
        return rc;
      }
      // The left-out rank of comm_inject_hang has no event of this call: it never counts as done.
      const cudaError_t q = int(r) == c.hang_rank ? cudaErrorNotReady : cudaEventQuery(contexts[r]->event);
      if (q == cudaSuccess) {
        done[r] = true;
      } else if (q == cudaErrorNotReady) {
        all_done = false;
      } else {
        char call[96];
        std::snprintf(call, sizeof call, "cudaEventQuery after %s", what);
        const int rc = cuda_failed(e, c.ordinals[r], call, q);
        abort_all(c);
        return rc;
      }
    }
    if (all_done) return 0;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > timeout_seconds) {
      std::string late;
      for (size_t r = 0; r < n; ++r)
        if (!done[r]) {
          late += late.empty() ? "cuda:" : ",";
          late += std::to_string(c.ordinals[r]);
        }
      const std::string ranks = c.ranks;
      abort_all(c);
      return report(
          e, DPT_BACKEND_ERROR_COMMUNICATION,
          "%s: %s did not finish within %g s (not finished: %s): ncclCommAbort called, the communicator "
          "is unusable",
          ranks.c_str(), what, timeout_seconds, late.c_str());
    }
    // Short pauses first (a small all-reduce takes microseconds), then at most 1 ms.
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
  }
}

int close_group(dpt_backend_comm &c, ncclResult_t status, const char *call, const Error &e) {
  const ncclResult_t end = ncclGroupEnd();  // always closes the group, also after a failed call
  if (status == ncclSuccess) status = end;
  if (status == ncclSuccess) return 0;
  const int rc = nccl_failed(e, c.ranks.c_str(), call, status, nullptr);
  abort_all(c);
  return rc;
}

int end_group(dpt_backend_comm &c, ncclResult_t status, const char *call,
              dpt_backend_context *const *contexts, const Error &e) {
  if (const int rc = close_group(c, status, call, e)) return rc;
  return record_events(c, contexts, e);
}

// Records each rank's completion event after what the all-reduce enqueued on its stream.
int record_events(dpt_backend_comm &c, dpt_backend_context *const *contexts, const Error &e) {
  for (size_t r = 0; r < c.comms.size(); ++r) {
    const int ordinal = c.ordinals[r];
    DeviceGuard guard(ordinal);
    const cudaError_t s = cudaEventRecord(contexts[r]->event, contexts[r]->stream);
    if (s != cudaSuccess) {
      const int rc = cuda_failed(e, ordinal, "cudaEventRecord", s);
      abort_all(c);
      return rc;
    }
  }
  return 0;
}

int comm_create(int count, const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_create: NULL output pointer");
  *out = nullptr;
  if (count < 1 || ordinals == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "comm_create: %d ranks (at least 1, with their ordinals)", count);
  try {
    auto c = std::make_unique<dpt_backend_comm>();
    c->ranks = rank_names(ordinals, count);
    const char *ranks = c->ranks.c_str();
    if (const int rc = check_ordinals(ordinals, count, ranks, "comm_create", e)) return rc;
    c->ordinals.assign(ordinals, ordinals + count);
    c->comms.assign(size_t(count), nullptr);
    c->world = count;
    DeviceGuard guard(ordinals[0]);  // restores the caller's device, whichever NCCL leaves current
    const ncclResult_t status = ncclCommInitAll(c->comms.data(), count, ordinals);
    if (status != ncclSuccess) {
      c->comms.assign(size_t(count), nullptr);  // on failure NCCL leaves nothing to destroy
      return nccl_failed(e, ranks, "ncclCommInitAll", status, nullptr);
    }
    *out = c.release();
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "comm_create: out of host memory");
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "comm_create: unexpected C++ exception");
  }
}

void comm_destroy(dpt_backend_comm *comm) {
  if (comm == nullptr) return;
  // Started collectives that no wait ended (a step that failed between) may wait for a peer forever:
  // ncclCommAbort ends them, where ncclCommDestroy would wait.
  for (size_t r = 0; r < comm->comms.size(); ++r) {
    DeviceGuard guard(comm->ordinals[r]);
    if (comm->comms[r] != nullptr)
      comm->started ? ncclCommAbort(comm->comms[r]) : ncclCommDestroy(comm->comms[r]);
  }
  for (size_t r = 0; r < comm->started_events.size(); ++r) {
    DeviceGuard guard(comm->ordinals[r]);
    for (cudaEvent_t event : comm->started_events[r]) cudaEventDestroy(event);
  }
  free_wire16_staging(*comm);
  cudaGetLastError();
  delete comm;
}

int comm_all_reduce(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire_dtype, double timeout_seconds,
                    char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_reduce: NULL communicator");
  if (wire_dtype != DPT_DTYPE_F32 && wire_dtype != DPT_DTYPE_BF16 && wire_dtype != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: comm_all_reduce: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", comm->ranks.c_str(),
                  int(wire_dtype));
  if (const int rc = check_ranks(*comm, contexts, buffer_count, buffers, counts, "comm_all_reduce", e))
    return rc;
  if (buffer_count == 0) return 0;
  const bool f32 = wire_dtype == DPT_DTYPE_F32;
  return run_collective(
      *comm, contexts, "comm_all_reduce",
      f32 ? "ncclAllReduce" : "the 16-bit all-reduce (ncclSend/ncclRecv, ncclAllGather)", timeout_seconds,
      [&] {
        return f32 ? enqueue(*comm, contexts, buffer_count, buffers, counts, e)
                   : enqueue_wire16(*comm, contexts, buffer_count, buffers, counts, wire_dtype, e);
      },
      e);
}

int comm_inject_hang(dpt_backend_comm *comm, int rank, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_inject_hang: NULL communicator");
  if (rank < -1 || rank >= int(comm->ordinals.size()))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_inject_hang: no rank %d",
                  comm->ranks.c_str(), rank);
  comm->hang_rank = rank;
  return 0;
}

int nccl_unique_id(char *id, char *error, size_t error_size) {
  static_assert(sizeof(ncclUniqueId) == DPT_BACKEND_NCCL_ID_BYTES, "the NCCL unique id changed size");
  const Error e{error, error_size};
  if (id == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "nccl_unique_id: NULL id");
  ncclUniqueId unique{};
  const ncclResult_t status = ncclGetUniqueId(&unique);
  if (status != ncclSuccess) return nccl_failed(e, "nccl", "ncclGetUniqueId", status, nullptr);
  std::memcpy(id, &unique, sizeof unique);
  return 0;
}

int comm_create_multi(const char *id, int world_ranks, int first_rank, int local_count, const int *ordinals,
                      dpt_backend_comm **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_create_multi: NULL output pointer");
  *out = nullptr;
  if (id == nullptr || ordinals == nullptr || local_count < 1 || first_rank < 0 ||
      world_ranks < local_count || first_rank > world_ranks - local_count)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "comm_create_multi: local ranks %d .. %d of %d (at least 1, within the world, with the id "
                  "and the ordinals)",
                  first_rank, first_rank + local_count - 1, world_ranks);
  try {
    auto c = std::make_unique<dpt_backend_comm>();
    c->ranks = rank_names(ordinals, local_count) + " (ranks " + std::to_string(first_rank) + ".." +
               std::to_string(first_rank + local_count - 1) + " of " + std::to_string(world_ranks) + ")";
    const char *ranks = c->ranks.c_str();
    if (const int rc = check_ordinals(ordinals, local_count, ranks, "comm_create_multi", e)) return rc;
    ncclUniqueId unique;
    std::memcpy(&unique, id, sizeof unique);
    c->ordinals.assign(ordinals, ordinals + local_count);
    c->comms.assign(size_t(local_count), nullptr);
    c->world = world_ranks;
    c->first_rank = first_rank;
    DeviceGuard guard(ordinals[0]);  // restores the caller's device, whichever NCCL leaves current
    ncclResult_t status = ncclGroupStart();
    if (status != ncclSuccess) return nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
    int failed = -1;  // the local rank whose call failed
    const char *call = "ncclGroupEnd (ncclCommInitRank)";
    cudaError_t device_status = cudaSuccess;
    for (int r = 0; r < local_count; ++r) {
      // ncclCommInitRank binds the rank to the current device.
      device_status = cudaSetDevice(ordinals[r]);
      if (device_status != cudaSuccess) {
        failed = r;
        break;
      }
      status = ncclCommInitRank(&c->comms[r], world_ranks, unique, first_rank + r);
      if (status != ncclSuccess) {
        failed = r;
        call = "ncclCommInitRank";
        break;
      }
    }
    const ncclResult_t end = ncclGroupEnd();  // always closes the group, also after a failed call
    if (status == ncclSuccess) status = end;
    if (status != ncclSuccess || device_status != cudaSuccess) {
      char where[96];
      if (failed >= 0)
        std::snprintf(where, sizeof where, "cuda:%d (rank %d of %d)", ordinals[failed], first_rank + failed,
                      world_ranks);
      else
        std::snprintf(where, sizeof where, "%s", ranks);
      const int rc = device_status != cudaSuccess
                         ? cuda_failed(e, ordinals[failed], "cudaSetDevice", device_status)
                         : nccl_failed(e, where, call, status, nullptr);
      // A grouped init that failed may leave communicators in an error state: ncclCommAbort frees them.
      for (int r = 0; r < local_count; ++r) {
        if (c->comms[r] == nullptr) continue;
        DeviceGuard rank_guard(ordinals[r]);
        ncclCommAbort(c->comms[r]);
      }
      c->comms.assign(size_t(local_count), nullptr);
      cudaGetLastError();
      return rc;
    }
    *out = c.release();
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "comm_create_multi: out of host memory");
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "comm_create_multi: unexpected C++ exception");
  }
}

}  // namespace dpt::cuda
