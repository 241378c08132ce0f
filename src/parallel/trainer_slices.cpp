// The split of a batch into the replicas' slices (across processes first, then across this process's
// devices), their device memory, their labels, and copying them in.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "parallel/splitter.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

namespace {

bool all_finite(const float *x, size_t n) {
  // NaN and infinities are the floats whose exponent bits are all ones; an OR over integer tests
  // vectorizes (a float sum would be one dependent add per element).
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

std::pair<size_t, size_t> Trainer::process_range(size_t batch) const {
  if (config_.world == nullptr) return {0, batch};
  // Stages divided among the processes: the copies of the stages share the batch evenly (each copy's
  // stages see its share whole).
  if (stages_across_processes()) {
    const std::vector<size_t> parts = split_batch(batch, std::vector<double>(stage_copies_, 1.0));
    size_t first = 0;
    for (size_t d = 0; d < data_rank_; ++d) first += parts[d];
    return {first, parts[data_rank_]};
  }
  const std::vector<size_t> parts = split_batch(batch, process_weights_);
  size_t first = 0;
  for (size_t p = 0; p < config_.world->rank(); ++p) first += parts[p];
  return {first, parts[config_.world->rank()]};
}

std::vector<double> Trainer::split_weights() const {
  if (config_.split == SplitPolicy::kWeighted) return config_.weights;
  if (config_.split == SplitPolicy::kAuto && !measured_weights_.empty()) return measured_weights_;
  return std::vector<double>(devices_.size(), 1.0);
}

std::vector<size_t> Trainer::split_sizes(size_t batch) const {
  if (pipeline_ != nullptr) return pipeline_->samples_per_device(batch);
  return split_batch(batch, split_weights());
}

// Sets each replica's slice of the batch. Across processes, the batch is first split by the processes'
// device counts and this process's share then across its devices; begin stays a global sample index.
void Trainer::assign_slices(size_t batch, bool across_processes) {
  if (batch != cached_batch_ || across_processes != cached_across_ || cached_counts_.empty()) {
    // steps of one size allocate nothing here
    auto [first, count] = across_processes ? process_range(batch) : std::pair<size_t, size_t>{0, batch};
    cached_counts_ = split_sizes(count);
    if (!room_.empty()) cached_counts_ = cap_split(cached_counts_, room_);
    cached_first_ = first;
    cached_batch_ = batch;
    cached_across_ = across_processes;
  }
  size_t begin = cached_first_;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    replicas_[i]->begin = begin;
    replicas_[i]->count = cached_counts_[i];
    begin += cached_counts_[i];
  }
}

// Device memory for the slices is allocated before any gradient work starts, so that an out-of-memory
// error leaves every replica's parameters, gradients and state as they were.
void Trainer::reserve_slices() {
  bool grow = false;
  for (auto &r : replicas_) grow |= r->count > r->network.capacity();
  if (!grow) return;
  run_phase([this](size_t rank) {
    Replica &r = *replicas_[rank];
    r.network.reserve(r.count);
  });
}

uint64_t Trainer::check_labels(const int32_t *labels, size_t n) const {
  const int64_t classes = int64_t(spec_.classes());
  const size_t per = spec_.targets_per_sample();
  const auto [first, mine] = process_range(n);
  uint64_t counted = 0;
  for (size_t i = 0; i < n * per; ++i) {
    if (labels[i] == cpu::kIgnoreLabel) continue;
    DPT_REQUIRE(labels[i] >= 0 && labels[i] < classes, DPT_ERROR_OUT_OF_RANGE,
                "label " + std::to_string(labels[i]) + " of sample " + std::to_string(i / per) +
                    (per > 1 ? " (position " + std::to_string(i % per) + ")" : std::string()) +
                    " is outside [0, " + std::to_string(classes) + ") and not the ignore label -1");
    counted += i / per >= first && i / per < first + mine;
  }
  // Stages divided among the processes: the sum over the processes counts the last stage's processes only.
  if (stages_across_processes() && !pipeline_->holds_last_stage()) return 0;
  return counted;
}

void Trainer::check_tokens(const void *x, size_t n) const {
  if (spec_.input_dtype() != DType::kI32) return;
  const int32_t *tokens = static_cast<const int32_t *>(x);
  const int64_t bound = int64_t(spec_.token_bound());
  const size_t per = spec_.input().size();
  for (size_t i = 0; i < n * per; ++i)
    DPT_REQUIRE(tokens[i] >= 0 && tokens[i] < bound, DPT_ERROR_OUT_OF_RANGE,
                "token " + std::to_string(tokens[i]) + " of sample " + std::to_string(i / per) +
                    " (position " + std::to_string(i % per) + ") is outside the vocabulary [0, " +
                    std::to_string(bound) + ")");
}

// Copies each replica's slice of the caller's batch (and its labels, when given) into the replica's device
// memory from the calling thread, and flags slices that hold a NaN or an infinity. The device tasks never
// read caller memory: a task that outlives a timeout could otherwise read it after the call returned.
void Trainer::copy_in(const void *x, const int32_t *labels) {
  const size_t in = spec_.input().size(), per = spec_.targets_per_sample();
  const bool tokens = spec_.input_dtype() == DType::kI32;  // checked by check_tokens: always finite
  guard_devices([&] {
    for (auto &r : replicas_) {
      r->nonfinite = false;
      if (r->count == 0) continue;
      // int32 tokens travel in the float-sized slots as they are (bits copied, never converted).
      const float *slice = static_cast<const float *>(x) + r->begin * in;
      r->nonfinite = !tokens && !all_finite(slice, r->count * in);
      r->kernels->copy_to_device(r->network.input(), slice, r->count * in);
      if (labels != nullptr)
        r->kernels->copy_labels_to_device(r->network.labels(), labels + r->begin * per, r->count * per);
    }
    for (auto &r : replicas_) r->kernels->synchronize();  // a GPU copy reads the host buffer until here
  });
}

// Across processes (across: training and evaluation) each process pipelines its own share of the batch, as
// a process without pipeline splits its share among its devices.
void Trainer::copy_in_pipeline(const void *x, const int32_t *labels, size_t n, bool training, bool across) {
  const size_t in = spec_.input().size(), per = spec_.targets_per_sample();
  const auto [first, mine] = across ? process_range(n) : std::pair<size_t, size_t>{0, n};
  const float *own = static_cast<const float *>(x) + first * in;
  for (auto &r : replicas_) r->nonfinite = false, r->begin = first, r->count = mine;
  replicas_[0]->nonfinite = spec_.input_dtype() != DType::kI32 && !all_finite(own, mine * in);
  guard_devices([&] {
    pipeline_->reserve(mine, training);
    pipeline_->copy_in(own, labels != nullptr ? labels + first * per : nullptr);
  });
}

}  // namespace dpt
