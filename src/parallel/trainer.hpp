// The data-parallel trainer: the step (split, per-device forward/backward, all-reduce, identical update),
// evaluation and prediction across the replicas. Its members live in one file per job: trainer.cpp
// (construction, step, flush, evaluate, predict), trainer_update.cpp (the update phase, dropped windows,
// the replicas' times), trainer_trace.cpp (the timeline), trainer_slices.cpp (the split of a batch into the
// replicas' slices, and copying them in), trainer_speeds.cpp (SplitPolicy::kAuto's measurements),
// trainer_world.cpp (joining an MPI world, sums across it), trainer_state.cpp (parameters, checkpoints),
// trainer_statistics.cpp (recomputing batch norm's running statistics), trainer_pipeline_plan.cpp (a
// pipeline's cuts and what each stage and process owns), trainer_pipeline.cpp (the stages' passes, their
// collectives, the mirrors of tied parameters); the gradient all-reduce is a GradientCollective
// (gradient_collective.hpp).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/context.hpp"
#include "backend/cuda/collective.hpp"
#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "core/error.hpp"
#include "graph/init_parameters.hpp"
#include "graph/model_spec.hpp"
#include "optim/parameter_groups.hpp"
#include "parallel/device_group.hpp"
#include "parallel/gradient_collective.hpp"
#include "parallel/loss_scaler.hpp"
#include "parallel/parameter_gatherer.hpp"
#include "parallel/pipeline.hpp"
#include "parallel/pipeline_balance.hpp"
#include "parallel/remote_ties.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"
#include "parallel/trace_recorder.hpp"

namespace dpt {

enum class SplitPolicy { kEven, kWeighted, kAuto };

// Sharded data parallel (ZeRO): what is split across the devices instead of replicated on each.
// kOptimizer (ZeRO stage 1): the optimizer state; each device updates its range of the parameters
// (ShardLayout) from the reduce-scattered gradient and the ranges are all-gathered. kGradients (stage 2):
// also the gradient; each device keeps the summed gradient of its range only, reduce-scattered bucket by
// bucket during backward (ShardedGradientCollective). kParameters (stage 3, FSDP): the parameters too;
// each device keeps its range of them, and a pass copies each bucket of them in from the owners just
// before its nodes run (ParameterGatherer). CPU devices.
enum class ShardMode { kNone, kOptimizer, kGradients, kParameters };
// Across MPI processes: kProcess shards among each process's devices (one whole copy per process, FSDP's
// HYBRID_SHARD); kWorld among every device of every process (ZeRO, FULL_SHARD; a pipeline: among every
// process's replicas of each stage).
enum class ShardScope { kProcess, kWorld };
// A pipeline across MPI processes: kProcess, every process runs every stage on its own devices (data
// parallel across the processes); kWorld, the stages are divided among the processes (stage s in process
// s / (S / P), the activations and gradients between processes sent as messages; model parallel across
// machines; with more processes than stages, P / S copies of each stage, data parallel among them).
enum class PipelineScope { kProcess, kWorld };

struct TrainerConfig {
  // Indices of the context's devices, one replica each; empty = all devices of the context. All CPU devices
  // or all CUDA devices; a CUDA device listed n times holds n replicas ("virtual devices").
  std::vector<size_t> devices;
  SplitPolicy split = SplitPolicy::kEven;
  std::vector<double> weights;  // for kWeighted, one per device
  AllReduceAlgorithm allreduce = AllReduceAlgorithm::kRing;
  uint64_t seed = 0;
  size_t accumulation_steps = 1;
  InitScheme init = InitScheme::kUniformFanIn;
  float init_std = 0.01f;
  bool error_on_nonfinite = false;  // else skip: discard the window, count it, go on
  // BatchNorm normalises with the statistics of the global batch (sync) or of each device's slice (local);
  // the running statistics follow the global batch in both modes.
  bool sync_batch_norm = true;
  double timeout_seconds = 0;  // deadline of each multi-device operation; 0 = none
  // Gradient bucket size for the all-reduce overlapped with backward; 0 = one all-reduce after backward.
  // 0 here, so that core tests take the plain path unless they ask for buckets; the C API's default
  // (dpt_trainer_options_init, the CLI's --bucket-kib) is 1 MiB.
  size_t bucket_bytes = 0;
  // Spans every process of this MPI world (nullptr: this process only). Every process passes the same
  // global batch to step() and evaluate() and reads its own share of it.
  const World *world = nullptr;
  OptimizerConfig optimizer;
  KernelOptions kernels;  // GPU: TF32, deterministic algorithms
  // Mixed precision: the ops' matrix products take their inputs in this type (kF32, or kBF16 / kF16:
  // rounded to bfloat16 / float16, accumulated in float32); parameters, gradients and the optimizer stay
  // float32.
  DType matmul_dtype = DType::kF32;
  // How activations are kept from forward to backward: kF32, or kBF16 / kF16 copies (about half the
  // memory; backward reads them rounded: graph/activation_store.hpp). Independent of matmul_dtype.
  DType activation_dtype = DType::kF32;
  // Dynamic loss scaling (float16: loss_scaler.hpp); a window that overflows is skipped, not an error.
  LossScaling loss_scaling;
  // What the gradient all-reduce sends: kF32, or kBF16 / kF16 (each device's and each process's
  // contribution and the finished sums rounded to it, the sums float32: comm/wire_type.hpp). CPU devices,
  // and GPUs (the CUDA module's 16-bit NCCL and virtual all-reduces: backend_interface.h's wire_dtype).
  DType allreduce_dtype = DType::kF32;
  // kOptimizer: the same bits as kNone (parallel/shard_layout.hpp); the optimizer state takes 1/K of the
  // memory. kGradients: the gradient too (plus two staging buckets of bucket_bytes or more); the same bits
  // with one micro-batch per window, one rounding per micro-batch otherwise (docs/sharding.md).
  // kParameters: the parameters too (plus one gather slot of a bucket); the bits of kGradients.
  ShardMode shard = ShardMode::kNone;
  ShardScope shard_scope = ShardScope::kProcess;
  // kParameters across processes (kWorld) or on GPUs: read each pass's next bucket ahead, into a second
  // gather slot per device (parallel/parameter_gatherer.hpp).
  bool prefetch_parameters = false;
  // Pipeline model parallel (parallel/pipeline.hpp): the model cut into this many stages, stage s on
  // devices s R .. s R + R - 1 (0 or 1: no pipeline; R = devices / stages data-parallel replicas of each).
  // Each step's batch is cut into micro_batches micro-batches (0: four per stage, at most the batch's
  // samples) run through the stages in pipeline_schedule's order. The stages begin at the nodes named in
  // pipeline_cuts (stages - 1 names), or (empty) where pipeline_balance's costs are most evenly divided
  // (across processes, process 0's measured times for all). CPU devices or GPUs; across processes every
  // process runs every stage (pipeline_scope kProcess), or the P processes hold pipeline_copies copies C of
  // the pipeline (0: P / S when P > S, else 1), each process S C / P stages on its devices (kWorld: every
  // process the same device count; on GPUs the messages through host buffers; kOptimizer shards a stage's
  // state among its replicas in the process, or in the world shard scope among every copy's; a tie between
  // two processes' stages exchanged as messages, RemoteTies); kOptimizer the only shard mode (either shard
  // scope); a parameter tied across stages only as its stage's last.
  size_t pipeline_stages = 0;
  size_t micro_batches = 0;
  PipelineSchedule pipeline_schedule = PipelineSchedule::kOneFOneB;
  std::vector<std::string> pipeline_cuts;
  PipelineScope pipeline_scope = PipelineScope::kProcess;
  size_t pipeline_copies = 0;  // kWorld across processes: C (0: the default above)
  PipelineBalance pipeline_balance = PipelineBalance::kWork;
  // kTime: the batch size the steps will pass (across processes, the global batch); each measuring pass
  // runs one micro-batch of it on one of a stage's replicas. 0: kBalanceProbeSamples.
  size_t pipeline_balance_batch = 0;
};

// One replica's share of the last step call: its compute (forward and backward), its gradient reduction
// (on its thread after backward, or on its communication thread during it), its update, and the rest of
// the call's wall time (idle: waiting for slower devices, or for a reduction that backward did not hide; a
// pipeline stage: for its neighbours, the bubble; its hand-overs count as communication);
// the bus bandwidth of its reduction as NCCL's tests count it (0 without one).
struct ReplicaTimes {
  double compute = 0, communication = 0, update = 0, idle = 0, bus_bandwidth = 0;
};

// The bytes a replica holds in its device's memory, by what they are for.
struct ReplicaMemory {
  uint64_t parameters = 0, gradients = 0, optimizer_state = 0;
  uint64_t buffers = 0;      // running statistics
  uint64_t activations = 0;  // the network's: inputs, activations, what ops save, gradient slots, scratch
  uint64_t total() const { return parameters + gradients + optimizer_state + buffers + activations; }
};

struct StepStats {
  double loss = 0, accuracy = 0;  // per counted target
  // targets: the batch's labels that count (not kIgnoreLabel): samples, or their positions for a
  // sequence output; the loss and the gradient are divided by the accumulation window's count of them.
  uint64_t samples = 0, correct = 0, targets = 0;
  bool applied = false;
  uint64_t optimizer_steps = 0;
  double learning_rate = 0, grad_norm = 0;
  double compute_seconds = 0, allreduce_seconds = 0, update_seconds = 0, total_seconds = 0;
  // The part of allreduce_seconds the step waited for once backward was done (all of it without buckets).
  double allreduce_exposed_seconds = 0;
  bool skipped_nonfinite = false;
  uint64_t nonfinite_steps = 0;
  // Loss scaling: this call's window overflowed and was skipped; the windows skipped so far; the scale
  // after this call (what the next backward uses; 1 without loss scaling).
  bool skipped_overflow = false;
  uint64_t overflow_steps = 0;
  double loss_scale = 1;
};

// Everything a checkpoint holds of a trainer (besides the model description).
struct TrainerState {
  std::vector<float> parameters, optimizer_state, buffers;  // buffers: running statistics
  uint64_t optimizer_steps = 0, epochs_done = 0, seed = 0;
  uint64_t samples_into_epoch = 0;  // fit(): the current epoch's samples already trained (0: between epochs)
  // The loss scaler's state; loss_scale 0: none saved (the trainer keeps its own).
  double loss_scale = 0;
  uint64_t loss_scale_growth_tracker = 0;
};

struct EvalStats {
  double loss_sum = 0;
  uint64_t correct = 0, samples = 0, targets = 0;  // targets: the labels that count
  double seconds = 0;
};

class Trainer {
 public:
  Trainer(std::shared_ptr<Context> context, const ModelSpec &spec, TrainerConfig config);
  // Waits for device tasks that are still out (only after a device did not return within twice the
  // timeout); retire_trainer() destroys a trainer without waiting.
  ~Trainer();
  // A device task of a lost call has not returned yet: it may still touch the replicas.
  bool tasks_outstanding() const;

  const ModelSpec &spec() const { return spec_; }
  const TrainerConfig &config() const { return config_; }
  size_t device_count() const { return replicas_.size(); }
  // The replicas run on CUDA GPUs.
  bool on_gpus() const { return on_gpus_; }
  // GPU replicas: their all-reduce (nullptr with one replica or on CPU devices). A test seam.
  CudaCollective *cuda_collective();
  size_t parameter_count() const { return spec_.parameter_count(); }
  uint64_t optimizer_steps() const { return optimizer_steps_; }
  uint64_t nonfinite_steps() const { return nonfinite_steps_; }
  const LossScaler &loss_scaler() const { return scaler_; }
  uint64_t overflow_steps() const { return overflow_steps_; }
  double last_learning_rate() const { return last_lr_; }

  // x: batch * input size 4-byte values, float32 or (spec().input_dtype() kI32) int32 tokens below
  // spec().token_bound(); labels: batch * spec().targets_per_sample(), each in [0, classes) or
  // kIgnoreLabel. s is complete when step returns or throws DPT_ERROR_NON_FINITE (the window was
  // discarded); other errors leave it partly written.
  void step(const void *x, const int32_t *labels, size_t batch, StepStats &s);
  StepStats step(const void *x, const int32_t *labels, size_t batch) {
    StepStats s;
    step(x, labels, batch, s);
    return s;
  }
  // Applies a pending, unfinished accumulation window; returns whether there was one.
  bool flush();
  EvalStats evaluate(const void *x, const int32_t *labels, size_t n);
  // logits: n * spec().output().size() floats.
  void predict(const void *x, size_t n, float *logits);
  // trainer_statistics.cpp: whether the model has batch statistics (batch norm); and one batch of the
  // recomputation of their running statistics (x as step's, no labels): batch_number k >= 1 weighs 1/k, the
  // first resets them, so after batch k they are the plain average of batches 1..k's (a pipeline's: of its
  // micro-batches', which it normalises one by one).
  bool has_batch_statistics() const;
  void recompute_statistics(const void *x, size_t n, uint64_t batch_number);

  void get_parameters(size_t replica, float *out) const;
  void set_parameters(const float *in);
  // The running statistics (spec().buffer_count() floats), identical on every replica.
  void get_buffers(size_t replica, float *out) const;
  void set_buffers(const float *in);
  uint64_t parameter_checksum() const;
  ReplicaMemory replica_memory(size_t replica) const;
  ReplicaTimes replica_times(size_t replica) const;
  // The same figures summed over every step call since the trainer was made (fits' steps included); the
  // bus bandwidth is the bus bytes of all its reductions over their seconds.
  ReplicaTimes replica_totals(size_t replica) const;
  // A timeline of the trainer's work from now on (TraceRecorder), up to max_events per device and thread;
  // then write_trace stops it and writes it to path as Chrome trace-event JSON.
  void start_trace(size_t max_events);
  void write_trace(const std::string &path);
  const ShardLayout &shards() const { return shards_; }
  // The pipeline (nullptr: data parallel).
  const Pipeline *pipeline() const { return pipeline_.get(); }
  // The names of the nodes where the pipeline's stages after the first begin, as
  // TrainerConfig::pipeline_cuts takes them; empty without a pipeline.
  std::vector<std::string> pipeline_cut_names() const;
  std::vector<size_t> split_sizes(size_t batch) const;
  // The samples [first, first + count) of a global batch that this process trains on (all of them
  // without a world).
  std::pair<size_t, size_t> process_range(size_t batch) const;
  const World *world() const { return config_.world; }
  // The optimizer state is sharded across the devices of every process (ShardScope::kWorld), or the
  // pipeline's stages are divided among the processes (PipelineScope::kWorld): save_state is collective,
  // and only process 0 writes a checkpoint.
  bool world_shards() const { return config_.world != nullptr && shards_.ranks() > devices_.size(); }
  // The pipeline's stages are divided among the processes: get_parameters, get_buffers, the checksum and
  // save_state are collective (each process's stages come from it).
  bool stages_across_processes() const { return !process_stages_.empty(); }
  // Every process runs every pipeline stage and a stage's optimizer state is sharded among the replicas of
  // every process (ShardScope::kWorld): the stages' gathers and gradient parts span the processes.
  // Or the stages are divided among the processes and a stage's state among the replicas of its copies.
  bool stage_state_across_processes() const {
    return (world_shards() && !stages_across_processes()) || state_over_copies_;
  }

  // The state of the first replica (they are identical). DPT_ERROR_INVALID_STATE inside an unfinished
  // accumulation window. Collective when world_shards(): every process's ranges of the optimizer state
  // go to every process.
  TrainerState save_state() const;
  // Checks the sizes, then sets every replica; an unfinished accumulation window is discarded.
  void load_state(const TrainerState &state);

  // Epochs trained by fit() so far: keys the shuffle order, so a second fit() continues the sequence.
  uint64_t epochs_done = 0;
  // fit(): samples of the current epoch trained so far (0 between epochs). A checkpoint taken in the middle
  // of an epoch (from fit's progress callback) keeps it, and the next fit() goes on from there in the same
  // order.
  uint64_t samples_into_epoch = 0;

 private:
  // trainer_slices.cpp
  std::vector<double> split_weights() const;
  void assign_slices(size_t batch, bool across_processes = true);
  void reserve_slices();
  void copy_in(const void *x, const int32_t *labels);
  // A pipeline's batch: its micro-batches' room on every device, the inputs into the first stage and the
  // labels (nullptr: none) into the last; flags inputs that hold a NaN or an infinity.
  void copy_in_pipeline(const void *x, const int32_t *labels, size_t n, bool training, bool across = true);
  // Throws for a label outside [0, classes) other than kIgnoreLabel; returns the labels that count in this
  // process's share of the batch (all of it without a world: across processes the caller sums the shares,
  // since fit() fills only its own share of the labels).
  uint64_t check_labels(const int32_t *labels, size_t n) const;
  // Throws for a token outside [0, spec().token_bound()) (int32 inputs only).
  void check_tokens(const void *x, size_t n) const;
  // trainer_speeds.cpp
  void measure_speeds(const void *x, const int32_t *labels, size_t batch);
  void measure_room();
  // trainer_world.cpp
  // Checks that every process built the same trainer and learns every process's device count.
  void join_world();
  // Every process starts from process 0's initial parameters.
  void share_initial(std::vector<float> &initial);
  // Update phase, device thread rank (world_shards): every range of the parameters from its owner, within
  // the process and then across the processes.
  void gather_across_world(size_t rank);
  // The span of the parameters that process p's devices own (world_shards, without a pipeline).
  std::pair<size_t, size_t> process_span(size_t p) const;
  // The spans of the parameters that process p's devices own (world_shards): one, or one per pipeline
  // stage.
  std::vector<std::pair<size_t, size_t>> process_spans_of(size_t p) const;
  // Every process's span, world size + 1 offsets (empty unless world_shards).
  std::vector<size_t> process_spans() const;
  // Each process sharding among its own devices across processes (the process scope): the pieces its sums
  // over the processes go by, those between every process's range cuts (pieces_over_processes; a process of
  // one device, which shards nothing, sums by the others' pieces too). Empty otherwise.
  std::vector<ShardPiece> process_pieces() const;
  // GPUs whose communicator spans the processes, the optimizer state sharded within each (the process
  // scope; a process of several devices somewhere): the route of each piece's sums to every owner of it
  // (process_routes); empty otherwise.
  ProcessRoutes process_routes_of_gpus() const;
  // Stages divided among the processes: every process's stages' range of a vector (the parameters, or the
  // running statistics) from it to every process (broadcasts rooted at each; collective).
  void share_stages_across_world(float *vector, bool buffers) const;
  // save_state, world_shards: every process's ranges of the optimizer state (filled on the devices' own
  // process only) to every process.
  void share_state_across_world(float *state) const;
  void world_sum(double *values, size_t count);
  // trainer_state.cpp
  void set_parameters_locked(const float *in);
  // Sharded parameters: makes this process's ranges readable by every process's next pass (collective
  // across processes, world scope; a no-op otherwise).
  void publish_parameters();
  void set_buffers_locked(const float *in);
  // Replica rank's shard of the optimizer state to and from the unsharded layout (TrainerState's).
  void unshard_state(size_t rank, const float *shard, float *whole) const;
  void reshard_state(size_t rank, const float *whole, float *shard) const;
  // The replica's parameters (or optimizer state) copied to the host.
  void copy_to_host(size_t replica, const DeviceBuffer &buffer, float *out, size_t count = SIZE_MAX) const;
  // trainer_pipeline_plan.cpp
  void plan_pipeline();
  // Without pipeline_cuts: where stages - 1 cuts divide the pipeline_balance's costs most evenly.
  std::vector<size_t> automatic_cuts(size_t stages) const;
  // plan_pipeline with PipelineScope::kWorld: this process's stages of the whole model's.
  void place_stages_across_processes(std::vector<PipelineStage> all, size_t local);
  // trainer_pipeline.cpp
  void start_pipeline(size_t replicas_per_stage);
  // Update phase, device thread rank, when a parameter is tied across stages (mirrored_): the source's
  // stage adds the mirrors' gradients to the source's; after the update the mirrors copy its values.
  void add_mirror_gradients(size_t rank);
  void refresh_mirrors(size_t rank);
  // Rank's mirror (if its stage has one) copies the source's values, which are final.
  void copy_mirror(size_t rank);
  // The source of a stage's mirror is one of this process's stages (else another process's: remote_ties_).
  bool source_here(const PipelineStage &stage) const {
    return stage.mirror_source >= stages_.front().param_begin &&
           stage.mirror_source < stages_.back().param_end;
  }
  // The device of the stage that owns flat parameter `offset`, replica index of rank.
  size_t owner_of(size_t offset, size_t rank) const;
  // Device thread rank: its stage's part of a training step (compute_seconds: its forwards and backwards,
  // not its waits), of an evaluation (with_labels) or of a prediction.
  // overlap: the window's last micro-batch, whose last backward hands the stage's buckets over as it goes.
  void run_stage(size_t rank, bool overlap);
  void infer_stage(size_t rank, bool with_labels);
  // A replica holds a range of the parameters (sharded parameters, a pipeline stage), not all of them.
  bool ranged_parameters() const { return gatherer_ != nullptr || pipeline_ != nullptr; }
  // A pipeline stage's parameters (and gradients): its range, then its mirror of a tied parameter.
  size_t stage_floats(size_t rank) const {
    const PipelineStage &s = stages_[rank * stages_.size() / devices_.size()];
    return s.param_end - s.param_begin + s.mirror_floats;
  }
  // The first flat parameter of rank's pipeline stage (its parameter and gradient buffers hold the stage's
  // range; the range it updates, shards_'s, is a part of it when the optimizer is sharded).
  size_t stage_begin(size_t rank) const {
    return stages_[rank * stages_.size() / devices_.size()].param_begin;
  }
  size_t stage_size(size_t rank) const {
    const PipelineStage &s = stages_[rank * stages_.size() / devices_.size()];
    return s.param_end - s.param_begin;
  }
  void gather_stage(size_t rank);
  // A pipeline with a sharded optimizer in the world scope: the index of process p's first replica among
  // the job's replicas of a stage, and process p's part of stage s (offsets from the stage's first
  // parameter).
  size_t stage_replica_offset(size_t p) const;
  std::pair<size_t, size_t> stage_span(size_t s, size_t p) const;
  // For the stages' gradient reduction: per stage, every process's part (world size + 1 offsets from the
  // stage's first parameter; empty unless world_shards()), and each stage's range length.
  std::vector<std::vector<size_t>> stage_process_spans() const;
  std::vector<size_t> stage_lengths() const;
  // And per stage its replicas' parts (replicas per stage + 1 offsets from the stage's first parameter)
  // when the optimizer is sharded among them in a single process, or in each process that runs every
  // stage (the process scope): they reduce-scatter; else empty.
  std::vector<std::vector<size_t>> stage_replica_parts() const;
  size_t buffer_begin(size_t rank) const {
    return pipeline_ != nullptr ? pipeline_->stage_of(rank).buffer_begin : 0;
  }
  // trainer.cpp
  PassInfo pass_info(size_t n, uint64_t first_sample, uint64_t step, bool training, size_t rank = 0) const {
    return PassInfo{n,
                    first_sample,
                    config_.seed,
                    step,
                    training,
                    &group_->aborted(),
                    rank,
                    training ? statistics_.get() : nullptr,
                    config_.sync_batch_norm,
                    training ? float(loss_multiplier_) : 1.0f,
                    gatherer_ != nullptr ? gatherer_->source(rank) : ParameterSource{},
                    trace_->recording() ? OpTimer{&TraceLane::op_done, &trace_lanes_[rank]} : OpTimer{}};
  }
  void compute_gradients(size_t rank, bool post_buckets);
  // After a failed phase: waits for the work still queued on the GPU replicas' streams (which may read the
  // caller's host buffers), ignoring its errors.
  void drain_streams() noexcept;
  bool update_replicas(StepStats &s, bool reduced);
  double global_norm(size_t rank);
  // The summed gradient of the range rank updates: element shards_.begin(rank) first.
  float *owned_gradients(size_t rank);
  float *owned_parameters(size_t rank);
  // Zeroes the gradients and forgets the window's micro-batches.
  void drop_window();
  void discard_window(StepStats &s);
  void skip_overflow(StepStats &s);
  void report_discarded(const char *where) const;
  // After a step call: each replica's times (reduced: whether the call reduced gradients, and how).
  void record_replica_times(double total_seconds, bool reduced, bool overlapped);
  // DPT_ERROR_OUT_OF_RANGE naming the replica unless replica < the device count.
  void require_replica(size_t replica) const;
  void check_usable() const;
  void check_no_task_out() const;
  // Runs fn, which uses the devices. A device failure, a timeout or an aborted collective leaves the
  // replicas in an unknown state: the trainer refuses further work.
  template <typename Fn>
  void guard_devices(Fn &&fn) {
    try {
      fn();
    } catch (const Error &e) {
      if (e.status() == DPT_ERROR_DEVICE || e.status() == DPT_ERROR_TIMEOUT ||
          e.status() == DPT_ERROR_COMMUNICATION)
        broken_ = true;
      drain_streams();
      throw;
    }
  }
  // Runs one phase on every device (DeviceGroup::run: fn captures by value).
  template <typename Fn>
  void run_phase(const Fn &fn) {
    guard_devices([&] { group_->run(fn); });
  }

  std::shared_ptr<Context> context_;
  ModelSpec spec_;
  TrainerConfig config_;
  std::vector<Device *> devices_;
  // A pipeline's stages (empty without one), before replicas_, whose networks refer to their models: this
  // process's (all of them unless the stages are divided among the processes, first_stage_ the model's
  // index of its first).
  std::vector<PipelineStage> stages_;
  std::vector<size_t> cuts_;  // the model's nodes where its stages after the first begin
  size_t first_stage_ = 0;
  // Stages divided among more processes than stages: stage_copies_ processes hold the same stages (data
  // parallel among them, each on its share of the batch), data_rank_ this process's index among them, and
  // stage_world_ those processes (nullptr with one copy).
  size_t stage_copies_ = 1, data_rank_ = 0;
  const World *stage_world_ = nullptr;
  // Stages divided among the processes: per process, its stages' ranges of the parameters and of the running
  // statistics (empty otherwise).
  struct ProcessStages {
    size_t param_begin = 0, param_end = 0, buffer_begin = 0, buffer_end = 0;
  };
  std::vector<ProcessStages> process_stages_;
  // Stages divided among the processes with copies, each stage's optimizer state sharded among every copy's
  // replicas of it (ShardScope::kWorld): per process, its parts of its stages (a checkpoint's pieces).
  bool state_over_copies_ = false;
  std::vector<std::vector<std::pair<size_t, size_t>>> process_state_spans_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::unique_ptr<Pipeline> pipeline_;
  // A pipeline with a sharded optimizer: per stage, the ranges of the replicas that share its optimizer
  // state (this process's, or in the world scope every process's in process order) relative to the stage's
  // first parameter (sharing replicas + 1 offsets); empty otherwise.
  std::vector<std::vector<size_t>> stage_bounds_;
  // A stage's optimizer state sharded among each process's own replicas of it (the process scope) while
  // other processes hold the stage too (every process runs every stage, in one process at least sharded;
  // or copies of divided stages): per stage of this process, the pieces between every process's part cuts,
  // the stage's sums over the processes going piece by piece (offsets from the stage's first parameter;
  // owner: this process's replica of the stage whose part holds the piece). Empty otherwise.
  std::vector<std::vector<ShardPiece>> stage_pieces_;
  // The same sums on GPUs, whose stage communicators span those processes: per stage of this process, each
  // piece's route to every owner of it (process_routes). Empty where stage_pieces_ is.
  std::vector<ProcessRoutes> stage_routes_;
  bool mirrored_ = false;   // a stage mirrors a parameter tied to an earlier stage's (or a remote end of one)
  RemoteTies remote_ties_;  // stages divided among the processes: the ties whose ends are in two of them
  std::vector<DeviceBuffer> mirror_scratch_;  // GPUs, mirrored_: per rank, a mirror's gradient copied in
  // The ranges of the parameters each replica updates and keeps optimizer state for (all of them unless
  // the optimizer is sharded). Before collective_, which refers to it.
  ShardLayout shards_;
  // The timeline (recording only between start_trace and write_trace), and where each replica's op timer
  // records. Before collective_ and gatherer_, which refer to it.
  struct TraceLane {
    TraceRecorder *recorder = nullptr;
    size_t row = 0;
    static void op_done(void *context, size_t node, bool backward, double start, double end) {
      const TraceLane &lane = *static_cast<const TraceLane *>(context);
      lane.recorder->record(lane.row, backward ? TraceKind::kBackward : TraceKind::kForward, node, start,
                            end);
    }
  };
  std::unique_ptr<TraceRecorder> trace_;
  mutable std::vector<TraceLane> trace_lanes_;
  // Sharded parameters: where each pass reads them (nullptr: every replica holds them whole).
  std::unique_ptr<ParameterGatherer> gatherer_;
  // Sharded: each rank's gradient norm block sums (its own blocks, zeros elsewhere), summed across ranks.
  std::vector<std::vector<double>> norm_blocks_;
  // The gradient all-reduce, chosen in the constructor by the kind of the devices. Declared before group_:
  // the group is destroyed first (it waits for tasks still out), then what the tasks touch.
  std::unique_ptr<GradientCollective> collective_;
  // Sums the batch statistics of the ops that have them across the replicas, in the middle of a pass
  // (nullptr: the model has none, or one replica is the whole batch).
  std::unique_ptr<StatisticsReducer> statistics_;
  // A pipeline with several replicas per stage: each stage's reducer among them (empty otherwise).
  std::vector<std::unique_ptr<StatisticsReducer>> stage_statistics_;
  std::unique_ptr<DeviceGroup> group_;
  bool on_gpus_ = false;
  mutable bool broken_ = false;           // a device failed or timed out: the replicas may differ
  std::vector<double> measured_weights_;  // kAuto, after the first step
  std::vector<size_t> room_;              // kAuto on GPUs: samples each replica has memory for
  size_t cached_batch_ = 0;               // the split of the last batch size, reused while it repeats
  bool cached_across_ = true;
  size_t cached_first_ = 0;  // this process's first sample of the cached batch
  std::vector<size_t> cached_counts_;
  std::vector<double> process_weights_;  // with a world: the device count of every process
  std::vector<size_t> process_first_;    // with a world: the index of every process's first device, then
                                         // the number of devices in the job
  uint64_t optimizer_steps_ = 0;
  size_t pending_micro_ = 0;  // micro-batches accumulated since the last update
  uint64_t pending_samples_ = 0;
  uint64_t pending_targets_ = 0;  // the counted targets of those micro-batches: the gradient's divisor
  uint64_t nonfinite_steps_ = 0;  // windows discarded for NaN or infinity
  LossScaler scaler_{LossScaling{}};
  uint64_t overflow_steps_ = 0;  // windows the loss scaler skipped
  // What the window's loss gradient is multiplied by: the loss scale over the first micro-batch's targets
  // rounded up to a power of two (1 without loss scaling). See step().
  double loss_multiplier_ = 1;
  double last_lr_ = 0;
  std::vector<ReplicaTimes> replica_times_;   // of the last step call
  std::vector<ReplicaTimes> replica_totals_;  // of every step call (bus_bandwidth: see replica_totals())
  // Per replica: the bus bytes and the seconds of every reduction (a pipeline's hand-overs move none).
  struct ReductionTotals {
    double bus_bytes = 0, seconds = 0;
  };
  std::vector<ReductionTotals> reduction_totals_;
  std::vector<DecaySegment> decayed_;  // the parameters weight decay applies to
};

}  // namespace dpt
