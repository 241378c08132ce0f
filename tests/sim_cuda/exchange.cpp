// comm_exchange: stands in for NCCL's grouped ncclSend / ncclRecv. It runs the work queued on every rank's
// context, takes a copy of everything sent (a receive buffer may overlap a send), then pairs each receive
// with the send its peer lists for it (the messages between two ranks in the order both list them): within
// the process directly; across processes through the board (process_board.hpp), a round at a time, each
// rank putting the next chunk of its next message to another process on its slot behind a small header
// (its receiver, the chunk's floats, whether more follows), every process taking the chunks addressed to
// its ranks; the rounds go on until no rank has more. A receive left unfilled, or a message nobody
// expected, is NCCL's hang: the call waits out its timeout and aborts. comm_inject_hang leaves its rank's
// messages out. Unlike NCCL, across processes every process of the job must call it (with no message of
// its own too): the board's rounds count every rank.
//
// comm_exchange_start queues the same as a start (started.cpp): the join or the wait that finishes it
// copies what is sent then, after the starts before it have written their results (the communication
// stream's order: a piece reduced by a started reduce, then sent on), and delivers it; unlike the other
// starts it does not check the sent buffers for writes in between.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

constexpr const char *kCall = "comm_exchange";
constexpr const char *kWhat = "ncclSend/ncclRecv (the exchange)";

// A slot's header, in its first floats (copied bytewise): the receiving global rank (-1: nothing this
// round), the floats that follow, and whether the sender has more after them.
struct Header {
  int32_t receiver, more;
  uint64_t count;
};
constexpr size_t kHeaderFloats = (sizeof(Header) + sizeof(float) - 1) / sizeof(float);
constexpr size_t kChunkFloats = ProcessBoard::kChunk - kHeaderFloats;

struct Message {
  size_t local;  // local rank
  size_t peer;   // global rank
  bool receive;
  Span span;  // absent for a count of 0
  size_t count;
  std::vector<float> sent;  // a send's values, copied before any receive is written
  size_t done = 0;          // floats sent or received so far
};

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, const dpt_backend_message *in,
          size_t count, size_t world, size_t first, std::vector<Message> &out, const char *call,
          const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, call);
  if (contexts == nullptr || (in == nullptr && count > 0))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (const int rc = check_rank_context(c, contexts, r, call, e)) return rc;
  }
  for (size_t m = 0; m < count; ++m) {
    const dpt_backend_message &msg = in[m];
    if (msg.local_rank < 0 || size_t(msg.local_rank) >= c.ordinals.size() || msg.peer < 0 ||
        size_t(msg.peer) >= world || size_t(msg.peer) == first + size_t(msg.local_rank))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: %s: message %zu from local rank %d to rank %d (%zu local ranks, %zu in all; not to "
                    "itself)",
                    ranks, call, m, int(msg.local_rank), int(msg.peer), c.ordinals.size(), world);
    Message message{size_t(msg.local_rank), size_t(msg.peer), msg.receive != 0, Span{}, msg.count, {}};
    if (msg.count > 0)
      if (const int rc = floats(*contexts[message.local], call, msg.receive != 0 ? "receive" : "send",
                                msg.data, msg.count, false, message.span, e))
        return rc;
    out.push_back(std::move(message));
  }
  return 0;
}

// The global ranks of a pair, sender first.
using Pair = std::pair<size_t, size_t>;

// Each receive paired with its send within the process (the sends of a pair in order); false when one is
// left without its partner or the counts differ.
bool exchange_in_process(std::vector<Message *> &sends, std::vector<Message *> &receives, size_t first) {
  std::map<Pair, std::vector<Message *>> queued;
  for (Message *s : sends) queued[{first + s->local, s->peer}].push_back(s);
  std::map<Pair, size_t> next;
  for (Message *r : receives) {
    const Pair pair{r->peer, first + r->local};
    std::vector<Message *> &from = queued[pair];
    size_t &k = next[pair];
    if (k >= from.size() || from[k]->count != r->count) return false;
    Message &s = *from[k++];
    if (r->count > 0) std::memcpy(r->span.f(), s.sent.data(), r->count * sizeof(float));
    r->done = r->count;
  }
  for (auto &[pair, from] : queued)
    if (next[pair] != from.size()) return false;  // a send nobody received
  return true;
}

// The messages to and from other processes, through the board; false when a peer did not arrive by the
// deadline (*matched false: a chunk came that no receive expected).
bool exchange_across_processes(dpt_backend_comm &c, std::vector<Message *> &sends,
                               std::vector<Message *> &receives, double deadline, bool &matched) {
  ProcessBoard &board = *c.board;
  const size_t world = size_t(board.world_ranks()), first = size_t(board.first_rank());
  const size_t local = c.ordinals.size();
  // Per local rank, its sends to other processes in order; per (sender, local receiver), its receives.
  std::vector<std::vector<Message *>> outgoing(local);
  for (Message *s : sends) outgoing[s->local].push_back(s);
  std::map<Pair, std::vector<Message *>> incoming;
  for (Message *r : receives) incoming[{r->peer, first + r->local}].push_back(r);
  std::vector<size_t> at(local, 0);  // per local rank, its message being sent
  for (bool more = true; more;) {
    for (size_t r = 0; r < local; ++r) {
      while (at[r] < outgoing[r].size() && outgoing[r][at[r]]->done == outgoing[r][at[r]]->count) ++at[r];
      Header h{-1, 0, 0};
      float *slot = board.slot(int(first + r));
      if (at[r] < outgoing[r].size()) {
        Message &m = *outgoing[r][at[r]];
        const size_t n = std::min(kChunkFloats, m.count - m.done);
        h.receiver = int32_t(m.peer);
        h.count = n;
        std::memcpy(slot + kHeaderFloats, m.sent.data() + m.done, n * sizeof(float));
        m.done += n;
        h.more = m.done < m.count || at[r] + 1 < outgoing[r].size();
      }
      std::memcpy(slot, &h, sizeof h);
    }
    if (!board.arrive_and_wait(deadline)) return false;  // every rank's chunk is on the board
    more = false;
    for (size_t g = 0; g < world; ++g) {
      Header h;
      std::memcpy(&h, board.slot(int(g)), sizeof h);
      more = more || h.more != 0;
      if (h.receiver < 0 || size_t(h.receiver) < first || size_t(h.receiver) >= first + local) continue;
      std::vector<Message *> &queue = incoming[{g, size_t(h.receiver)}];
      auto open = std::find_if(queue.begin(), queue.end(), [](Message *m) { return m->done < m->count; });
      if (open == queue.end() || (*open)->done + h.count > (*open)->count) {
        matched = false;
        continue;
      }
      std::memcpy((*open)->span.f() + (*open)->done, board.slot(int(g)) + kHeaderFloats,
                  size_t(h.count) * sizeof(float));
      (*open)->done += size_t(h.count);
    }
    if (!board.arrive_and_wait(deadline)) return false;  // every rank has read the board
  }
  for (Message *r : receives) matched = matched && r->done == r->count;
  return true;
}

// Every message delivered (the sends copied first); false when a peer process did not arrive by the
// deadline, *matched false when a message had no partner (or one of another count).
bool run_messages(dpt_backend_comm &c, std::vector<Message> &all, double deadline, bool &matched) {
  const size_t first = c.board != nullptr ? size_t(c.board->first_rank()) : 0;
  std::vector<Message *> sends_here, receives_here, sends_away, receives_away;
  for (Message &m : all) {
    const bool here = m.peer >= first && m.peer < first + c.ordinals.size();
    if (!m.receive && m.count > 0) m.sent.assign(m.span.f(), m.span.f() + m.count);
    (m.receive ? (here ? receives_here : receives_away) : (here ? sends_here : sends_away)).push_back(&m);
  }
  matched = exchange_in_process(sends_here, receives_here, first);
  return c.board == nullptr || exchange_across_processes(c, sends_away, receives_away, deadline, matched);
}

// The checks both entries make: 0 to go on (`all` the messages), else the report's code.
int check_entry(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                const dpt_backend_message *messages, size_t message_count, const char *call,
                std::vector<Message> &all, const Error &e) {
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  if (!comm_alive(comm))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", call,
                  static_cast<void *>(comm));
  const dpt_backend_comm &c = *comm;
  const size_t world = c.board != nullptr ? size_t(c.board->world_ranks()) : c.ordinals.size();
  const size_t first = c.board != nullptr ? size_t(c.board->first_rank()) : 0;
  return check(c, contexts, messages, message_count, world, first, all, call, e);
}

}  // namespace

int comm_exchange(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                  const dpt_backend_message *messages, size_t message_count, double timeout_seconds,
                  char *error, size_t error_size) {
  const Error e{error, error_size};
  // Across processes the board's rounds count every rank of the job, so a process takes part with no
  // message of its own (NCCL's point to point involves only the pairs: the simulator asks more).
  if (comm != nullptr && message_count == 0 && comm->board == nullptr) return 0;
  try {
    std::vector<Message> all;
    if (const int rc = check_entry(comm, contexts, messages, message_count, kCall, all, e)) return rc;
    dpt_backend_comm &c = *comm;
    const double start = steady_seconds();  // the timeout counts the work queued before, as on a GPU
    if (const int rc = begin_collective(c, contexts, kCall, timeout_seconds, e)) return rc;
    const int hang_rank = c.hang_rank;
    c.hang_rank = -1;
    if (hang_rank >= 0) return wait_out_hang(c, hang_rank, start, timeout_seconds, kWhat, e);
    bool matched = true;
    if (!run_messages(c, all, start + timeout_seconds, matched))
      return processes_stalled(c, timeout_seconds, kWhat, e);
    if (matched) return 0;
    // NCCL would wait for the missing partner until the deadline.
    std::this_thread::sleep_for(std::chrono::duration<double>(start + timeout_seconds - steady_seconds()));
    const std::string names = c.ranks;
    abort_comm(c);
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s did not finish within %g s (a send or receive without its partner, or of another "
                  "count): ncclCommAbort called, the communicator is unusable",
                  names.c_str(), kWhat, timeout_seconds);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  kCall);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), kCall);
  }
}

int comm_exchange_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                        const dpt_backend_message *messages, size_t message_count, char *error,
                        size_t error_size) {
  const Error e{error, error_size};
  const char *call = "comm_exchange_start";
  if (comm != nullptr && message_count == 0 && comm->board == nullptr) return 0;
  try {
    auto all = std::make_shared<std::vector<Message>>();
    if (const int rc = check_entry(comm, contexts, messages, message_count, call, *all, e)) return rc;
    dpt_backend_comm &c = *comm;
    bool hung = false;
    if (const int rc = begin_start(c, contexts, call, hung, e)) return rc;
    if (hung) return 0;
    // (A message without its partner: the wait's deadline passes, as for a peer process that stalled.)
    c.started.push_back({[all](dpt_backend_comm &comm, double deadline) {
      bool matched = true;
      return run_messages(comm, *all, deadline, matched) && matched ? StartedCollective::kDone
                                                                    : StartedCollective::kStalled;
    }});
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), call);
  }
}

}  // namespace dpt_sim
