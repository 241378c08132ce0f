package dptrain

import (
	"runtime"
	"time"

	"dptrain.org/dptrain/internal/swig"
)

// SplitPolicy says how a batch is divided among the devices.
type SplitPolicy int

// Split policies.
const (
	SplitEven     SplitPolicy = 0 // equal slices; the first (batch % K) devices get one more sample
	SplitWeighted SplitPolicy = 1 // slices proportional to TrainerOptions.SplitWeights
	SplitAuto     SplitPolicy = 2 // weights measured once, at the first step, from each device's speed
)

// AllReduceAlgorithm is the gradient all-reduce algorithm.
type AllReduceAlgorithm int

// All-reduce algorithms.
const (
	AllReduceRing  AllReduceAlgorithm = 0 // reduce-scatter then all-gather
	AllReduceNaive AllReduceAlgorithm = 1 // reduce to device 0, then broadcast
)

// InitScheme is the parameter initialisation; biases start at zero in both schemes.
type InitScheme int

// Initialisation schemes.
const (
	InitUniformFanIn InitScheme = 0 // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (the library's default)
	InitNormal       InitScheme = 1 // N(0, InitStd^2)
)

// NonFinitePolicy says what a step does when its inputs, loss or gradients hold a NaN or an infinity.
type NonFinitePolicy int

// Non-finite policies.
const (
	NonFiniteSkip  NonFinitePolicy = 0 // skip the update (parameters and optimizer state unchanged) and count it
	NonFiniteError NonFinitePolicy = 1 // the same, and the step returns an error (StatusNonFinite)
)

// Communicator says how far a trainer reaches: this process's devices, or every process of an MPI job.
type Communicator int

// Communicators.
const (
	CommunicatorLocal Communicator = 0 // the devices of this process (default)
	CommunicatorMPI   Communicator = 1 // every process of the MPI job started by mpirun
)

// BatchNormMode says how batch norm layers compute their batch statistics across the devices.
type BatchNormMode int

// Batch norm modes.
const (
	// BatchNormSync: over the whole global batch (every device's per-channel count, sum and sum of squares
	// combined), so the K-device step equals the 1-device full-batch step under any split (default).
	BatchNormSync BatchNormMode = 0
	// BatchNormLocal: over each device's own slice (as DataParallel does): the step depends on the split.
	// The running statistics still follow the global batch, so every replica holds the same.
	BatchNormLocal BatchNormMode = 1
)

// Precision is the precision of a model's matrix products (Conv2D, Dense, Linear, CausalSelfAttention).
type Precision int

// Precisions.
const (
	// PrecisionFP32: float32 throughout (default).
	PrecisionFP32 Precision = 0
	// PrecisionBF16: mixed precision: every matrix product takes its inputs rounded to bfloat16 and
	// accumulates in float32; everything else (the parameters, activations, gradients, the loss and the
	// optimizer) stays float32. On CPU devices and GPUs.
	PrecisionBF16 Precision = 1
	// PrecisionFP16: mixed precision: every matrix product takes its inputs rounded to IEEE float16 and
	// accumulates in float32, the rest as in PrecisionBF16, with dynamic loss scaling (PyTorch GradScaler's
	// policy): the loss is multiplied by a power-of-two scale before backward; a window whose gradient
	// overflows float16 is skipped (StepResult.SkippedOverflow: not an error, the parameters and optimizer
	// state unchanged) and the scale halved (never below 1); after TrainerOptions.LossScaleGrowthInterval
	// applied windows in a row it doubles. On CPU devices and GPUs.
	PrecisionFP16 Precision = 2
)

// ShardMode says what sharded data parallel splits across a trainer's devices instead of keeping a full
// copy on each (TrainerOptions.Shard).
type ShardMode int

// Shard modes.
const (
	// ShardNone: every device holds the parameters, the gradient and the optimizer state whole (default).
	ShardNone ShardMode = 0
	// ShardOptimizer (ZeRO stage 1): each device keeps, and updates, the optimizer state of one contiguous
	// range of the parameters only; the gradient is reduce-scattered and the updated ranges all-gathered.
	// The same bits as ShardNone; per device the optimizer state becomes 1/K of its bytes over K devices.
	// CPU devices and GPUs (on GPUs of their own each range's sums go to its owner over NCCL; on a shared
	// GPU the gradient is all-reduced whole; the updated ranges are copied across).
	ShardOptimizer ShardMode = 1
	// ShardGradients (ZeRO stage 2): also the gradient. Backward writes each gradient bucket (BucketBytes,
	// whole layers) into one of two staging buffers, and each finished bucket is reduce-scattered into the
	// devices' ranges while backward goes on; each device keeps the summed gradient of its range only (plus
	// the two staging buckets). The same bits as ShardNone with one micro-batch per optimizer step; with
	// AccumulationSteps > 1 each micro-batch's sum is added into the range (one more float32 rounding per
	// micro-batch). CPU devices; GPUs within one process or across every GPU of an MPI job with
	// ShardScopeWorld (each bucket reduced to its owners over NCCL while backward waits, one staging bucket;
	// StatusUnsupported with ShardScopeProcess across processes).
	// Tied parameters (Model.Tie) are sharded like the others. Across MPI processes each
	// process shards among its own devices (the counts may differ; a process of one device shards nothing).
	ShardGradients ShardMode = 2
	// ShardParameters (ZeRO stage 3, PyTorch's FSDP): also the parameters. Each device keeps its range of the
	// parameters only, and a pass (training, evaluation, prediction) copies each bucket of them in from the
	// devices that own it just before the bucket's layers run, into one gather buffer of the largest bucket's
	// size (AdamW: 16/K bytes per parameter, plus that buffer and the two staging buckets). The bits of
	// ShardGradients; the same restrictions. Trainer.Parameters,
	// Trainer.Checksum and checkpoints gather the whole vector.
	ShardParameters ShardMode = 3
)

// ShardScope says, across MPI processes, which devices share one copy of what ShardMode splits
// (TrainerOptions.ShardScope).
type ShardScope int

// Shard scopes.
const (
	// ShardScopeProcess: each process shards among its own devices and keeps one whole copy across them
	// (PyTorch FSDP's HYBRID_SHARD; default); a process of one device shards nothing.
	ShardScopeProcess ShardScope = 0
	// ShardScopeWorld: one copy across every device of every process (DeepSpeed's ZeRO, FSDP's FULL_SHARD);
	// every shard mode on CPU devices, any device count per process (ShardParameters: a pass reads the
	// ranges other processes own with one-sided MPI gets); GPUs with ShardOptimizer (ranges gathered over
	// NCCL). The same bits as ShardNone (with two processes; ShardGradients and ShardParameters with
	// accumulation: one rounding per micro-batch). Trainer.SaveCheckpoint is then collective: every
	// process calls it, process 0 writes the file; with ShardParameters, SetParameters, LoadCheckpoint and
	// Close are collective too (every process, such trainers closed in the same order). Without a
	// communicator, the same as ShardScopeProcess.
	ShardScopeWorld ShardScope = 1
)

// PipelineScope says where a pipeline's stages run across MPI processes (TrainerOptions.PipelineScope).
type PipelineScope int

// Pipeline scopes.
const (
	// PipelineScopeProcess: every process runs every stage on its own devices, on its share of each batch
	// (pipeline within the process, data parallel across the processes; default).
	PipelineScopeProcess PipelineScope = 0
	// PipelineScopeWorld: the stages are divided among the P processes, S/P each on its devices (or, P a
	// multiple of S, one each: P/S copies of every stage, data parallel among them; or PipelineCopies C
	// copies of the pipeline, S C/P stages each), the activations and gradients between processes sent as
	// MPI messages (model parallel across machines; from GPUs through host buffers). Every process is given
	// the whole batch and gets the bits of one process running the S stages on P times its devices (within
	// 1e-5 with more than two copies). S a multiple of P or P of S (or of P/C), the same device count in
	// every process, and ShardNone or ShardOptimizer (each stage's optimizer state among its replicas in the process, or with
	// ShardScopeWorld among every copy's replicas of it; else StatusUnsupported); a tie between two processes' stages (a head tied to the
	// embedding) goes between them as messages. Trainer.Parameters, Buffers,
	// Checksum, SaveCheckpoint and SaveSafetensors are then collective: every process calls them, process 0
	// writes the files. Without a communicator, the same as PipelineScopeProcess.
	PipelineScopeWorld PipelineScope = 1
)

// PipelineBalance is what a pipeline's automatic cuts divide evenly among its stages when
// TrainerOptions.PipelineCuts names none (TrainerOptions.PipelineBalance); Trainer.PipelineCuts gives the cuts
// chosen.
type PipelineBalance int

// Pipeline balances.
const (
	// PipelineBalanceWork: each layer's estimated work per sample (its weight matrices' multiply-adds plus one
	// operation per output element): the same cuts on every machine and in every run (default).
	PipelineBalanceWork PipelineBalance = 0
	// PipelineBalanceTime: each layer's measured time. When the trainer is created its first device trains
	// the whole model on one micro-batch of synthetic samples (TrainerOptions.PipelineBalanceBatch), once to
	// warm up and then three times, and each layer counts its best forward plus backward; across MPI
	// processes process 0 measures and every process takes its cuts. A model that does not fit the first
	// device fails with its out-of-memory error. The cuts may vary from run to run: name them
	// (Trainer.PipelineCuts) to repeat a run.
	PipelineBalanceTime PipelineBalance = 1
	// PipelineBalanceParameters: each layer's parameters; every stage holds about the same share of the
	// parameters, their gradients and optimizer state (memory, not time).
	PipelineBalanceParameters PipelineBalance = 2
)

// PipelineSchedule is the order in which each stage of a pipeline runs its micro-batches' forwards and
// backwards (TrainerOptions.PipelineSchedule). Both give the same bubble, (S - 1) / (M + S - 1) of the step,
// and the same results.
type PipelineSchedule int

// Pipeline schedules.
const (
	// Pipeline1F1B (PipeDream-Flush, as Megatron-LM): stage s of S runs min(S - s - 1, M) forwards, then one
	// forward and one backward in turn, then the backwards left; it keeps at most S - s micro-batches'
	// activations (default).
	Pipeline1F1B PipelineSchedule = 0
	// PipelineGPipe: every forward, then every backward; each stage keeps all M micro-batches' activations.
	PipelineGPipe PipelineSchedule = 1
)

// The library's defaults of PrecisionFP16's loss scaling (GradScaler's), which the zero values of
// TrainerOptions.InitialLossScale and TrainerOptions.LossScaleGrowthInterval ask for.
const (
	DefaultInitialLossScale        = 65536 // 2^16
	DefaultLossScaleGrowthInterval = 2000  // applied windows in a row before the scale doubles
)

// OptimizerKind is the optimizer.
type OptimizerKind int

// Optimizers.
const (
	SGD   OptimizerKind = 0 // SGD with optional momentum, Nesterov and L2 weight decay
	AdamW OptimizerKind = 1 // Adam with decoupled weight decay
)

// WeightDecayScope says which parameters weight decay applies to (two parameter groups: decayed and not).
type WeightDecayScope int

// Weight decay scopes.
const (
	WeightDecayAll WeightDecayScope = 0 // every parameter (the library's default)
	// WeightDecayMatrices: the weight matrices of dense, linear and conv2d only; not biases, norms or
	// embedding tables (as GPT recipes decay).
	WeightDecayMatrices WeightDecayScope = 1
)

// ScheduleKind is the learning-rate schedule, applied after an optional linear warm-up.
type ScheduleKind int

// Learning-rate schedules.
const (
	ScheduleConstant ScheduleKind = 0 // lr
	ScheduleStep     ScheduleKind = 1 // lr * gamma^floor((t - warmup) / step_size)
	ScheduleCosine   ScheduleKind = 2 // min_lr + (lr - min_lr) * (1 + cos(pi * (t - warmup) / (total - warmup))) / 2
)

// OptimizerOptions configures the optimizer. Zero fields take the library's defaults, as noted.
type OptimizerOptions struct {
	Kind            OptimizerKind // default SGD
	LearningRate    float32       // 0 = 0.1
	Momentum        float32       // SGD momentum in [0, 1)
	Nesterov        bool          // SGD: Nesterov momentum (needs Momentum > 0)
	WeightDecay     float32       // SGD: L2 added to the gradient; AdamW: decoupled
	Beta1           float32       // AdamW; 0 = 0.9
	Beta2           float32       // AdamW; 0 = 0.999
	Epsilon         float32       // AdamW; 0 = 1e-8
	Schedule        ScheduleKind  // default ScheduleConstant
	WarmupSteps     uint64        // linear warm-up over this many optimizer steps
	StepSize        uint64        // ScheduleStep: steps between decays (> 0)
	Gamma           float32       // ScheduleStep: decay factor; 0 = 0.1
	TotalSteps      uint64        // ScheduleCosine: optimizer steps of the whole run
	MinLearningRate float32       // ScheduleCosine: final learning rate
	ClipNorm        float32       // clip the global gradient norm to this value; 0 = off
	// WeightDecayScope: which parameters WeightDecay applies to; default WeightDecayAll.
	WeightDecayScope WeightDecayScope
}

// TrainerOptions configures NewTrainer. The zero value (or nil) asks for the library's defaults.
type TrainerOptions struct {
	Devices           []int              // device indices of the context; nil = all devices
	Split             SplitPolicy        // default SplitEven
	SplitWeights      []float32          // SplitWeighted: one positive weight per device
	AllReduce         AllReduceAlgorithm // default AllReduceRing
	Seed              uint64             // seeds initialisation, shuffling and dropout
	AccumulationSteps int                // micro-batches (Step calls) per optimizer step; 0 = 1
	Init              InitScheme         // default InitUniformFanIn
	InitStd           float32            // InitNormal's standard deviation; 0 = 0.01
	NonFinite         NonFinitePolicy    // default NonFiniteSkip (a skip discards the accumulation window)
	// Timeout is the deadline of each multi-device operation (a step's compute or update, an evaluation);
	// 0 = the library's default (300 s), negative = none. When it passes, or a device fails, the call
	// returns StatusTimeout or StatusDevice and the trainer refuses further work: close it and create a
	// new one (from the last checkpoint).
	Timeout time.Duration
	// BucketBytes is the gradient bucket size of the all-reduce overlapped with backward; 0 = the
	// library's default (1 MiB), negative = one all-reduce after backward. Results are bitwise the same.
	BucketBytes int
	// Communicator: CommunicatorLocal (default) or CommunicatorMPI, a trainer over every process of an MPI
	// job (docs/distributed.md); every process then passes the same global batches.
	Communicator Communicator
	// BatchNorm: models with batch norm layers, BatchNormSync (default) or BatchNormLocal.
	BatchNorm BatchNormMode
	// Precision of the matrix products: PrecisionFP32 (default), PrecisionBF16 or PrecisionFP16, on CPU
	// devices and GPUs.
	Precision Precision
	// InitialLossScale is PrecisionFP16's loss scale at the first step: a power of two from 1 to 2^64;
	// 0 = the library's default (DefaultInitialLossScale, 65536). Anything else is refused with
	// StatusInvalidArgument, whatever the precision.
	InitialLossScale float64
	// LossScaleGrowthInterval (PrecisionFP16): applied windows in a row after which the loss scale doubles;
	// 0 = the library's default (DefaultLossScaleGrowthInterval, 2000), negative = it never grows.
	LossScaleGrowthInterval int
	// AllreduceDtype is what the gradient all-reduce sends: PrecisionFP32 (the zero value, the default) or
	// PrecisionBF16 / PrecisionFP16, half the bytes (as NCCL's 16-bit all-reduce and DDP's compression
	// hooks): each device's contribution, each process's sum and the finished sum are rounded to the 16-bit
	// type, the sums themselves are float32. The replicas stay bitwise identical; the K-device step then
	// differs from the 1-device step by that rounding. Independent of Precision; an fp16 wire without loss
	// scaling overflows on gradient sums beyond 65504 (then NonFinite applies). On CPU devices and GPUs; a
	// value outside the enum is StatusInvalidArgument.
	AllreduceDtype Precision
	// ActivationDtype is how activations are kept from forward to backward: PrecisionFP32 (the zero value,
	// the default) or PrecisionBF16 / PrecisionFP16: each activation is rounded to the 16-bit type once its
	// last forward reader has run and widened back into a float32 working copy for backward (as autocast
	// keeps a 16-bit matrix product's output). ResNet-18's and gpt-mini's activations then take 0.59 and
	// 0.61 of their float32 bytes; a model whose widest tensors are most of its activations (LeNet) keeps
	// them float32 (the store never takes more memory than float32). Backward reads the rounded
	// activations: no bit changes where they only feed matrix products of the same 16-bit precision (and
	// ReLU), about one 16-bit rounding where a normalisation (batch norm, layer norm) or an activation
	// function reads them. The rounding is per element: the replicas stay bitwise identical and the K-device
	// step equals the 1-device step as without it. Independent of Precision. On CPU devices and GPUs; a value
	// outside the enum is StatusInvalidArgument.
	ActivationDtype Precision
	// Shard is sharded data parallel: ShardNone (the zero value, the default), ShardOptimizer (ZeRO stage 1:
	// each device keeps, and updates, the optimizer state of one contiguous range of the parameters),
	// ShardGradients (ZeRO stage 2: also the summed gradient of that range, reduce-scattered bucket by bucket
	// during backward through two staging buckets of BucketBytes) or ShardParameters (ZeRO stage 3, FSDP: also
	// the parameters of that range, each bucket of them copied in from the devices that own it into one gather
	// buffer just before the bucket's layers run, in training, evaluation and prediction). ShardOptimizer trains
	// to the same bits as ShardNone (the parameters, the step and fit results, and checkpoints, which load into
	// any device count and mode), and so do ShardGradients and ShardParameters with one micro-batch per
	// optimizer step (with AccumulationSteps > 1, one more float32 rounding per micro-batch); with
	// ShardParameters, Trainer.Parameters, Trainer.Checksum and checkpoints gather the whole vector. Per device
	// the optimizer state becomes 1/K of its bytes over K devices (AdamW: 8 bytes per parameter become 8/K),
	// with ShardGradients and ShardParameters the gradient its range's 4/K bytes per parameter plus the two
	// staging buckets, and with ShardParameters the parameters their range's 4/K bytes per parameter plus the
	// gather buffer; Trainer.ReplicaMemory reports them. ShardOptimizer runs on CPU devices and GPUs,
	// ShardGradients on GPUs (across processes in the world scope only), ShardParameters on GPUs within one
	// process (StatusUnsupported across processes); tied
	// parameters are sharded like the others; across MPI processes each process shards among its own
	// devices; a value outside the enum is StatusInvalidArgument.
	Shard ShardMode
	// ShardScope: across MPI processes, ShardScopeProcess (the zero value, the default: each process shards
	// among its own devices) or ShardScopeWorld (among every device of the job; ShardOptimizer or
	// ShardGradients); a value outside the enum is StatusInvalidArgument.
	ShardScope ShardScope
	// PrefetchParameters: with ShardParameters, each pass reads the next bucket of parameters while the
	// current bucket's layers run (from the other processes in ShardScopeWorld, from the other GPUs on CUDA
	// devices), at the cost of a second gather buffer per device (the largest bucket). False (the default):
	// each bucket is read when its first layer asks. No effect on CPU devices within a process; the same
	// bits either way.
	PrefetchParameters bool
	// PipelineStages is pipeline model parallel: the model is cut into this many stages S, and each step's
	// batch into MicroBatches micro-batches that pass forward through the stages and back. The trainer's K
	// devices hold the stages in order, R = K / S data-parallel replicas of each (each micro-batch split among
	// a stage's replicas, their gradients all-reduced). 0 (the zero value, the default) or 1: no pipeline. K
	// must be a multiple of S (else StatusUnsupported), CPU devices, no sharding but ShardOptimizer in the
	// process scope (each stage's optimizer state cut among the process's replicas of it; else
	// StatusUnsupported), the even split (StatusInvalidArgument) and a parameter tied across stages only as
	// its stage's last parameter, as a language model's head (else StatusUnsupported);
	// the model needs at least PipelineStages - 1 places to cut (between layers, where one tensor is live). A
	// step gives the very bits of R devices with AccumulationSteps M stepped on the same micro-batches (the
	// batch's even split: the first n % M micro-batches get one more sample); with a clip norm the gradient
	// norm may differ in its last bits (docs/pipeline.md). Negative is StatusOutOfRange.
	PipelineStages int
	// MicroBatches is the micro-batches per pipelined step, 1 to 1024 (a batch of fewer samples has one per
	// sample); 0 = four per stage. Above 1024, or negative, is StatusOutOfRange.
	MicroBatches int
	// PipelineSchedule: Pipeline1F1B (the zero value, the default) or PipelineGPipe; a value outside the
	// enum is StatusInvalidArgument.
	PipelineSchedule PipelineSchedule
	// PipelineCuts is where the stages after the first begin: PipelineStages - 1 node names, comma-separated,
	// in node order ("layer2.0.conv1,layer3.0.conv1,layer4.0.conv1"; a node without a name is its index). A
	// stage may begin only at a node where one tensor is live (between blocks, not inside a residual block).
	// "" (the default): the cuts that divide PipelineBalance's costs most evenly (Trainer.PipelineCuts gives
	// them). An unknown name, a node inside a block, names out of order or a count other than
	// PipelineStages - 1 is StatusInvalidArgument.
	PipelineCuts string
	// PipelineScope: across MPI processes, PipelineScopeProcess (the zero value, the default) or
	// PipelineScopeWorld; a value outside the enum is StatusInvalidArgument.
	PipelineScope PipelineScope
	// PipelineBalance: what the automatic cuts balance, PipelineBalanceWork (the zero value, the default),
	// PipelineBalanceTime or PipelineBalanceParameters; only the default with PipelineCuts named, and a value
	// outside the enum, is StatusInvalidArgument.
	PipelineBalance PipelineBalance
	// PipelineBalanceBatch: with PipelineBalanceTime, the batch size the steps will pass (across MPI
	// processes, the global batch); each measuring pass runs one micro-batch of it on one of a stage's
	// replicas (a layer's time per sample depends on the samples it runs at once). 0 = 16 samples. Negative
	// is StatusOutOfRange.
	PipelineBalanceBatch int
	// PipelineCopies: with PipelineScopeWorld across P MPI processes, how many copies C of the pipeline they
	// hold, data parallel among them, each process S C / P stages (the C processes of a block of stages
	// neighbours in rank). 0 = P / S when P > S, else 1. A C that does not divide P, or P / C that does not
	// divide S, is StatusUnsupported; nonzero in the process scope StatusInvalidArgument; no effect without
	// a communicator. Negative is StatusOutOfRange.
	PipelineCopies int
	Optimizer      OptimizerOptions
}

// StepResult is the outcome of one Trainer.Step or Trainer.StepTokens.
type StepResult struct {
	Loss             float64 // mean cross-entropy over this batch's targets (before the update)
	Accuracy         float64 // fraction of this batch's targets predicted correctly (before the update)
	Samples          uint64  // samples in this batch
	Applied          bool    // this call completed an accumulation window and updated the parameters
	OptimizerSteps   uint64  // optimizer steps taken so far
	LearningRate     float64 // learning rate of the update (when applied)
	GradNorm         float64 // global norm of the averaged gradient before clipping (when applied)
	ComputeSeconds   float64 // forward and backward on all devices
	AllReduceSeconds float64 // gradient all-reduce
	UpdateSeconds    float64 // normalisation, clipping and optimizer update
	TotalSeconds     float64 // the whole call
	SkippedNonFinite bool    // a NaN or infinity made this call discard its accumulation window
	NonFiniteSteps   uint64  // windows discarded for non-finite values so far
	// Targets counts the batch's labels that count (not IgnoreLabel): its samples for a classifier, its
	// positions for a sequence model. The loss and the gradient are divided by the window's count of them.
	Targets uint64
	// SkippedOverflow (PrecisionFP16): this call's window overflowed float16 and was skipped (Applied is
	// false, the parameters and optimizer state are unchanged, the loss scale halved). Not an error,
	// whatever TrainerOptions.NonFinite says.
	SkippedOverflow bool
	OverflowSteps   uint64  // windows the loss scaler skipped so far
	LossScale       float64 // the loss scale after this call, which the next backward uses (1 without loss scaling)
}

// EvalResult is the outcome of an evaluation.
type EvalResult struct {
	Loss     float64 // mean cross-entropy per counted target
	Accuracy float64 // fraction of the targets predicted correctly
	Samples  uint64  // samples evaluated
	Seconds  float64 // wall time
	Targets  uint64  // the labels that counted (not IgnoreLabel)
}

// Trainer trains one model data-parallel: one parameter replica per device. It is used by one goroutine
// at a time (a concurrent call returns an error wrapping ErrBusy).
type Trainer struct {
	ptr     swig.Trainer
	h       *handle
	ctx     *Context // kept reachable: the context is destroyed after its trainers
	buffers int      // floats of buffers of one replica (the model's BufferCount, fixed at creation)
}

// NewTrainer creates a trainer on ctx: one replica of model per device, initialised on the first device
// and broadcast to the others. opts may be nil (defaults). The model may be closed afterwards.
func NewTrainer(ctx *Context, model *Model, opts *TrainerOptions) (*Trainer, error) {
	const op = "NewTrainer"
	var o TrainerOptions
	if opts != nil {
		o = *opts
	}
	if model == nil || model.h == nil {
		return nil, nilHandle(op, "model")
	}
	var devices []uint64 // nil = all devices
	if len(o.Devices) > 0 {
		devices = make([]uint64, len(o.Devices))
	}
	for i, d := range o.Devices {
		if d < 0 {
			return nil, newError(op, StatusOutOfRange, "Devices[%d] is negative (%d)", i, d)
		}
		devices[i] = uint64(d)
	}
	if o.AccumulationSteps < 0 {
		return nil, newError(op, StatusOutOfRange, "AccumulationSteps is negative (%d)", o.AccumulationSteps)
	}
	if o.PipelineStages < 0 {
		return nil, newError(op, StatusOutOfRange, "PipelineStages is negative (%d)", o.PipelineStages)
	}
	if o.MicroBatches < 0 {
		return nil, newError(op, StatusOutOfRange, "MicroBatches is negative (%d)", o.MicroBatches)
	}
	if o.PipelineBalanceBatch < 0 {
		return nil, newError(op, StatusOutOfRange, "PipelineBalanceBatch is negative (%d)", o.PipelineBalanceBatch)
	}
	if o.PipelineCopies < 0 {
		return nil, newError(op, StatusOutOfRange, "PipelineCopies is negative (%d)", o.PipelineCopies)
	}
	if err := ctx.begin(op); err != nil {
		return nil, err
	}
	defer ctx.h.release(shared)
	if _, err := model.h.acquire(op, shared); err != nil {
		return nil, err
	}
	defer model.h.release(shared)

	var ptr swig.Trainer
	var buffers int64
	if err := call(op, func() { buffers = model.ptr.BufferCount() }); err != nil {
		return nil, err
	}
	err := call(op, func() {
		to := swig.NewTrainerOptions()
		defer swig.DeleteTrainerOptions(to)
		to.SetSplit(swig.Dpt_split_policy(o.Split))
		to.SetAllreduce(swig.Dpt_allreduce_algorithm(o.AllReduce))
		to.SetSeed(o.Seed)
		if o.AccumulationSteps != 0 {
			to.SetAccumulation_steps(int64(o.AccumulationSteps))
		}
		to.SetInit(swig.Dpt_init_scheme(o.Init))
		if o.InitStd != 0 {
			to.SetInit_std(o.InitStd)
		}
		to.SetNonfinite(swig.Dpt_nonfinite_policy(o.NonFinite))
		if o.Timeout > 0 {
			to.SetTimeout_seconds(o.Timeout.Seconds())
		} else if o.Timeout < 0 {
			to.SetTimeout_seconds(0)
		}
		if o.BucketBytes > 0 {
			to.SetBucket_bytes(int64(o.BucketBytes))
		} else if o.BucketBytes < 0 {
			to.SetBucket_bytes(0)
		}
		to.SetCommunicator(swig.Dpt_communicator(o.Communicator))
		to.SetBatch_norm(swig.Dpt_batch_norm_mode(o.BatchNorm))
		to.SetPrecision(swig.Dpt_precision(o.Precision))
		if o.InitialLossScale != 0 {
			to.SetInitial_loss_scale(o.InitialLossScale)
		}
		if o.LossScaleGrowthInterval > 0 {
			to.SetLoss_scale_growth_interval(uint64(o.LossScaleGrowthInterval))
		} else if o.LossScaleGrowthInterval < 0 {
			to.SetLoss_scale_growth_interval(0)
		}
		to.SetAllreduce_dtype(swig.Dpt_precision(o.AllreduceDtype))
		to.SetActivation_dtype(swig.Dpt_precision(o.ActivationDtype))
		to.SetShard(swig.Dpt_shard_mode(o.Shard))
		to.SetShard_scope(swig.Dpt_shard_scope(o.ShardScope))
		if o.PrefetchParameters {
			to.SetPrefetch_parameters(1)
		}
		to.SetPipeline_stages(int64(o.PipelineStages))
		to.SetMicro_batches(int64(o.MicroBatches))
		to.SetPipeline_schedule(swig.Dpt_pipeline_schedule(o.PipelineSchedule))
		if o.PipelineCuts != "" {
			to.SetPipeline_cuts(o.PipelineCuts)
		}
		to.SetPipeline_scope(swig.Dpt_pipeline_scope(o.PipelineScope))
		to.SetPipeline_balance(swig.Dpt_pipeline_balance(o.PipelineBalance))
		to.SetPipeline_balance_batch(int64(o.PipelineBalanceBatch))
		to.SetPipeline_copies(int64(o.PipelineCopies))
		oo := swig.NewOptimizerOptions()
		defer swig.DeleteOptimizerOptions(oo)
		fillOptimizer(oo, &o.Optimizer)
		weights := o.SplitWeights
		if weights == nil {
			weights = []float32{}
		}
		ptr = swig.NewTrainer__SWIG_1(ctx.ptr, model.ptr, to, oo, devices, weights)
	})
	if err != nil {
		return nil, err
	}
	ctx.h.addDep()
	t := &Trainer{ptr: ptr, ctx: ctx, buffers: int(buffers)}
	t.h = newHandle("Trainer", func() {
		swig.DeleteTrainer(ptr)
		ctx.h.releaseDep()
	})
	runtime.SetFinalizer(t, (*Trainer).Close)
	return t, nil
}

// fillOptimizer copies the non-zero fields of o over the library's defaults (zero = default).
func fillOptimizer(oo swig.OptimizerOptions, o *OptimizerOptions) {
	if o.Kind != 0 {
		oo.SetKind(swig.Dpt_optimizer_kind(o.Kind))
	}
	for _, f := range []struct {
		v   float32
		set func(float32)
	}{
		{o.LearningRate, oo.SetLearning_rate}, {o.Momentum, oo.SetMomentum}, {o.WeightDecay, oo.SetWeight_decay},
		{o.Beta1, oo.SetBeta1}, {o.Beta2, oo.SetBeta2}, {o.Epsilon, oo.SetEpsilon}, {o.Gamma, oo.SetGamma},
		{o.MinLearningRate, oo.SetMin_learning_rate}, {o.ClipNorm, oo.SetClip_norm},
	} {
		if f.v != 0 {
			f.set(f.v)
		}
	}
	if o.Nesterov {
		oo.SetNesterov(1)
	}
	if o.Schedule != 0 {
		oo.SetSchedule(swig.Dpt_schedule_kind(o.Schedule))
	}
	if o.WeightDecayScope != 0 {
		oo.SetWeight_decay_scope(swig.Dpt_weight_decay_scope(o.WeightDecayScope))
	}
	for _, f := range []struct {
		v   uint64
		set func(uint64)
	}{{o.WarmupSteps, oo.SetWarmup_steps}, {o.StepSize, oo.SetStep_size}, {o.TotalSteps, oo.SetTotal_steps}} {
		if f.v != 0 {
			f.set(f.v)
		}
	}
}

// Close destroys the trainer and frees its device memory (after a call running on it returns). It is
// idempotent and always returns nil.
func (t *Trainer) Close() error {
	if t != nil && t.h != nil {
		t.h.close()
	}
	return nil
}

// do runs f as one exclusive call on the trainer.
func (t *Trainer) do(op string, f func()) error { return t.run(op, exclusive, f) }

// read runs f as one call that only reads the trainer (or saves a checkpoint): also allowed from the
// progress callback of a running Fit, which is paused at a report.
func (t *Trainer) read(op string, f func()) error { return t.run(op, reentrant, f) }

func (t *Trainer) run(op string, a access, f func()) error {
	if t == nil || t.h == nil {
		return nilHandle(op, "trainer")
	}
	token, err := t.h.acquire(op, a)
	if err != nil {
		return err
	}
	defer t.h.release(token)
	return call(op, f)
}

func checkBatch(op string, inputs []float32, labels []int32) error {
	if inputs == nil {
		return nilSlice(op, "inputs")
	}
	if labels == nil {
		return nilSlice(op, "labels")
	}
	return nil
}

// Step trains on one batch (or micro-batch, with accumulation): len(labels) samples whose inputs
// (len(labels) * input size floats, NCHW) are read from the caller's slice without a copy.
func (t *Trainer) Step(inputs []float32, labels []int32) (StepResult, error) {
	const op = "Trainer.Step"
	if err := checkBatch(op, inputs, labels); err != nil {
		return StepResult{}, err
	}
	var out StepResult
	err := t.do(op, func() { out = stepResult(t.ptr.Step(inputs, labels)) })
	return out, err
}

// stepResult copies (and frees) a result of the generated layer; a failed call's is the zero value.
func stepResult(r swig.StepResult) StepResult {
	if r.Swigcptr() == 0 {
		return StepResult{} // failed: the error is recorded
	}
	defer swig.DeleteStepResult(r)
	return StepResult{
		Loss:             r.GetLoss(),
		Accuracy:         r.GetAccuracy(),
		Samples:          r.GetSamples(),
		Applied:          r.GetApplied() != 0,
		OptimizerSteps:   r.GetOptimizer_steps(),
		LearningRate:     r.GetLearning_rate(),
		GradNorm:         r.GetGrad_norm(),
		ComputeSeconds:   r.GetCompute_seconds(),
		AllReduceSeconds: r.GetAllreduce_seconds(),
		UpdateSeconds:    r.GetUpdate_seconds(),
		TotalSeconds:     r.GetTotal_seconds(),
		SkippedNonFinite: r.GetSkipped_nonfinite() != 0,
		NonFiniteSteps:   r.GetNonfinite_steps(),
		Targets:          r.GetTargets(),
		SkippedOverflow:  r.GetSkipped_overflow() != 0,
		OverflowSteps:    r.GetOverflow_steps(),
		LossScale:        r.GetLoss_scale(),
	}
}

func evalResult(r swig.EvalResult) EvalResult {
	if r.Swigcptr() == 0 {
		return EvalResult{}
	}
	defer swig.DeleteEvalResult(r)
	return EvalResult{Loss: r.GetLoss(), Accuracy: r.GetAccuracy(), Samples: r.GetSamples(), Seconds: r.GetSeconds(),
		Targets: r.GetTargets()}
}

func checkTokens(op string, tokens, targets []int32) error {
	if tokens == nil {
		return nilSlice(op, "tokens")
	}
	if targets == nil {
		return nilSlice(op, "targets")
	}
	return nil
}

// StepTokens trains a token model on one batch (or micro-batch) of batchSize token sequences: tokens
// holds batchSize * sequence length tokens, targets batchSize * targets per sample labels (a model whose
// output is [T, V]: T per sample), each in [0, V) or IgnoreLabel, which does not count. Both are read from
// the caller's slices without a copy. A float32 model is StatusInvalidArgument (use Step).
func (t *Trainer) StepTokens(tokens, targets []int32, batchSize int) (StepResult, error) {
	const op = "Trainer.StepTokens"
	if err := checkTokens(op, tokens, targets); err != nil {
		return StepResult{}, err
	}
	n, err := toSize(op, "batchSize", batchSize)
	if err != nil {
		return StepResult{}, err
	}
	var out StepResult
	err = t.do(op, func() { out = stepResult(t.ptr.StepTokens(tokens, targets, n)) })
	return out, err
}

// EvaluateTokens computes loss and accuracy on samples token sequences (as Evaluate on floats).
func (t *Trainer) EvaluateTokens(tokens, targets []int32, samples int) (EvalResult, error) {
	const op = "Trainer.EvaluateTokens"
	if err := checkTokens(op, tokens, targets); err != nil {
		return EvalResult{}, err
	}
	n, err := toSize(op, "samples", samples)
	if err != nil {
		return EvalResult{}, err
	}
	var out EvalResult
	err = t.do(op, func() { out = evalResult(t.ptr.EvaluateTokens(tokens, targets, n)) })
	return out, err
}

// PredictTokens writes the logits of samples token sequences (tokens: samples * sequence length) into
// logits (samples * output size floats: T * V per sample for a model whose output is [T, V]), both the
// caller's slices. A causal model's logits at position t see tokens 0..t only.
func (t *Trainer) PredictTokens(tokens []int32, samples int, logits []float32) error {
	const op = "Trainer.PredictTokens"
	n, err := toSize(op, "samples", samples)
	if err != nil {
		return err
	}
	if tokens == nil {
		return nilSlice(op, "tokens")
	}
	if logits == nil {
		return nilSlice(op, "logits")
	}
	return t.do(op, func() { t.ptr.PredictTokens(tokens, n, logits) })
}

// Evaluate computes loss and accuracy on a batch (split across the devices; dropout off).
func (t *Trainer) Evaluate(inputs []float32, labels []int32) (EvalResult, error) {
	const op = "Trainer.Evaluate"
	if err := checkBatch(op, inputs, labels); err != nil {
		return EvalResult{}, err
	}
	var out EvalResult
	err := t.do(op, func() { out = evalResult(t.ptr.Evaluate(inputs, labels)) })
	return out, err
}

// EvaluateDataset evaluates a whole dataset in batches of batchSize (0 = 1000).
func (t *Trainer) EvaluateDataset(d *Dataset, batchSize int) (EvalResult, error) {
	const op = "Trainer.EvaluateDataset"
	b, err := toSize(op, "batchSize", batchSize)
	if err != nil {
		return EvalResult{}, err
	}
	if err := d.begin(op); err != nil {
		return EvalResult{}, err
	}
	defer d.h.release(shared)
	var out EvalResult
	err = t.do(op, func() { out = evalResult(t.ptr.EvaluateDataset(d.ptr, b)) })
	return out, err
}

// RecomputeBatchNorm recomputes the running statistics of the model's batch norms from data, as PyTorch's
// torch.optim.swa_utils.update_bn: forward in training mode over the first samples samples of d (0, or more
// than d holds: all), in order, in batches of batchSize (0 = 256); each running mean and variance becomes
// the plain average of the batches' means and unbiased variances. Parameters, optimizer state and counters
// do not change; a model without batch norm is left as it is. Call it after training, before evaluating.
// A pipeline (PipelineStages > 1), which normalises each micro-batch on its own, averages the statistics of
// the micro-batches a step would cut the batches into. Samples that do not fit the model are
// StatusSizeMismatch.
func (t *Trainer) RecomputeBatchNorm(d *Dataset, batchSize, samples int) error {
	const op = "Trainer.RecomputeBatchNorm"
	b, err := toSize(op, "batchSize", batchSize)
	if err != nil {
		return err
	}
	n, err := toSize(op, "samples", samples)
	if err != nil {
		return err
	}
	if err := d.begin(op); err != nil {
		return err
	}
	defer d.h.release(shared)
	return t.do(op, func() { t.ptr.RecomputeBatchNorm(d.ptr, b, n) })
}

// Predict writes the logits of samples samples (inputs: samples * input size floats) into logits
// (samples * output size floats), both the caller's slices.
func (t *Trainer) Predict(inputs []float32, samples int, logits []float32) error {
	const op = "Trainer.Predict"
	n, err := toSize(op, "samples", samples)
	if err != nil {
		return err
	}
	if inputs == nil {
		return nilSlice(op, "inputs")
	}
	if logits == nil {
		return nilSlice(op, "logits")
	}
	return t.do(op, func() { t.ptr.Predict(inputs, n, logits) })
}

// ParameterCount returns the number of parameters (floats) of one replica.
func (t *Trainer) ParameterCount() (int, error) {
	var n int64
	err := t.read("Trainer.ParameterCount", func() { n = t.ptr.ParameterCount() })
	return int(n), err
}

// DeviceCount returns the number of devices (replicas) of the trainer.
func (t *Trainer) DeviceCount() (int, error) {
	var n int64
	err := t.read("Trainer.DeviceCount", func() { n = t.ptr.DeviceCount() })
	return int(n), err
}

// PipelineCuts returns where the pipeline's stages after the first begin: their first layers' names,
// comma-separated, as TrainerOptions.PipelineCuts takes them ("" without a pipeline), so that a later run can
// name the cuts a PipelineBalance chose. Across MPI processes the same on every process.
func (t *Trainer) PipelineCuts() (string, error) {
	var s string
	err := t.read("Trainer.PipelineCuts", func() { s = t.ptr.PipelineCuts() })
	return s, err
}

// ReadParameters copies the parameters (of the first replica) into dst, whose length must be
// ParameterCount().
func (t *Trainer) ReadParameters(dst []float32) error {
	const op = "Trainer.ReadParameters"
	if dst == nil {
		return nilSlice(op, "dst")
	}
	return t.read(op, func() { t.ptr.GetParameters(dst) })
}

// Parameters returns a new slice holding the parameters of the first replica.
func (t *Trainer) Parameters() ([]float32, error) {
	n, err := t.ParameterCount()
	if err != nil {
		return nil, err
	}
	dst := make([]float32, n)
	if err := t.ReadParameters(dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// ReadReplicaParameters copies the parameters of replica (0 .. DeviceCount()-1) into dst.
func (t *Trainer) ReadReplicaParameters(replica int, dst []float32) error {
	const op = "Trainer.ReadReplicaParameters"
	r, err := toSize(op, "replica", replica)
	if err != nil {
		return err
	}
	if dst == nil {
		return nilSlice(op, "dst")
	}
	return t.read(op, func() { t.ptr.GetReplicaParameters(r, dst) })
}

// SetParameters sets the parameters of every replica from src (length ParameterCount()); the optimizer
// state is kept.
func (t *Trainer) SetParameters(src []float32) error {
	const op = "Trainer.SetParameters"
	if src == nil {
		return nilSlice(op, "src")
	}
	return t.do(op, func() { t.ptr.SetParameters(src) })
}

// ReplicaMemory is the memory one replica of a Trainer holds on its device, in bytes, by what it is for
// (Trainer.ReplicaMemory): a snapshot.
type ReplicaMemory struct {
	// Parameters is the parameters (float32): 4 bytes per parameter; with ShardParameters, those of the
	// replica's own range only (about 1/K of them over K devices) plus the gather buffer each pass copies the
	// buckets of the parameters into.
	Parameters uint64
	// Gradients is the summed gradient (float32, one per parameter): 4 bytes per parameter; with
	// ShardGradients or ShardParameters, that of the replica's own range of the parameters only (about 1/K of it
	// over K devices) plus the two staging buckets backward writes the gradient buckets into.
	Gradients uint64
	// OptimizerState is momentum or Adam's moments (AdamW: 8 bytes per parameter): with ShardOptimizer,
	// ShardGradients or ShardParameters, those of the replica's own range of the parameters only, about 1/K of
	// them over K devices.
	OptimizerState uint64
	Buffers        uint64 // the running statistics (batch norm); 0 without batch norm
	// Activations is everything the replica's passes allocate: inputs, activations, what ops keep for backward,
	// gradient slots and scratch; it grows with the largest slice seen so far.
	Activations uint64
	Total       uint64 // the sum of the five counts above
}

// ReplicaMemory returns the bytes replica device (0 .. DeviceCount()-1) holds now in its device's memory, by
// what they are for. With any sharded mode (ShardOptimizer, ShardGradients, ShardParameters) each device's
// OptimizerState is that of its own range: over the devices they add up to one unsharded replica's; with
// ShardGradients or ShardParameters each device's Gradients is its range's plus the two staging buckets; with
// ShardParameters each device's Parameters is its range's plus its gather buffer. A negative device, or one
// past the last, is StatusOutOfRange.
func (t *Trainer) ReplicaMemory(device int) (ReplicaMemory, error) {
	const op = "Trainer.ReplicaMemory"
	d, err := toSize(op, "device", device)
	if err != nil {
		return ReplicaMemory{}, err
	}
	var out ReplicaMemory
	err = t.read(op, func() { out = replicaMemory(t.ptr.ReplicaMemory(d)) })
	return out, err
}

// replicaMemory copies (and frees) a result of the generated layer; a failed call's is the zero value.
func replicaMemory(m swig.ReplicaMemoryNative) ReplicaMemory {
	if m.Swigcptr() == 0 {
		return ReplicaMemory{} // failed: the error is recorded
	}
	defer swig.DeleteReplicaMemoryNative(m)
	return ReplicaMemory{
		Parameters:     m.GetParameters(),
		Gradients:      m.GetGradients(),
		OptimizerState: m.GetOptimizer_state(),
		Buffers:        m.GetBuffers(),
		Activations:    m.GetActivations(),
		Total:          m.GetTotal(),
	}
}

// ReplicaTimes is one replica's share of a Trainer's last Step or StepTokens call (Trainer.ReplicaTimes,
// docs/profiling.md): where the call's wall time went on that device, and how fast its gradient reduction moved
// the bytes. A snapshot; all 0 before the first step.
type ReplicaTimes struct {
	ComputeSeconds float64 // its forward and backward pass
	// CommunicationSeconds is its gradient reduction: on its own thread after backward, or (gradient buckets,
	// sharded gradients) on its communication thread during backward; 0 when the call reduced nothing (a
	// micro-batch before the last of its window, without buckets) or on one device.
	CommunicationSeconds float64
	// UpdateSeconds is its update: the norm, the optimizer step and, sharded, the all-gather; 0 without an
	// update.
	UpdateSeconds float64
	// IdleSeconds is the rest of the call's wall time on this device: waiting for slower devices, or for a
	// reduction that backward did not hide.
	IdleSeconds float64
	// BusBandwidth is the bytes per second of its reduction as NCCL's tests count bus bandwidth: the float32
	// gradient's bytes times 2 (K - 1) / K for an all-reduce, (K - 1) / K for a reduce-scatter, over
	// CommunicationSeconds; 0 without a reduction.
	BusBandwidth float64
}

// ReplicaTimes returns replica device's (0 .. DeviceCount()-1) share of the last Step or StepTokens call (of a
// micro-batch with accumulation: the update and, without gradient buckets, the reduction come with the last of
// a window). ComputeSeconds + UpdateSeconds + IdleSeconds, plus CommunicationSeconds when the reduction ran on
// the device's own thread (no gradient buckets), is the call's StepResult.TotalSeconds. A negative device, or
// one past the last, is StatusOutOfRange.
func (t *Trainer) ReplicaTimes(device int) (ReplicaTimes, error) {
	return t.replicaFigures("Trainer.ReplicaTimes", device, t.ptr.ReplicaTimes)
}

// ReplicaTotals returns replica device's times summed over every Step or StepTokens call since the trainer was
// made (Fit's steps included; evaluation and prediction are not steps): the seconds of compute, communication,
// update and idle, and the bus bandwidth of all its reductions (their bytes over their seconds). All 0 before
// the first step; a fit's share is the seconds after it minus those before. A negative device, or one past the
// last, is StatusOutOfRange.
func (t *Trainer) ReplicaTotals(device int) (ReplicaTimes, error) {
	return t.replicaFigures("Trainer.ReplicaTotals", device, t.ptr.ReplicaTotals)
}

// replicaFigures runs one of the per-replica time queries of the generated layer for device.
func (t *Trainer) replicaFigures(op string, device int, query func(int64) swig.ReplicaTimesNative) (ReplicaTimes,
	error) {
	d, err := toSize(op, "device", device)
	if err != nil {
		return ReplicaTimes{}, err
	}
	var out ReplicaTimes
	err = t.read(op, func() { out = replicaTimes(query(d)) })
	return out, err
}

// replicaTimes copies (and frees) a result of the generated layer; a failed call's is the zero value.
func replicaTimes(r swig.ReplicaTimesNative) ReplicaTimes {
	if r.Swigcptr() == 0 {
		return ReplicaTimes{} // failed: the error is recorded
	}
	defer swig.DeleteReplicaTimesNative(r)
	return ReplicaTimes{
		ComputeSeconds:       r.GetCompute_seconds(),
		CommunicationSeconds: r.GetCommunication_seconds(),
		UpdateSeconds:        r.GetUpdate_seconds(),
		IdleSeconds:          r.GetIdle_seconds(),
		BusBandwidth:         r.GetBus_bandwidth(),
	}
}

// TraceStart starts recording a timeline of the trainer's work, from the next call on: per device, each op's
// forward and backward, the gradient reductions (on the device's thread, or with gradient buckets on its
// communication thread), the parameter gathers of ShardParameters and the update. Up to maxEvents (1 to 2^24)
// are kept per device and thread, room for them reserved now; later ones are dropped and counted. Calling it
// again restarts the recording; TraceWrite stops it and writes the file. On GPUs each recorded op waits for
// the one before it on the device, so its times are its device time (a recorded step is slower). Recording
// changes no bit of training. 0 is StatusInvalidArgument; a negative count, or one
// above 2^24, StatusOutOfRange.
func (t *Trainer) TraceStart(maxEvents int) error {
	const op = "Trainer.TraceStart"
	n, err := toSize(op, "maxEvents", maxEvents)
	if err != nil {
		return err
	}
	return t.do(op, func() { t.ptr.TraceStart(n) })
}

// TraceWrite stops the recording that TraceStart started and writes the timeline to path as Chrome
// trace-event JSON, atomically: two rows per device ("cpu:0 compute", "cpu:0 communication"; the thread_name
// metadata events of tids 2d and 2d+1), one "X" event per recorded piece of work (categories forward,
// backward, communication, gather, update), idle time as gaps. Open it in chrome://tracing or
// https://ui.perfetto.dev (docs/profiling.md). StatusInvalidState when no recording runs; StatusIO when the
// file cannot be written (the recording then stays stopped); an empty path is StatusInvalidArgument.
func (t *Trainer) TraceWrite(path string) error {
	const op = "Trainer.TraceWrite"
	if err := checkPath(op, path); err != nil {
		return err
	}
	return t.do(op, func() { t.ptr.TraceWrite(path) })
}

// Checksum returns the FNV-1a 64 hash of the parameter bytes as 16 lowercase hex digits, as the CLI
// prints it (param_checksum).
func (t *Trainer) Checksum() (string, error) {
	var s string
	err := t.read("Trainer.Checksum", func() { s = t.ptr.ParameterChecksum() })
	return s, err
}
