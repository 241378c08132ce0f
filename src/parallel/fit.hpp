// The epoch loop: shuffle, batch, step, evaluate, report progress.
#pragma once

#include <functional>

#include "data/dataset.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

struct FitConfig {
  size_t epochs = 1;
  size_t batch_size = 256;
  bool shuffle = true;
  size_t progress_every = 0;  // batches; 0 = epoch reports only
  size_t eval_batch_size = 1000;
};

struct Progress {
  bool epoch_end = false;
  size_t epoch = 0, epochs = 0, batch = 0, batches = 0;
  uint64_t samples = 0;
  double loss = 0, accuracy = 0, samples_per_second = 0, epoch_seconds = 0;
  bool has_test = false;
  double test_loss = 0, test_accuracy = 0, learning_rate = 0;
  double loss_scale = 1;  // the trainer's loss scale now (1 without loss scaling)
};

struct FitStats {
  size_t epochs_completed = 0;
  bool stopped = false;
  double train_loss = 0, train_accuracy = 0;
  bool has_test = false;
  double test_loss = 0, test_accuracy = 0;
  double train_seconds = 0, samples_per_second = 0;
  uint64_t optimizer_steps = 0, nonfinite_steps = 0;
  uint64_t overflow_steps = 0;  // windows the loss scaler skipped so far
  double loss_scale = 1;
};

// Returns true to stop.
using ProgressFn = std::function<bool(const Progress &)>;

FitStats fit(Trainer &trainer, const Dataset &train, const Dataset *test, const FitConfig &config,
             const ProgressFn &progress);

// Evaluates a dataset in batches.
EvalStats evaluate_dataset(Trainer &trainer, const Dataset &data, size_t batch_size);

// Recomputes batch norm's running statistics as the plain average of the statistics of the first `samples`
// samples of data (0, or more than it holds: all of them), in order, in batches of batch_size, each batch
// weighing the same (Trainer::recompute_statistics). Nothing to do for a model without batch norm.
void recompute_statistics(Trainer &trainer, const Dataset &data, size_t batch_size, size_t samples);

// Throws unless the dataset's samples fit the trainer's model.
void check_dataset_fits(const Trainer &trainer, const Dataset &data, const char *role);

}  // namespace dpt
