#include "parallel/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "comm/hierarchical_reduce.hpp"
#include "core/checksum.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/process_agreement.hpp"
#include "parallel/splitter.hpp"

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

// A CUDA device may be listed several times (that many replicas share the GPU); a CPU device holds one
// replica (its worker thread is its compute).
std::vector<Device *> pick_devices(const Context &context, const std::vector<size_t> &indices) {
  std::vector<Device *> devices;
  if (indices.empty()) {
    for (size_t i = 0; i < context.device_count(); ++i) devices.push_back(&context.device(i));
  } else {
    for (size_t i = 0; i < indices.size(); ++i) {
      DPT_REQUIRE(indices[i] < context.device_count(), DPT_ERROR_DEVICE_NOT_FOUND,
                  "device index " + std::to_string(indices[i]) + " does not exist (the context has " +
                      std::to_string(context.device_count()) + " devices)");
      Device &device = context.device(indices[i]);
      for (size_t j = 0; j < i; ++j)
        DPT_REQUIRE(indices[j] != indices[i] || device.kind() == DPT_DEVICE_CUDA, DPT_ERROR_INVALID_ARGUMENT,
                    "device " + std::to_string(indices[i]) + " is listed twice (" + device.name() +
                        "; only a CUDA device can hold several replicas)");
      devices.push_back(&device);
    }
  }
  DPT_REQUIRE(!devices.empty(), DPT_ERROR_DEVICE_NOT_FOUND, "the context has no devices");
  DPT_REQUIRE(devices.size() <= kMaxTrainerDevices, DPT_ERROR_OUT_OF_RANGE,
              "a trainer spans at most 64 devices");
  for (Device *d : devices)
    DPT_REQUIRE(d->kind() == devices[0]->kind(), DPT_ERROR_UNSUPPORTED,
                "a trainer's devices must all be CPU devices or all CUDA devices (" + devices[0]->name() +
                    " and " + d->name() + " were given)");
  return devices;
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Context> context, const ModelSpec &spec, TrainerConfig config)
    : context_(std::move(context)),
      spec_(spec),
      config_(std::move(config)),
      devices_(pick_devices(*context_, config_.devices)),
      group_(std::make_unique<DeviceGroup>(devices_, config_.timeout_seconds)) {
  validate(config_.optimizer);
  DPT_REQUIRE(spec_.parameter_count() > 0, DPT_ERROR_INVALID_ARGUMENT,
              "the model has no trainable parameters");
  DPT_REQUIRE(config_.accumulation_steps >= 1, DPT_ERROR_INVALID_ARGUMENT,
              "accumulation_steps must be at least 1");
  DPT_REQUIRE(config_.init_std >= 0.0f && std::isfinite(config_.init_std), DPT_ERROR_INVALID_ARGUMENT,
              "init_std must be finite and non-negative");
  if (config_.split == SplitPolicy::kWeighted) {
    DPT_REQUIRE(config_.weights.size() == devices_.size(), DPT_ERROR_SIZE_MISMATCH,
                "split weights: " + std::to_string(config_.weights.size()) + " given for " +
                    std::to_string(devices_.size()) + " devices");
    for (double w : config_.weights)
      DPT_REQUIRE(std::isfinite(w) && w > 0.0, DPT_ERROR_INVALID_ARGUMENT,
                  "split weights must be positive and finite");
  }
  on_gpus_ = devices_[0]->kind() == DPT_DEVICE_CUDA;
  DPT_REQUIRE(!on_gpus_ || config_.world == nullptr, DPT_ERROR_UNSUPPORTED,
              "training on CUDA devices across MPI processes is not supported in this version");
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  for (Device *d : devices_)
    replicas_.push_back(std::make_unique<Replica>(*d, spec_, config_.optimizer, config_.kernels));
  // Initialise once on the host (across processes: process 0's values), then copy to every replica, so
  // that every replica starts bitwise identical.
  std::vector<float> initial(spec_.parameter_count());
  init_parameters(spec_, initial.data(), config_.seed, config_.init, config_.init_std);
  if (config_.world != nullptr) join_world(initial);
  set_parameters_locked(initial.data());
  if (on_gpus_) {
    if (devices_.size() > 1) {
      std::vector<CudaKernels *> kernels;
      for (auto &r : replicas_) kernels.push_back(static_cast<CudaKernels *>(r->kernels.get()));
      cuda_collective_ = std::make_unique<CudaCollective>(std::move(kernels));
    }
    for (const GradientBucket &b : plan_buckets(spec_, config_.bucket_bytes))
      gpu_buckets_.emplace_back(b.begin, b.end);
    for (auto &r : replicas_) gpu_grads_.push_back(r->grads.data());
    return;  // the buckets are all-reduced in one NCCL group after backward
  }
  // Overlap needs a second bucket: with one, the reduction could only start after backward anyway, and
  // the plain all-reduce on the device threads saves the hand-over to the communication threads.
  // Across processes the reducer also runs the MPI all-reduce of each bucket, so one device is enough.
  if ((devices_.size() > 1 || config_.world != nullptr) && config_.bucket_bytes > 0) {
    std::vector<GradientBucket> buckets = plan_buckets(spec_, config_.bucket_bytes);
    if (buckets.size() > 1)
      group_->enable_bucket_reducer(std::move(buckets), config_.allreduce, config_.world);
  }
}

// group_ is destroyed first (it waits for tasks that are still out), then what they touched.
Trainer::~Trainer() = default;

bool Trainer::tasks_outstanding() const {
  return group_->outstanding();
}

// Checks that every process built the same trainer (what shapes the collectives and keeps the replicas
// identical), learns every process's device count (the weights of the split across processes), and starts
// every process from process 0's parameters.
void Trainer::join_world(std::vector<float> &initial) {
  const World &world = *config_.world;
  const OptimizerConfig &o = config_.optimizer;
  ProcessAgreement agreed("the trainer");
  agreed.add("model", spec_.describe());
  agreed.add("parameter count", uint64_t(spec_.parameter_count()));
  agreed.add("device kind", uint64_t(devices_[0]->kind()));
  agreed.add("split", uint64_t(config_.split));
  agreed.add("allreduce", uint64_t(config_.allreduce));
  agreed.add("seed", config_.seed);
  agreed.add("accumulation_steps", uint64_t(config_.accumulation_steps));
  agreed.add("nonfinite", uint64_t(config_.error_on_nonfinite));
  agreed.add("bucket_bytes", uint64_t(config_.bucket_bytes));
  agreed.add("optimizer kind", uint64_t(o.kind));
  agreed.add("learning_rate", double(o.learning_rate));
  agreed.add("momentum", double(o.momentum));
  agreed.add("nesterov", uint64_t(o.nesterov));
  agreed.add("weight_decay", double(o.weight_decay));
  agreed.add("beta1", double(o.beta1));
  agreed.add("beta2", double(o.beta2));
  agreed.add("epsilon", double(o.epsilon));
  agreed.add("schedule", uint64_t(o.schedule));
  agreed.add("warmup_steps", o.warmup_steps);
  agreed.add("step_size", o.step_size);
  agreed.add("gamma", double(o.gamma));
  agreed.add("total_steps", o.total_steps);
  agreed.add("min_learning_rate", double(o.min_learning_rate));
  agreed.add("clip_norm", double(o.clip_norm));
  agreed.check(world, config_.timeout_seconds);
  std::vector<double> shape(world.size() + 1, 0.0);
  shape[world.rank()] = double(devices_.size());
  shape.back() = double(spec_.parameter_count());
  world.all_reduce(shape.data(), shape.size(), config_.timeout_seconds);
  DPT_REQUIRE(shape.back() == double(spec_.parameter_count()) * double(world.size()),
              DPT_ERROR_INVALID_ARGUMENT, "the processes of the MPI job built models of different sizes");
  process_weights_.assign(shape.begin(), shape.end() - 1);
  world.broadcast(initial.data(), initial.size() * sizeof(float), 0, config_.timeout_seconds);
}

// A sum over the processes from the trainer's own thread; a failure leaves the processes out of step.
void Trainer::world_sum(double *values, size_t count) {
  try {
    config_.world->all_reduce(values, count, config_.timeout_seconds);
  } catch (const Error &) {
    broken_ = true;
    throw;
  }
}

std::pair<size_t, size_t> Trainer::process_range(size_t batch) const {
  if (config_.world == nullptr) return {0, batch};
  const std::vector<size_t> parts = split_batch(batch, process_weights_);
  size_t first = 0;
  for (size_t p = 0; p < config_.world->rank(); ++p) first += parts[p];
  return {first, parts[config_.world->rank()]};
}

void Trainer::check_no_task_out() const {
  DPT_REQUIRE(!group_->outstanding(), DPT_ERROR_INVALID_STATE,
              "a device has not yet returned from a call that timed out; its replica cannot be read or "
              "written until it does");
}

void Trainer::check_usable() const {
  DPT_REQUIRE(
      !broken_, DPT_ERROR_INVALID_STATE,
      "a device failed or timed out in an earlier call, so the replicas may differ; destroy this trainer "
      "and create a new one (from the last checkpoint)");
}

std::vector<double> Trainer::split_weights() const {
  if (config_.split == SplitPolicy::kWeighted) return config_.weights;
  if (config_.split == SplitPolicy::kAuto && !measured_weights_.empty()) return measured_weights_;
  return std::vector<double>(devices_.size(), 1.0);
}

std::vector<size_t> Trainer::split_sizes(size_t batch) const {
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

void Trainer::check_labels(const int32_t *labels, size_t n) const {
  const int64_t classes = int64_t(spec_.output().size());
  for (size_t i = 0; i < n; ++i)
    DPT_REQUIRE(labels[i] >= 0 && labels[i] < classes, DPT_ERROR_OUT_OF_RANGE,
                "label " + std::to_string(labels[i]) + " of sample " + std::to_string(i) +
                    " is outside [0, " + std::to_string(classes) + ")");
}

// DPT_SPLIT_AUTO: every device trains on the same probe slice at once (as in a real step, so contention
// counts); the best of three timings per device sets its weight. The probe's gradients are discarded.
void Trainer::measure_speeds(const float *x, const int32_t *labels, size_t batch) {
  const size_t probe = std::min<size_t>(batch, 64);
  for (auto &r : replicas_) r->begin = 0, r->count = probe, r->probe_seconds = 1e300;
  reserve_slices();
  copy_in(x, labels);
  for (int round = 0; round < 3; ++round) {
    run_phase([this, probe](size_t rank) {
      Replica &r = *replicas_[rank];
      const double t0 = platform::now_seconds();
      const PassInfo info = pass_info(probe, 0, optimizer_steps_, true);
      r.network.forward(r.params.data(), r.network.labels(), info);
      r.network.backward(r.params.data(), r.grads.data(), info);
      r.kernels->synchronize();
      r.probe_seconds = std::min(r.probe_seconds, (platform::now_seconds() - t0) / double(probe));
    });
  }
  std::vector<double> best;
  for (auto &r : replicas_) r->grads.zero(), best.push_back(r->probe_seconds);
  measured_weights_ = weights_from_speed(best);
  if (on_gpus_) measure_room();
  cached_counts_.clear();  // the split changes with the weights
}

// The samples each GPU replica has memory for: what it holds now plus its share (replicas on one GPU
// share it evenly) of 90% of the GPU's free memory.
void Trainer::measure_room() {
  room_.assign(replicas_.size(), 0);
  for (size_t i = 0; i < replicas_.size(); ++i) {
    size_t sharing = 0;
    for (Device *d : devices_) sharing += d == devices_[i];
    const double share = 0.9 * double(devices_[i]->details().free_memory) / double(sharing);
    const Network &n = replicas_[i]->network;
    room_[i] = n.capacity() + size_t(share / double(n.bytes_per_sample()));
  }
}

void Trainer::step(const float *x, const int32_t *labels, size_t batch, StepStats &s) {
  check_usable();
  DPT_REQUIRE(batch > 0, DPT_ERROR_INVALID_ARGUMENT, "batch_size must be positive");
  check_labels(labels, batch);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  const double t0 = platform::now_seconds();
  if (config_.split == SplitPolicy::kAuto && measured_weights_.empty()) measure_speeds(x, labels, batch);
  assign_slices(batch);
  reserve_slices();
  copy_in(x, labels);

  // The window's last micro-batch reduces its gradients during backward when buckets are on.
  BucketReducer *reducer = group_->bucket_reducer();
  const bool overlap = reducer != nullptr && pending_micro_ + 1 == config_.accumulation_steps;
  run_phase([this, reducer, overlap](size_t rank) {
    compute_gradients(rank, overlap);
    if (overlap) {
      Replica &r = *replicas_[rank];
      // A slice that skipped backward (empty or not finite) posts every bucket here, so the peers' reduction
      // still completes; the window is then discarded as a whole.
      reducer->post(rank, r.grads.data(), reducer->buckets().size());
      reducer->wait_all(rank);
    }
  });
  s = StepStats{};
  const double t1 = platform::now_seconds();
  s.compute_seconds = t1 - t0;
  s.samples = batch;
  double totals[3] = {0, 0, 0};  // loss sum, correct, replicas with a NaN or an infinity
  for (auto &r : replicas_)      // device order
    totals[0] += r->stats.loss_sum, totals[1] += double(r->stats.correct), totals[2] += r->nonfinite;
  if (config_.world != nullptr) world_sum(totals, 3);  // every process decides alike
  s.loss = totals[0] / double(batch);
  s.correct = uint64_t(totals[1]);
  s.accuracy = totals[1] / double(batch);

  ++pending_micro_;
  pending_samples_ += batch;
  const char *discarded = nullptr;  // where a NaN or an infinity was found
  if (totals[2] != 0)
    discarded = "the inputs or the loss";
  else if (pending_micro_ == config_.accumulation_steps && !update_replicas(s, overlap))
    discarded = "the gradients";
  if (discarded != nullptr) discard_window(s);
  s.optimizer_steps = optimizer_steps_;
  s.nonfinite_steps = nonfinite_steps_;
  s.total_seconds = platform::now_seconds() - t0;
  if (discarded != nullptr) report_discarded(discarded);
}

namespace {
// Posts each bucket to the reducer as soon as backward has finished its lowest layer.
struct BucketPoster {
  BucketReducer *reducer;
  size_t rank;
  float *grads;
  size_t posted = 0;

  static void layer_done(void *context, size_t layer) {
    BucketPoster &p = *static_cast<BucketPoster *>(context);
    const std::vector<GradientBucket> &buckets = p.reducer->buckets();
    size_t n = p.posted;
    while (n < buckets.size() && layer <= buckets[n].lowest_layer) ++n;
    if (n == p.posted) return;
    p.posted = n;
    p.reducer->post(p.rank, p.grads, n);
  }
};
}  // namespace

// Copies each replica's slice of the caller's batch (and its labels, when given) into the replica's device
// memory from the calling thread, and flags slices that hold a NaN or an infinity. The device tasks never
// read caller memory: a task that outlives a timeout could otherwise read it after the call returned.
void Trainer::copy_in(const float *x, const int32_t *labels) {
  const size_t in = spec_.input().size();
  guard_devices([&] {
    for (auto &r : replicas_) {
      r->nonfinite = false;
      if (r->count == 0) continue;
      const float *slice = x + r->begin * in;
      r->nonfinite = !all_finite(slice, r->count * in);
      r->kernels->copy_to_device(r->network.input(), slice, r->count * in);
      if (labels != nullptr)
        r->kernels->copy_labels_to_device(r->network.labels(), labels + r->begin, r->count);
    }
    for (auto &r : replicas_) r->kernels->synchronize();  // a GPU copy reads the host buffer until here
  });
}

// One device's forward and backward over its slice; with post_buckets, each gradient bucket is handed to
// the reducer as soon as it is complete.
void Trainer::compute_gradients(size_t rank, bool post_buckets) {
  Replica &r = *replicas_[rank];
  r.stats = {};
  // An empty slice contributes zero gradient; copy_in found NaN or infinity in the inputs.
  if (r.count == 0 || r.nonfinite) return;
  // Dropout is keyed by the sample's position in the whole accumulation window, so that neither the
  // split nor the division into micro-batches changes the masks.
  const PassInfo info = pass_info(r.count, pending_samples_ + r.begin, optimizer_steps_, true);
  r.stats = r.network.forward(r.params.data(), r.network.labels(), info);
  if (!std::isfinite(r.stats.loss_sum)) {
    r.nonfinite = true;
    return;
  }
  BucketPoster poster{group_->bucket_reducer(), rank, r.grads.data()};
  BackwardHook hook;
  if (post_buckets) hook = BackwardHook{&BucketPoster::layer_done, &poster};
  r.network.backward(r.params.data(), r.grads.data(), info, hook);
  // A GPU's backward is still queued: wait, so that compute_seconds counts it and an error of it surfaces
  // in this phase, naming the device, rather than in the all-reduce.
  r.kernels->synchronize();
}

// A NaN or an infinity: the whole accumulation window is dropped (gradients zeroed on every replica),
// parameters and optimizer state stay as they were, and the policy decides whether the caller hears of it
// as an error.
void Trainer::discard_window(StepStats &s) {
  run_phase([this](size_t rank) { replicas_[rank]->grads.zero(); });
  pending_micro_ = 0;
  pending_samples_ = 0;
  ++nonfinite_steps_;
  s.applied = false;
  s.skipped_nonfinite = true;
}

void Trainer::report_discarded(const char *where) const {
  DPT_REQUIRE(!config_.error_on_nonfinite, DPT_ERROR_NON_FINITE,
              std::string("a NaN or infinity in ") + where + " of this batch; the update was skipped (" +
                  std::to_string(nonfinite_steps_) + " so far)");
}

// All-reduces the summed gradients, divides by the samples of the window, clips, and applies the same
// optimizer step on every replica. Nothing in here allocates or can fail. Returns false, changing nothing,
// when the gradients are not finite (every replica sees the same all-reduced norm, so all agree).
bool Trainer::update_replicas(StepStats &s, bool reduced) {
  double allreduce_seconds = 0;
  const double t0 = platform::now_seconds();
  s.learning_rate = learning_rate_at(config_.optimizer, optimizer_steps_);
  const float lr = float(s.learning_rate);
  const double inv_samples = 1.0 / double(pending_samples_);
  if (on_gpus_) allreduce_seconds = gpu_all_reduce();
  run_phase([this, reduced, lr, inv_samples](size_t rank) {
    Replica &r = *replicas_[rank];
    r.allreduce_seconds = 0;
    if (!reduced && !on_gpus_)  // else the bucket reducer did it during backward
      r.allreduce_seconds =
          hierarchical_all_reduce(group_->collective(), config_.world, rank, r.grads.data(), 0,
                                  r.grads.size(), config_.allreduce, config_.timeout_seconds);
    // Every replica now holds the same summed gradient, so each computes the same norm and update.
    r.norm = r.kernels->l2_norm(r.grads.data(), r.grads.size()) * inv_samples;
    if (!std::isfinite(r.norm)) return;
    double scale = inv_samples;
    const double clip = config_.optimizer.clip_norm;
    if (clip > 0.0 && r.norm > clip) scale *= clip / (r.norm + 1e-6);  // as PyTorch's clip_grad_norm_
    r.kernels->apply_update(config_.optimizer, optimizer_steps_, lr, float(scale), r.params.data(),
                            r.grads.data(), r.state.data(), r.params.size());
    r.grads.zero();
  });
  if (!on_gpus_) allreduce_seconds = replicas_[0]->allreduce_seconds;
  const double grad_norm = replicas_[0]->norm;
  if (!std::isfinite(grad_norm)) return false;
  s.applied = true;
  s.grad_norm = grad_norm;
  s.update_seconds = platform::now_seconds() - t0 - allreduce_seconds;
  if (reduced) {
    s.allreduce_seconds = group_->bucket_reducer()->reduce_seconds(0);
    s.allreduce_exposed_seconds = group_->bucket_reducer()->exposed_seconds(0);
  } else {
    s.allreduce_seconds = s.allreduce_exposed_seconds = allreduce_seconds;
  }
  last_lr_ = s.learning_rate;
  ++optimizer_steps_;
  pending_micro_ = 0;
  pending_samples_ = 0;
  return true;
}

void Trainer::drain_streams() noexcept {
  if (!on_gpus_ || group_->lost()) return;  // a lost group: a task may still be running on a worker
  for (auto &r : replicas_) {
    try {
      r->kernels->synchronize();
    } catch (...) {  // the phase's own error is the one to report
    }
  }
}

// GPU replicas: the summed gradients of every replica, from the trainer's thread while the workers are
// idle (the contexts are used by one thread at a time). Returns the seconds it took.
double Trainer::gpu_all_reduce() {
  if (cuda_collective_ == nullptr) return 0;
  const double t0 = platform::now_seconds();
  try {
    cuda_collective_->all_reduce(gpu_grads_, gpu_buckets_, config_.timeout_seconds);
  } catch (const Error &e) {
    broken_ = true;  // the replicas' gradients (and a NCCL communicator) are in an unknown state
    throw;
  }
  return platform::now_seconds() - t0;
}

bool Trainer::flush() {
  if (pending_micro_ == 0) return false;
  check_usable();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  StepStats unused;
  if (!update_replicas(unused, false)) {
    discard_window(unused);
    report_discarded("the gradients");
  }
  return true;
}

EvalStats Trainer::evaluate(const float *x, const int32_t *labels, size_t n) {
  check_usable();
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
  check_labels(labels, n);
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  const double t0 = platform::now_seconds();
  assign_slices(n);
  reserve_slices();
  copy_in(x, labels);
  run_phase([this](size_t rank) {
    Replica &r = *replicas_[rank];
    r.stats = {};
    if (r.count == 0) return;
    r.stats = r.network.forward(r.params.data(), r.network.labels(), pass_info(r.count, r.begin, 0, false));
  });
  EvalStats e;
  double totals[2] = {0, 0};
  for (auto &r : replicas_) totals[0] += r->stats.loss_sum, totals[1] += double(r->stats.correct);
  if (config_.world != nullptr) world_sum(totals, 2);
  e.loss_sum = totals[0];
  e.correct = uint64_t(totals[1]);
  e.samples = n;
  e.seconds = platform::now_seconds() - t0;
  return e;
}

void Trainer::predict(const float *x, size_t n, float *logits) {
  check_usable();
  DPT_REQUIRE(n > 0, DPT_ERROR_INVALID_ARGUMENT, "sample_count must be positive");
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  assign_slices(n, false);  // prediction stays within the process: every process gets all the logits
  reserve_slices();
  copy_in(x, nullptr);
  run_phase([this](size_t rank) {
    Replica &r = *replicas_[rank];
    if (r.count == 0) return;
    r.network.forward(r.params.data(), nullptr, pass_info(r.count, r.begin, 0, false));
    r.kernels->synchronize();
  });
  // The logits are copied out here, on the caller's thread, once every task has returned.
  const size_t classes = spec_.output().size();
  guard_devices([&] {
    for (auto &r : replicas_)
      r->kernels->copy_to_host(logits + r->begin * classes, r->network.logits(), r->count * classes);
    for (auto &r : replicas_) r->kernels->synchronize();
  });
}

// From the caller's thread, between phases (the work mutex keeps the device workers off the replica).
void Trainer::copy_to_host(size_t replica, const DeviceBuffer &buffer, float *out) const {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  DeviceKernels &k = *replicas_[replica]->kernels;
  k.copy_to_host(out, buffer.data(), buffer.size());
  k.synchronize();
}

void Trainer::get_parameters(size_t replica, float *out) const {
  DPT_REQUIRE(replica < replicas_.size(), DPT_ERROR_OUT_OF_RANGE,
              "replica " + std::to_string(replica) + " does not exist (the trainer has " +
                  std::to_string(replicas_.size()) + ")");
  copy_to_host(replica, replicas_[replica]->params, out);
}

void Trainer::set_parameters(const float *in) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_parameters_locked(in);
}

void Trainer::set_parameters_locked(const float *in) {
  for (auto &r : replicas_) r->kernels->copy_to_device(r->params.data(), in, r->params.size());
  for (auto &r : replicas_) r->kernels->synchronize();
}

uint64_t Trainer::parameter_checksum() const {
  std::vector<float> p(parameter_count());
  copy_to_host(0, replicas_[0]->params, p.data());
  return fnv1a64(p.data(), p.size() * sizeof(float));
}

TrainerState Trainer::save_state() const {
  check_usable();
  DPT_REQUIRE(pending_micro_ == 0, DPT_ERROR_INVALID_STATE,
              "cannot checkpoint inside an accumulation window (" + std::to_string(pending_micro_) + " of " +
                  std::to_string(config_.accumulation_steps) + " micro-batches done)");
  const Replica &r = *replicas_[0];
  TrainerState state;
  state.parameters.resize(r.params.size());
  state.optimizer_state.resize(r.state.size());
  copy_to_host(0, r.params, state.parameters.data());
  copy_to_host(0, r.state, state.optimizer_state.data());
  state.optimizer_steps = optimizer_steps_;
  state.epochs_done = epochs_done;
  state.seed = config_.seed;
  return state;
}

void Trainer::load_state(const TrainerState &state) {
  check_usable();
  const Replica &first = *replicas_[0];
  DPT_REQUIRE(state.parameters.size() == first.params.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.parameters.size()) + " parameters, the model " +
                  std::to_string(first.params.size()));
  DPT_REQUIRE(state.optimizer_state.size() == first.state.size(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.optimizer_state.size()) +
                  " floats of optimizer state, the trainer's optimizer needs " +
                  std::to_string(first.state.size()));
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  for (auto &r : replicas_) {
    r->kernels->copy_to_device(r->params.data(), state.parameters.data(), r->params.size());
    r->kernels->copy_to_device(r->state.data(), state.optimizer_state.data(), r->state.size());
    r->grads.zero();
  }
  for (auto &r : replicas_) r->kernels->synchronize();
  optimizer_steps_ = state.optimizer_steps;
  epochs_done = state.epochs_done;
  config_.seed = state.seed;
  pending_micro_ = 0;
  pending_samples_ = 0;
}

}  // namespace dpt
