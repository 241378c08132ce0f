// Recomputing batch norm's running statistics from data (PyTorch's torch.optim.swa_utils.update_bn). A
// trainer's running statistics follow the batches with the ops' momentum, an average over the last few
// dozen batches taken while the weights moved under them; with a high learning rate they lag the weights
// they are used with (ResNet-18's 10-epoch run: 0.73 test accuracy on them, 0.89 on recomputed ones).
// Recomputed, they are the plain average of the statistics of batches run through the final weights.
#include <string>
#include <vector>

#include "core/error.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// The model's answer, not this process's replicas': with the stages divided among the processes another
// process's stages may have them, and every process takes part in a recomputation (its passes hand
// activations on, its sums meet the others').
bool Trainer::has_batch_statistics() const {
  for (const Node &node : spec_.nodes())
    if (node.layout.statistics > 0) return true;
  return false;
}

// Each batch runs forward in training mode on every replica, its statistics summed over the global batch
// as in a step (sync or local alike: the running statistics follow the global batch in both), and the
// k-th batch weighs 1/k in the running statistics (PassInfo::average_statistics). Nothing else changes.
void Trainer::recompute_statistics(const void *x, size_t n, uint64_t batch_number) {
  check_usable();
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, "batch_size must be positive");
  DPT_REQUIRE(batch_number > 0, DPT_ERROR_INVALID_ARGUMENT, "batches are numbered from 1");
  check_tokens(x, n);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  if (pipeline_ != nullptr) {
    copy_in_pipeline(x, nullptr, n, true);  // cut into a training step's micro-batches
  } else {
    assign_slices(n);
    reserve_slices();
    copy_in(x, nullptr);
  }
  // A NaN or an infinity would leave this batch out of the average (the ops skip non-finite statistics)
  // while the later batches' weights count it: refused, before any statistic changes. Every process
  // learns of every process's share, so that all refuse alike.
  double nonfinite = 0;
  for (const auto &r : replicas_) nonfinite += r->nonfinite ? 1.0 : 0.0;
  if (config_.world != nullptr) world_sum(&nonfinite, 1);
  DPT_REQUIRE(nonfinite == 0, DPT_ERROR_NON_FINITE,
              "a NaN or an infinity in the samples of batch " + std::to_string(batch_number) +
                  ": the running statistics are left as the batches before it made them");
  if (batch_number == 1) {  // from the initial values, as update_bn resets them (weight 1 replaces them)
    std::vector<float> initial(spec_.buffer_count());
    init_buffers(spec_, initial.data());
    guard_devices([&] { set_buffers_locked(initial.data()); });
  }
  if (pipeline_ != nullptr) {
    // A pipeline normalises per micro-batch: each training micro-batch is a batch of the average.
    run_phase([this, batch_number](size_t rank) {
      Replica &r = *replicas_[rank];
      PassInfo info = pass_info(0, 0, optimizer_steps_, true, rank);
      const size_t width = pipeline_->replicas_per_stage();
      info.rank = rank % width;  // the stage's replicas sum each micro-batch's statistics
      info.statistics = stage_statistics_.empty() ? nullptr : stage_statistics_[rank / width].get();
      info.average_statistics = batch_number;
      pipeline_->recompute_statistics(rank, info, r.params.data(), r.buffers.data());
    });
    return;
  }
  run_phase([this, batch_number](size_t rank) {
    // Every replica runs, an empty slice too: the statistics are summed over all of them.
    Replica &r = *replicas_[rank];
    PassInfo info = pass_info(r.count, r.begin, optimizer_steps_, true, rank);
    info.average_statistics = batch_number;
    r.network.forward(r.params.data(), r.buffers.data(), nullptr, info);
    r.kernels->synchronize();
  });
}

}  // namespace dpt
