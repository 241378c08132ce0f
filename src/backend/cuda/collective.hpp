// The gradient all-reduce across a trainer's GPU replicas, called once per step from the trainer's thread
// with every replica's buffer of this process: a NCCL communicator when the replicas are on distinct GPUs
// (across the processes of an MPI world too: every process's GPUs, ranks in process order), the module's
// virtual all-reduce when they all share one GPU ("cuda:0x2", one process only). Each is bounded: NCCL by
// the timeout (then aborted: DPT_ERROR_COMMUNICATION, the communicator is dead), the virtual one by the
// stream order of the contexts.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "backend/cuda/kernels.hpp"
#include "comm/wire_type.hpp"
#include "comm/world.hpp"

namespace dpt {

class CudaCollective {
 public:
  // world: the processes whose GPUs join the communicator (collective: every process creates its part with
  // its own replicas; the waits bounded by timeout_seconds), or nullptr for this process's replicas alone.
  // Throws DPT_ERROR_UNSUPPORTED when some replicas share a GPU and others do not, or share one across
  // processes; as create_nccl_world_comm does across processes.
  CudaCollective(std::vector<CudaKernels *> replicas, const World *world = nullptr,
                 double timeout_seconds = 0);
  ~CudaCollective();
  CudaCollective(const CudaCollective &) = delete;
  CudaCollective &operator=(const CudaCollective &) = delete;

  bool shares_one_gpu() const { return comm_ == nullptr; }
  // The ranks of the all-reduce: this process's replicas, or every process's GPUs.
  size_t ranks() const { return ranks_; }
  // Sums buffers[r][range.first, range.second) over the replicas r, for every range, in place; NCCL: one
  // group holding one all-reduce per range (gradient buckets). wire: what travels (float32, or 16-bit
  // values: each replica's value rounded to the type, float32 sums in replica order, the sum rounded;
  // backend_interface.h's wire_dtype), the same bits on every replica.
  void all_reduce(const std::vector<float *> &buffers, const std::vector<std::pair<size_t, size_t>> &ranges,
                  double timeout_seconds, WireType wire = WireType::kF32);
  // all_reduce's sum of the ranges on the wire, started on each replica's communication stream after the
  // work queued on its stream, beside what is queued later (NCCL only: comm_all_reduce_start). The buffers'
  // ranges are not to be touched until wait_started. A 16-bit wire takes the communicator's staging, which
  // a 16-bit all_reduce of the largest start's ranges sizes beforehand.
  void start_all_reduce(const std::vector<float *> &buffers,
                        const std::vector<std::pair<size_t, size_t>> &ranges, WireType wire = WireType::kF32);
  // reduce_ranges' reduce on the wire, started as start_all_reduce starts its all-reduce
  // (comm_reduce_ranges_start): the sends and the receive buffers are not to be touched until a join or the
  // wait covers it.
  void start_reduce_ranges(const std::vector<const float *> &sends, const std::vector<float *> &recvs,
                           const std::vector<size_t> &bounds, WireType wire = WireType::kF32);
  // Each replica's stream ordered after the starts since the last wait but the last `keep` (device-side: the
  // host does not wait; comm_join_started).
  void join_started(size_t keep);
  // Ends every start since the last wait: returns when the sums are in, each replica's stream ordered after
  // them; bounded by the timeout as all_reduce.
  void wait_started(double timeout_seconds);
  // Sharded optimizer state: afterwards every buffers[r] holds, in each range [bounds[q], bounds[q + 1]), its
  // owner's values, after the work queued on every stream; returns when done. A range per rank of the
  // communicator (ranks() + 1 offsets; across processes: the job's layout) goes through NCCL, one broadcast
  // per range from its owner in one group (comm_all_gather_ranges, bounded by the timeout as all_reduce);
  // a range per replica of this process (a layout within the process, or replicas sharing a GPU) by peer
  // copies, each replica copying the ranges it does not own on its own stream. Copies are exact: the bits
  // of an unsharded update.
  void all_gather(const std::vector<float *> &buffers, const std::vector<size_t> &bounds,
                  double timeout_seconds);
  // Sums count doubles at buffers[r] (device memory of replica r) over every rank, in place: NCCL's float64
  // all-reduce (comm_all_reduce_f64), bounded by the timeout as all_reduce; the same bits on every rank.
  // NCCL only (shares_one_gpu() false): batch norm's statistics in the middle of a pass, called from one
  // replica's thread while the others wait (CudaStatisticsReducer).
  void all_reduce_doubles(const std::vector<double *> &buffers, size_t count, double timeout_seconds);
  // A sharded gradient's bucket: rank q's part [bounds[q], bounds[q + 1]) (ranks() + 1 offsets into the
  // bucket) of the sum over every rank of sends[r] written to recvs[q] (nullptr for an empty part; may be
  // sends[q] + bounds[q], in place). NCCL only: one ncclReduce per part rooted at its owner, in one group
  // (comm_reduce_ranges), bounded by the timeout as all_reduce; a 16-bit wire gives all_reduce's 16-bit bits.
  void reduce_ranges(const std::vector<const float *> &sends, const std::vector<float *> &recvs,
                     const std::vector<size_t> &bounds, double timeout_seconds,
                     WireType wire = WireType::kF32);
  // Point to point: messages[m] sends (or receives) floats between its local rank and another rank of the
  // communicator; every message in one NCCL group (ncclSend / ncclRecv, so no order of them deadlocks),
  // those between two ranks matched in the order both list them. NCCL only (comm_exchange), after the
  // work queued on every stream, bounded by the timeout as all_reduce. Copies are exact.
  void exchange(const std::vector<dpt_backend_message> &messages, double timeout_seconds);
  // exchange's messages started as start_reduce_ranges starts its reduce (comm_exchange_start): on the
  // communication streams after the starts before it; the buffers are not to be touched until a join or the
  // wait covers it.
  void start_exchange(const std::vector<dpt_backend_message> &messages);
  // Test seam: the next collective does not start on replica rank (NCCL only).
  void inject_hang(size_t rank);

 private:
  std::vector<CudaKernels *> replicas_;
  std::vector<dpt_backend_context *> contexts_;
  dpt_backend_comm *comm_ = nullptr;
  size_t ranks_ = 0;
  // Scratch of all_reduce, kept so that a step allocates nothing.
  std::vector<float *> pointers_;
  std::vector<size_t> counts_;
  // pointers_ and counts_ of comm_all_reduce's layout: replica r's buffer b at r * ranges + b.
  void point_at(const std::vector<float *> &buffers, const std::vector<std::pair<size_t, size_t>> &ranges);
  char error_[512] = "";
};

}  // namespace dpt
