// What a NCCL communicator of the module holds (backend interface: dpt_backend_comm), shared by its
// collectives (nccl_comm.cpp, nccl_wire16.cpp, nccl_f64.cpp, nccl_gather.cpp, nccl_reduce*.cpp,
// nccl_started.cpp), and the
// steps they all end with.
#pragma once

#include <nccl.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "cuda/context.hpp"
#include "cuda/status.hpp"
#include "interface/backend_interface.h"

struct dpt_backend_comm {
  std::vector<int> ordinals;      // local rank r is on GPU ordinals[r]
  std::vector<ncclComm_t> comms;  // one per local rank
  std::string ranks;              // "cuda:0,1", for messages
  int world = 0;                  // ranks of the communicator, in every process
  int first_rank = 0;             // global rank of local rank 0
  // The 16-bit all-reduce's device memory per local rank: 2 * capacity 16-bit values (the wire's K regions,
  // then the K received slots), grown on demand, freed by comm_destroy.
  std::vector<uint16_t *> staging;
  std::vector<size_t> staging_capacity;
  bool aborted = false;
  int hang_rank = -1;  // comm_inject_hang: the rank the next all-reduce leaves out
  // The starts (comm_*_start) since the last comm_wait_started; per local rank, an event recorded on its
  // communication stream after each of them (created on first need, kept for the next window).
  size_t started = 0;
  std::vector<std::vector<cudaEvent_t>> started_events;
};

namespace dpt::cuda {

// Aborts every rank: NCCL kernels still waiting for a peer end, the communicator is unusable.
void abort_all(dpt_backend_comm &c);
// Records each rank's completion event after what the all-reduce enqueued on its stream (the wait polls
// them); a failure aborts the communicator.
int record_events(dpt_backend_comm &c, dpt_backend_context *const *contexts, const Error &e);
// Closes the NCCL group a collective's calls were enqueued in (status: the first failed call's, else
// ncclSuccess); a failure, of a call or of the group's end, is reported as `call`'s and aborts the
// communicator.
int close_group(dpt_backend_comm &c, ncclResult_t status, const char *call, const Error &e);
// close_group, then each rank's completion event recorded (record_events).
int end_group(dpt_backend_comm &c, ncclResult_t status, const char *call,
              dpt_backend_context *const *contexts, const Error &e);
// A collective's contexts checked (`call` names it): a communicator not aborted, every rank's context on
// its GPU.
int check_contexts(const dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   const Error &e);
// comm_all_reduce's arguments checked: check_contexts (with buffers), no NULL array or non-empty buffer.
int check_ranks(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                float *const *buffers, const size_t *counts, const char *call, const Error &e);
// Waits for every rank's event; checks NCCL's asynchronous errors and the deadline on the way (what: the
// collective, for messages). A failure or the deadline aborts the communicator.
int wait_for_ranks(dpt_backend_comm &c, dpt_backend_context *const *contexts, double timeout_seconds,
                   const char *what, const Error &e);
constexpr double kDefaultTimeoutSeconds = 300.0;

// Which of a context's streams a collective's NCCL calls go on.
using StreamOf = cudaStream_t dpt_backend_context::*;

// comm_all_reduce's float32 ncclAllReduce of every rank's buffers, on each context's stream `on`, inside an
// open NCCL group (the rank comm_inject_hang left out skipped); the first failed call's status.
ncclResult_t queue_all_reduces(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                               float *const *buffers, const size_t *counts, StreamOf on);
// comm_reduce_ranges' float32 ncclReduce of every non-empty part to its owner, likewise.
ncclResult_t queue_reduces(dpt_backend_comm &c, dpt_backend_context *const *contexts,
                           const float *const *sends, float *const *recvs, const size_t *bounds, StreamOf on);
// Each context's stream ordered after the starts since the last wait but the last `keep` (comm_join_started;
// a collective of the communicator queued on the streams first joins them all: NCCL does not promise that
// collectives of one communicator on two streams progress when the ranks may run them in different orders).
// A failure aborts the communicator.
int join_started(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t keep, const char *call,
                 const Error &e);
// A start (nccl_started.cpp): every rank's communication stream ordered after its context's stream, queue()
// (the NCCL calls on the communication streams) in one group, then the start's event recorded on each
// communication stream. A failure is reported as `call`'s and aborts the communicator.
int start_collective(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                     ncclResult_t (*queue)(void *), void *arguments, const Error &e);
// The steps of a start around a sequence of its own (a 16-bit wire's kernels and NCCL groups): every rank's
// communication stream ordered after its context's stream, then the start's event (record_started).
int order_for_start(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                    const Error &e);
int record_started(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   const Error &e);
// A start of a sequence of its own: order_for_start, enqueue() (its work on the communication streams; a
// code), record_started; C++ exceptions become codes naming `call`. The staging of a 16-bit wire is taken
// whole by every start (a rank's starts run in order on its communication stream) and grown only by the
// first since a wait (ensure_wire16_staging refuses while starts hold it).
template <class Enqueue>
int start_sequence(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   Enqueue enqueue, const Error &e) {
  try {
    DeviceGuard guard(c.ordinals[0]);  // restores the caller's device, whichever NCCL leaves current
    if (const int rc = order_for_start(c, contexts, call, e)) return rc;
    if (const int rc = enqueue()) return rc;
    return record_started(c, contexts, call, e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", c.ranks.c_str(), call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", c.ranks.c_str(), call);
  }
}

// A collective entry's common body, its arguments checked: the caller's device restored afterwards (NCCL
// leaves another current), the default timeout, enqueue() (the NCCL calls and the ranks' completion events;
// a code), the wait for every rank (`what` names the collective in its messages), the test seam's left-out
// rank cleared; C++ exceptions become codes naming `call`.
template <class Enqueue>
int run_collective(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   const char *what, double timeout_seconds, Enqueue enqueue, const Error &e) {
  try {
    DeviceGuard guard(c.ordinals[0]);
    if (!(timeout_seconds > 0.0) || !std::isfinite(timeout_seconds)) timeout_seconds = kDefaultTimeoutSeconds;
    int rc = join_started(c, contexts, 0, call, e);
    if (rc == 0) rc = enqueue();
    if (rc == 0) rc = wait_for_ranks(c, contexts, timeout_seconds, what, e);
    c.hang_rank = -1;
    return rc;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", c.ranks.c_str(), call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", c.ranks.c_str(), call);
  }
}

}  // namespace dpt::cuda
