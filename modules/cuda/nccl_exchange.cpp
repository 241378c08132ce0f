// comm_exchange: sends and receives between the ranks of a communicator, one ncclSend or ncclRecv per
// message, every message of every local rank in one NCCL group (so that two ranks that each send to and
// receive from the other cannot deadlock), then the same wait as the all-reduce (nccl_comm.cpp): completion
// events, asynchronous errors, the deadline.
#include <nccl.h>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

namespace {

constexpr const char *kCall = "comm_exchange";

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts,
          const dpt_backend_message *messages, size_t message_count, const Error &e) {
  if (const int rc = check_contexts(c, contexts, kCall, e)) return rc;
  const char *ranks = c.ranks.c_str();
  if (messages == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, kCall);
  for (size_t m = 0; m < message_count; ++m) {
    const dpt_backend_message &msg = messages[m];
    if (msg.local_rank < 0 || size_t(msg.local_rank) >= c.ordinals.size() || msg.peer < 0 ||
        msg.peer >= c.world || msg.peer == c.first_rank + msg.local_rank)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: %s: message %zu from local rank %d to rank %d (%zu local ranks, %d in all; not to "
                    "itself)",
                    ranks, kCall, m, int(msg.local_rank), int(msg.peer), c.ordinals.size(), c.world);
    if (msg.data == nullptr && msg.count > 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: message %zu has a NULL buffer", ranks,
                    kCall, m);
  }
  return 0;
}

int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, const dpt_backend_message *messages,
            size_t message_count, const Error &e) {
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
  for (size_t m = 0; m < message_count && status == ncclSuccess; ++m) {
    const dpt_backend_message &msg = messages[m];
    if (msg.local_rank == c.hang_rank || msg.count == 0) continue;
    const size_t r = size_t(msg.local_rank);
    status = msg.receive != 0
                 ? ncclRecv(msg.data, msg.count, ncclFloat, msg.peer, c.comms[r], contexts[r]->stream)
                 : ncclSend(msg.data, msg.count, ncclFloat, msg.peer, c.comms[r], contexts[r]->stream);
  }
  return end_group(c, status, "ncclSend/ncclRecv", contexts, e);
}

}  // namespace

int comm_exchange(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                  const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                  char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kCall);
  if (message_count == 0) return 0;
  if (const int rc = check(*comm, contexts, messages, message_count, e)) return rc;
  return run_collective(
      *comm, contexts, kCall, "ncclSend/ncclRecv (the exchange)", timeout_seconds,
      [&] { return enqueue(*comm, contexts, messages, message_count, e); }, e);
}

}  // namespace dpt::cuda
