#include "backend/cuda/collective.hpp"

#include <algorithm>
#include <string>

#include "comm/nccl_world.hpp"
#include "core/error.hpp"

namespace dpt {

CudaCollective::CudaCollective(std::vector<CudaKernels *> replicas, const World *world,
                               double timeout_seconds)
    : replicas_(std::move(replicas)), ranks_(replicas_.size()) {
  std::vector<int> ordinals;
  for (CudaKernels *k : replicas_) {
    ordinals.push_back(k->ordinal());
    contexts_.push_back(k->context());
  }
  std::vector<int> distinct = ordinals;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const dpt_backend_v2 &api = replicas_[0]->api();
  if (world != nullptr) {
    // Every process learns whether any shares a GPU, so that all refuse together (none waits for the others
    // in the communicator's creation).
    const bool shared = distinct.size() != ordinals.size();
    double sharing = shared ? 1.0 : 0.0;
    world->all_reduce(&sharing, 1, timeout_seconds);
    DPT_REQUIRE(
        sharing == 0.0, DPT_ERROR_UNSUPPORTED,
        std::string("GPU replicas across MPI processes need a GPU each (NCCL refuses two ranks on one "
                    "GPU); ") +
            (shared ? "this process's replicas share one" : "another process's replicas share one"));
    NcclRanks ranks;
    comm_ = create_nccl_world_comm(api, *world, ordinals, timeout_seconds, &ranks).release();
    ranks_ = size_t(ranks.world_ranks);
    return;
  }
  if (distinct.size() == 1) return;  // virtual devices on one GPU
  DPT_REQUIRE(distinct.size() == ordinals.size(), DPT_ERROR_UNSUPPORTED,
              "a trainer's GPU replicas must each have a GPU of their own, or all share one GPU "
              "(cuda:0x2); a mix of both is not supported");
  const int rc = api.comm_create(int(ordinals.size()), ordinals.data(), &comm_, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

namespace {

int32_t wire_dtype(WireType wire) {
  return wire == WireType::kBF16 ? DPT_DTYPE_BF16 : wire == WireType::kF16 ? DPT_DTYPE_F16 : DPT_DTYPE_F32;
}

}  // namespace

CudaCollective::~CudaCollective() {
  if (comm_ != nullptr) replicas_[0]->api().comm_destroy(comm_);
}

void CudaCollective::all_reduce(const std::vector<float *> &buffers,
                                const std::vector<std::pair<size_t, size_t>> &ranges, double timeout_seconds,
                                WireType wire) {
  const dpt_backend_v2 &api = replicas_[0]->api();
  const size_t k = replicas_.size();
  if (ranks_ < 2 || ranges.empty()) return;
  const int32_t dtype = wire_dtype(wire);
  int rc = DPT_BACKEND_OK;
  if (comm_ == nullptr) {
    // One call over the ranges' hull: they are contiguous pieces of one vector.
    size_t begin = ranges[0].first, end = ranges[0].second;
    for (const auto &r : ranges) begin = std::min(begin, r.first), end = std::max(end, r.second);
    pointers_.resize(k);
    for (size_t i = 0; i < k; ++i) pointers_[i] = buffers[i] + begin;
    rc = api.virtual_all_reduce(contexts_.data(), int(k), pointers_.data(), end - begin, dtype, error_,
                                sizeof error_);
  } else {
    point_at(buffers, ranges);
    rc = api.comm_all_reduce(comm_, contexts_.data(), ranges.size(), pointers_.data(), counts_.data(), dtype,
                             timeout_seconds, error_, sizeof error_);
  }
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::point_at(const std::vector<float *> &buffers,
                              const std::vector<std::pair<size_t, size_t>> &ranges) {
  const size_t k = replicas_.size();
  pointers_.resize(k * ranges.size());
  counts_.resize(ranges.size());
  for (size_t b = 0; b < ranges.size(); ++b) counts_[b] = ranges[b].second - ranges[b].first;
  for (size_t i = 0; i < k; ++i)
    for (size_t b = 0; b < ranges.size(); ++b)
      pointers_[i * ranges.size() + b] = buffers[i] + ranges[b].first;
}

void CudaCollective::start_all_reduce(const std::vector<float *> &buffers,
                                      const std::vector<std::pair<size_t, size_t>> &ranges, WireType wire) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "start_all_reduce needs a NCCL communicator");
  point_at(buffers, ranges);
  const int rc =
      replicas_[0]->api().comm_all_reduce_start(comm_, contexts_.data(), ranges.size(), pointers_.data(),
                                                counts_.data(), wire_dtype(wire), error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::start_reduce_ranges(const std::vector<const float *> &sends,
                                         const std::vector<float *> &recvs, const std::vector<size_t> &bounds,
                                         WireType wire) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "start_reduce_ranges needs a NCCL communicator");
  const int rc =
      replicas_[0]->api().comm_reduce_ranges_start(comm_, contexts_.data(), sends.data(), recvs.data(),
                                                   bounds.data(), wire_dtype(wire), error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::join_started(size_t keep) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "join_started needs a NCCL communicator");
  const int rc = replicas_[0]->api().comm_join_started(comm_, contexts_.data(), keep, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::wait_started(double timeout_seconds) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "wait_started needs a NCCL communicator");
  const int rc =
      replicas_[0]->api().comm_wait_started(comm_, contexts_.data(), timeout_seconds, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::all_gather(const std::vector<float *> &buffers, const std::vector<size_t> &bounds,
                                double timeout_seconds) {
  if (comm_ != nullptr && bounds.size() == ranks_ + 1) {
    const int rc = replicas_[0]->api().comm_all_gather_ranges(
        comm_, contexts_.data(), buffers.data(), bounds.data(), timeout_seconds, error_, sizeof error_);
    if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
    return;
  }
  const size_t k = replicas_.size();
  for (CudaKernels *r : replicas_) r->synchronize();  // every owner's update is in
  for (size_t r = 0; r < k; ++r)
    for (size_t q = 0; q < k; ++q)
      if (q != r)
        replicas_[r]->copy_device(buffers[r] + bounds[q], buffers[q] + bounds[q], bounds[q + 1] - bounds[q]);
  for (CudaKernels *r : replicas_) r->synchronize();  // no owner writes its range while a peer reads it
}

void CudaCollective::all_reduce_doubles(const std::vector<double *> &buffers, size_t count,
                                        double timeout_seconds) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "all_reduce_doubles needs a NCCL communicator");
  const int rc = replicas_[0]->api().comm_all_reduce_f64(comm_, contexts_.data(), buffers.data(), count,
                                                         timeout_seconds, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::reduce_ranges(const std::vector<const float *> &sends, const std::vector<float *> &recvs,
                                   const std::vector<size_t> &bounds, double timeout_seconds, WireType wire) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "reduce_ranges needs a NCCL communicator");
  const int32_t dtype = wire_dtype(wire);
  const int rc =
      replicas_[0]->api().comm_reduce_ranges(comm_, contexts_.data(), sends.data(), recvs.data(),
                                             bounds.data(), dtype, timeout_seconds, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::exchange(const std::vector<dpt_backend_message> &messages, double timeout_seconds) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "exchange needs a NCCL communicator");
  const int rc = replicas_[0]->api().comm_exchange(comm_, contexts_.data(), messages.data(), messages.size(),
                                                   timeout_seconds, error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::start_exchange(const std::vector<dpt_backend_message> &messages) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_INTERNAL, "start_exchange needs a NCCL communicator");
  const int rc = replicas_[0]->api().comm_exchange_start(comm_, contexts_.data(), messages.data(),
                                                         messages.size(), error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

void CudaCollective::inject_hang(size_t rank) {
  DPT_REQUIRE(comm_ != nullptr, DPT_ERROR_UNSUPPORTED, "inject_hang needs a NCCL communicator");
  const auto *test =
      static_cast<const dpt_backend_test_v1 *>(replicas_[0]->api().get_extension(DPT_BACKEND_TEST_EXTENSION));
  DPT_REQUIRE(test != nullptr && test->comm_inject_hang != nullptr, DPT_ERROR_UNSUPPORTED,
              "the CUDA module has no test extension (comm_inject_hang)");
  const int rc = test->comm_inject_hang(comm_, int(rank), error_, sizeof error_);
  if (rc != DPT_BACKEND_OK) throw_backend_error(rc, error_);
}

}  // namespace dpt
