// comm_exchange: sends and receives between the ranks of a communicator, one ncclSend or ncclRecv per
// message, every message of every local rank in one NCCL group (so that two ranks that each send to and
// receive from the other cannot deadlock), then the same wait as the all-reduce (nccl_comm.cpp): completion
// events, asynchronous errors, the deadline. comm_exchange_start: the same group on the communication
// streams, ended by comm_join_started / comm_wait_started (nccl_started.cpp).
#include <nccl.h>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

namespace {

constexpr const char *kCall = "comm_exchange";

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts,
          const dpt_backend_message *messages, size_t message_count, const char *call, const Error &e) {
  if (const int rc = check_contexts(c, contexts, call, e)) return rc;
  const char *ranks = c.ranks.c_str();
  if (messages == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  for (size_t m = 0; m < message_count; ++m) {
    const dpt_backend_message &msg = messages[m];
    if (msg.local_rank < 0 || size_t(msg.local_rank) >= c.ordinals.size() || msg.peer < 0 ||
        msg.peer >= c.world || msg.peer == c.first_rank + msg.local_rank)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: %s: message %zu from local rank %d to rank %d (%zu local ranks, %d in all; not to "
                    "itself)",
                    ranks, call, m, int(msg.local_rank), int(msg.peer), c.ordinals.size(), c.world);
    if (msg.data == nullptr && msg.count > 0)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: message %zu has a NULL buffer", ranks,
                    call, m);
  }
  return 0;
}

// Every message's ncclSend or ncclRecv on its rank's stream `on`, inside an open NCCL group (the rank
// comm_inject_hang left out skipped); the first failed call's status.
ncclResult_t queue_messages(dpt_backend_comm &c, dpt_backend_context *const *contexts,
                            const dpt_backend_message *messages, size_t message_count, StreamOf on) {
  ncclResult_t status = ncclSuccess;
  for (size_t m = 0; m < message_count && status == ncclSuccess; ++m) {
    const dpt_backend_message &msg = messages[m];
    if (msg.local_rank == c.hang_rank || msg.count == 0) continue;
    const size_t r = size_t(msg.local_rank);
    cudaStream_t stream = contexts[r]->*on;
    status = msg.receive != 0 ? ncclRecv(msg.data, msg.count, ncclFloat, msg.peer, c.comms[r], stream)
                              : ncclSend(msg.data, msg.count, ncclFloat, msg.peer, c.comms[r], stream);
  }
  return status;
}

int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, const dpt_backend_message *messages,
            size_t message_count, const Error &e) {
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
  status = queue_messages(c, contexts, messages, message_count, &dpt_backend_context::stream);
  return end_group(c, status, "ncclSend/ncclRecv", contexts, e);
}

struct StartArguments {
  dpt_backend_comm *c;
  dpt_backend_context *const *contexts;
  const dpt_backend_message *messages;
  size_t message_count;
};

ncclResult_t queue_started(void *arguments) {
  const StartArguments &a = *static_cast<const StartArguments *>(arguments);
  return queue_messages(*a.c, a.contexts, a.messages, a.message_count, &dpt_backend_context::comm_stream);
}

}  // namespace

int comm_exchange(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                  const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                  char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kCall);
  if (message_count == 0) return 0;
  if (const int rc = check(*comm, contexts, messages, message_count, kCall, e)) return rc;
  return run_collective(
      *comm, contexts, kCall, "ncclSend/ncclRecv (the exchange)", timeout_seconds,
      [&] { return enqueue(*comm, contexts, messages, message_count, e); }, e);
}

int comm_exchange_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                        const dpt_backend_message *messages, size_t message_count, char *error,
                        size_t error_size) {
  const Error e{error, error_size};
  const char *call = "comm_exchange_start";
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  if (message_count == 0) return 0;
  if (const int rc = check(*comm, contexts, messages, message_count, call, e)) return rc;
  StartArguments arguments{comm, contexts, messages, message_count};
  return start_collective(*comm, contexts, call, &queue_started, &arguments, e);
}

}  // namespace dpt::cuda
