#include "parallel/fit.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "core/rng.hpp"
#include "parallel/process_agreement.hpp"

namespace dpt {

void check_dataset_fits(const Trainer &trainer, const Dataset &data, const char *role) {
  const ModelSpec &spec = trainer.spec();
  const bool tokens = data.dtype() == DType::kI32;
  const char *values = tokens ? " tokens" : " floats";
  DPT_REQUIRE(data.dtype() == spec.input_dtype(), DPT_ERROR_INVALID_ARGUMENT,
              std::string(role) + " samples are" + (tokens ? " int32 tokens" : " float32 values") +
                  ", the model takes" + (tokens ? " float32 values" : " int32 tokens"));
  DPT_REQUIRE(data.shape().size() == spec.input().size(), DPT_ERROR_SIZE_MISMATCH,
              std::string(role) + " samples have " + std::to_string(data.shape().size()) + values +
                  ", the model takes " + std::to_string(spec.input().size()));
  DPT_REQUIRE(data.targets_per_sample() == spec.targets_per_sample(), DPT_ERROR_SIZE_MISMATCH,
              std::string(role) + " samples have " + std::to_string(data.targets_per_sample()) +
                  " targets each, the model's output has " + std::to_string(spec.targets_per_sample()));
  DPT_REQUIRE(data.classes() <= spec.classes(), DPT_ERROR_SIZE_MISMATCH,
              std::string(role) + " dataset has " + std::to_string(data.classes()) +
                  " classes, the model outputs " + std::to_string(spec.classes()));
  DPT_REQUIRE(!tokens || data.classes() <= spec.token_bound(), DPT_ERROR_SIZE_MISMATCH,
              std::string(role) + " dataset has a vocabulary of " + std::to_string(data.classes()) +
                  " tokens, the model embeds " + std::to_string(spec.token_bound()));
}

EvalStats evaluate_dataset(Trainer &trainer, const Dataset &data, size_t batch_size) {
  check_dataset_fits(trainer, data, "evaluation");
  DPT_REQUIRE(batch_size > 0, DPT_ERROR_INVALID_ARGUMENT, "evaluation batch size must be positive");
  EvalStats total;
  for (size_t start = 0; start < data.size(); start += batch_size) {
    const size_t n = std::min(batch_size, data.size() - start);
    EvalStats e = trainer.evaluate(data.sample(start), data.labels(start), n);
    total.loss_sum += e.loss_sum;
    total.correct += e.correct;
    total.samples += e.samples;
    total.targets += e.targets;
    total.seconds += e.seconds;
  }
  return total;
}

void recompute_statistics(Trainer &trainer, const Dataset &data, size_t batch_size, size_t samples) {
  check_dataset_fits(trainer, data, "batch-norm statistics");
  DPT_REQUIRE(batch_size > 0, DPT_ERROR_INVALID_ARGUMENT, "the batch size must be positive");
  DPT_REQUIRE(data.size() > 0, DPT_ERROR_INVALID_ARGUMENT, "the dataset is empty");
  if (!trainer.has_batch_statistics()) return;
  const size_t total = samples == 0 ? data.size() : std::min(samples, data.size());
  uint64_t batch_number = 0;
  for (size_t start = 0; start < total; start += batch_size)
    trainer.recompute_statistics(data.sample(start), std::min(batch_size, total - start), ++batch_number);
}

namespace {

// Across processes, the callbacks of all processes vote at every report: one asking to stop stops every
// process (they must keep making the same calls). A process without a callback votes too, to go on.
bool agreed_stop(Trainer &trainer, const ProgressFn &progress, const Progress &p) {
  const bool stop = progress && progress(p);
  if (trainer.world() == nullptr) return stop;
  double votes = stop ? 1.0 : 0.0;
  trainer.world()->all_reduce(&votes, 1, trainer.config().timeout_seconds);
  return votes > 0;
}

// Everything that decides which collectives fit() makes, and in which order, is the same on every process.
void agree_on_fit(Trainer &trainer, const Dataset &train, const Dataset *test, const FitConfig &config) {
  ProcessAgreement agreed("fit");
  agreed.add("epochs", uint64_t(config.epochs));
  agreed.add("batch_size", uint64_t(config.batch_size));
  agreed.add("shuffle", uint64_t(config.shuffle));
  agreed.add("progress_every", uint64_t(config.progress_every));
  agreed.add("eval_batch_size", uint64_t(config.eval_batch_size));
  agreed.add("training samples", uint64_t(train.size()));
  agreed.add("test set", uint64_t(test != nullptr));
  agreed.add("test samples", uint64_t(test != nullptr ? test->size() : 0));
  agreed.add("epochs done", trainer.epochs_done);
  agreed.add("optimizer steps", trainer.optimizer_steps());
  agreed.add("samples into the epoch", trainer.samples_into_epoch);
  agreed.check(*trainer.world(), trainer.config().timeout_seconds);
}

}  // namespace

FitStats fit(Trainer &trainer, const Dataset &train, const Dataset *test, const FitConfig &config,
             const ProgressFn &progress) {
  DPT_REQUIRE(config.epochs > 0, DPT_ERROR_INVALID_ARGUMENT, "epochs must be positive");
  DPT_REQUIRE(config.batch_size > 0, DPT_ERROR_INVALID_ARGUMENT, "batch_size must be positive");
  DPT_REQUIRE(config.eval_batch_size > 0, DPT_ERROR_INVALID_ARGUMENT, "eval_batch_size must be positive");
  check_dataset_fits(trainer, train, "training");
  if (test != nullptr) check_dataset_fits(trainer, *test, "test");
  if (trainer.world() != nullptr) agree_on_fit(trainer, train, test, config);

  const size_t n = train.size(), per = train.shape().size(), targets = train.targets_per_sample();
  const size_t batch = std::min(config.batch_size, n);
  // Stopped (or saved and loaded) in the middle of an epoch: its first samples are trained, and the epoch
  // goes on from the next one in the same order (the shuffle is keyed by the epoch number). Not with a
  // dataset no larger than that: it is not the one those samples came from, and the epoch starts over.
  const size_t resume_at = trainer.samples_into_epoch < n ? size_t(trainer.samples_into_epoch) : 0;
  std::vector<size_t> order(n);
  std::vector<float> x(batch * per);  // host staging (float32 or int32 tokens), reused for every batch
  std::vector<int32_t> y(batch * targets);
  FitStats stats;
  uint64_t total_samples = 0;

  for (size_t epoch = 1; epoch <= config.epochs && !stats.stopped; ++epoch) {
    std::iota(order.begin(), order.end(), size_t(0));
    if (config.shuffle) {  // Fisher-Yates, keyed by the trainer's global epoch number
      Rng rng(
          hash_combine(hash_combine(trainer.config().seed, uint64_t(Stream::kShuffle)), trainer.epochs_done));
      for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    }
    // The epoch's first sample and the batches before it (a partial one counted whole: another batch size
    // than the stopped run's).
    const size_t from = epoch == 1 ? resume_at : 0, before = (from + batch - 1) / batch;
    Progress p;
    p.epoch = epoch;
    p.epochs = config.epochs;
    p.batches = before + (n - from + batch - 1) / batch;
    double loss_sum = 0, seconds = 0;
    uint64_t correct = 0, scored = 0;
    for (size_t b = before; b < p.batches; ++b) {
      const size_t start = from + (b - before) * batch, count = std::min(batch, n - start);
      const double t0 = platform::now_seconds();
      // Across processes, each reads only its own share of the global batch (the trainer reads no other).
      const auto [first, mine] = trainer.process_range(count);
      train.gather(order.data() + start + first, mine, x.data() + first * per, y.data() + first * targets);
      StepStats s = trainer.step(x.data(), y.data(), count);
      trainer.samples_into_epoch = start + count;
      seconds += platform::now_seconds() - t0;
      p.batch = b + 1;
      if (!s.skipped_nonfinite) {  // a skipped batch has no meaningful loss
        loss_sum += s.loss * double(s.targets);
        correct += s.correct;
        scored += s.targets;
      }
      p.samples += count;
      p.loss = scored ? loss_sum / double(scored) : 0.0;
      p.accuracy = scored ? double(correct) / double(scored) : 0.0;
      p.epoch_seconds = seconds;
      p.samples_per_second = double(p.samples) / seconds;
      p.learning_rate = trainer.last_learning_rate();
      p.loss_scale = trainer.loss_scaler().scale();
      if (config.progress_every != 0 && (b + 1) % config.progress_every == 0 && b + 1 < p.batches &&
          agreed_stop(trainer, progress, p)) {
        stats.stopped = true;
        break;
      }
    }
    if (!stats.stopped) {
      const double t0 = platform::now_seconds();
      trainer.flush();  // an unfinished accumulation window still counts
      seconds += platform::now_seconds() - t0;
    }
    // A partial (stopped) epoch counts towards time, throughput and the latest loss too.
    total_samples += p.samples;
    stats.train_seconds += seconds;
    stats.train_loss = p.loss;
    stats.train_accuracy = p.accuracy;
    if (stats.stopped) break;
    trainer.samples_into_epoch = 0;
    ++trainer.epochs_done;
    ++stats.epochs_completed;
    p.epoch_end = true;
    p.epoch_seconds = seconds;
    p.learning_rate = trainer.last_learning_rate();
    p.loss_scale = trainer.loss_scaler().scale();
    if (test != nullptr) {
      EvalStats e = evaluate_dataset(trainer, *test, config.eval_batch_size);
      p.has_test = stats.has_test = true;
      const double counted = e.targets > 0 ? double(e.targets) : 1.0;
      p.test_loss = stats.test_loss = e.loss_sum / counted;
      p.test_accuracy = stats.test_accuracy = double(e.correct) / counted;
    }
    if (agreed_stop(trainer, progress, p)) stats.stopped = true;
  }
  stats.samples_per_second = stats.train_seconds > 0 ? double(total_samples) / stats.train_seconds : 0;
  stats.optimizer_steps = trainer.optimizer_steps();
  stats.nonfinite_steps = trainer.nonfinite_steps();
  stats.overflow_steps = trainer.overflow_steps();
  stats.loss_scale = trainer.loss_scaler().scale();
  return stats;
}

}  // namespace dpt
