// Dynamic loss scaling for float16 training, PyTorch GradScaler's policy: the loss (so every gradient) is
// multiplied by a scale S before backward, so that small gradients stay above float16's subnormals; the
// summed gradient is divided by S again before clipping and the update. A window whose gradient holds an
// infinity or a NaN (a float16 product overflowed) is skipped and S halved; after growth_interval windows
// in a row without one, S doubles. S is a power of two, so scaling and unscaling are exact.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/error.hpp"

namespace dpt {

struct LossScaling {
  bool enabled = false;             // fp16 precision turns it on
  double initial_scale = 65536.0;   // 2^16, GradScaler's; a power of two, at least 1
  uint64_t growth_interval = 2000;  // finite windows in a row before S doubles; 0: S never grows
};

// A loss scale: a power of two from 1 to 2^64.
inline bool valid_loss_scale(double s) {
  int exponent = 0;
  return std::isfinite(s) && s >= 1.0 && std::frexp(s, &exponent) == 0.5 && exponent <= 65;
}

// Refuses an initial scale that is not valid_loss_scale (checked whether or not enabled, so that a setting
// is never silently dropped).
inline void validate(const LossScaling &c) {
  DPT_REQUIRE(valid_loss_scale(c.initial_scale), DPT_ERROR_INVALID_ARGUMENT,
              "the initial loss scale must be a power of two from 1 to 2^64 (GradScaler's default: 65536)");
}

class LossScaler {
 public:
  static constexpr double kGrowthFactor = 2.0, kBackoffFactor = 0.5;
  // S never falls below 1 (DeepSpeed's min_loss_scale): below it, scaling would push small gradients
  // down instead of up.
  static constexpr double kMinScale = 1.0;

  explicit LossScaler(const LossScaling &config)
      : config_(config), scale_(config.enabled ? config.initial_scale : 1.0) {}

  bool enabled() const { return config_.enabled; }
  // What the next backward multiplies the loss by (1 when disabled).
  double scale() const { return scale_; }
  // Finite windows since the last change of S.
  uint64_t growth_tracker() const { return growth_tracker_; }

  // After a window whose gradient was finite (and applied).
  void finite_window() {
    if (!config_.enabled || config_.growth_interval == 0) return;
    if (++growth_tracker_ == config_.growth_interval) {
      scale_ *= kGrowthFactor;
      growth_tracker_ = 0;
    }
  }
  // After a window whose gradient overflowed (and was skipped).
  void overflowed() {
    scale_ = scale_ * kBackoffFactor < kMinScale ? kMinScale : scale_ * kBackoffFactor;
    growth_tracker_ = 0;
  }
  // From a checkpoint: exact resume.
  void restore(double scale, uint64_t growth_tracker) {
    scale_ = scale;
    growth_tracker_ = growth_tracker;
  }

 private:
  LossScaling config_;
  double scale_;
  uint64_t growth_tracker_ = 0;
};

}  // namespace dpt
