// Hand-written half of TrainerOptions (the generated half, with the other options, is produced by SWIG).
namespace DPTrain {

public partial class TrainerOptions {
  /// <summary>The precision of the model's matrix products (conv2d, dense, linear, causal self-attention):
  /// <see cref="DPTrain.Precision.Fp32"/> (the default, float32 throughout),
  /// <see cref="DPTrain.Precision.Bf16"/>, mixed precision: every matrix product takes its inputs rounded to
  /// bfloat16 and accumulates in float32, while everything else (the parameters, activations, gradients, the
  /// loss and the optimizer) stays float32, or <see cref="DPTrain.Precision.Fp16"/>: the same with IEEE
  /// float16 inputs and dynamic loss scaling (PyTorch GradScaler's policy; see
  /// <see cref="InitialLossScale"/>).</summary>
  /// <remarks>On CPU devices and GPUs; a value outside the enum is <see cref="InvalidArgumentException"/>
  /// (<see cref="Status.InvalidArgument"/>) when the trainer is created.</remarks>
  public Precision Precision {
    get { return PrecisionNative; }
    set { PrecisionNative = value; }
  }

  /// <summary><see cref="DPTrain.Precision.Fp16"/>'s loss scale at the first step: the loss is multiplied by
  /// it before backward and the gradient divided by it. A window whose scaled gradient overflows float16 is
  /// skipped (<see cref="StepResult.SkippedOverflow"/> is 1, <see cref="StepResult.Applied"/> 0; the
  /// parameters and optimizer state are unchanged; not an error) and the scale halved (never below 1); after
  /// <see cref="LossScaleGrowthInterval"/> applied windows in a row it doubles. The current scale is
  /// <see cref="StepResult.LossScale"/>. Default 65536 (2^16, GradScaler's).</summary>
  /// <remarks>A power of two from 1 to 2^64; anything else is refused with
  /// <see cref="InvalidArgumentException"/> (<see cref="Status.InvalidArgument"/>) when the trainer is
  /// created, whatever the precision.</remarks>
  public double InitialLossScale {
    get { return InitialLossScaleNative; }
    set { InitialLossScaleNative = value; }
  }

  /// <summary><see cref="DPTrain.Precision.Fp16"/>: applied windows in a row after which the loss scale
  /// doubles. Default 2000 (GradScaler's); 0 = the scale never grows.</summary>
  public ulong LossScaleGrowthInterval {
    get { return LossScaleGrowthIntervalNative; }
    set { LossScaleGrowthIntervalNative = value; }
  }

  /// <summary>What the gradient all-reduce sends between the devices (and processes):
  /// <see cref="DPTrain.Precision.Fp32"/> (the default) or <see cref="DPTrain.Precision.Bf16"/> /
  /// <see cref="DPTrain.Precision.Fp16"/>, half the bytes, as NCCL's 16-bit all-reduce and DDP's compression
  /// hooks: each device's contribution, each process's sum and the finished sum are rounded to the 16-bit
  /// type, while the sums themselves are float32. The replicas stay bitwise identical (and bucketed equals
  /// unbucketed); the K-device step then differs from the 1-device step by that rounding. Independent of
  /// <see cref="TrainerOptions.Precision"/>; an <c>Fp16</c> wire without loss scaling overflows on gradient sums beyond 65504
  /// (then <see cref="Nonfinite"/> applies).</summary>
  /// <remarks>On CPU devices and GPUs; a value outside the enum is <see cref="InvalidArgumentException"/>
  /// (<see cref="Status.InvalidArgument"/>) when the trainer is created.</remarks>
  public Precision AllreduceDtype {
    get { return AllreduceDtypeNative; }
    set { AllreduceDtypeNative = value; }
  }

  /// <summary>How activations are kept from forward to backward: <see cref="DPTrain.Precision.Fp32"/> (the
  /// default), or <see cref="DPTrain.Precision.Bf16"/> / <see cref="DPTrain.Precision.Fp16"/>: each
  /// activation is rounded to the 16-bit type once its last forward reader has run and widened back into a
  /// float32 working copy for backward (as autocast keeps a 16-bit matrix product's output). ResNet-18's
  /// and gpt-mini's activations then take 0.59 and 0.61 of their float32 bytes; a model whose widest tensors
  /// are most of its activations (LeNet) keeps them float32 (the store never takes more memory than
  /// float32). Backward reads the rounded activations: no bit changes where they only feed matrix products of
  /// the same 16-bit precision (and ReLU), about one 16-bit rounding where a normalisation (batch norm, layer
  /// norm) or an activation function reads them. The rounding is per element: the replicas stay bitwise
  /// identical and the K-device step equals the 1-device step as without it. Independent of
  /// <see cref="TrainerOptions.Precision"/>.</summary>
  /// <remarks>On CPU devices and GPUs; a value outside the enum is <see cref="InvalidArgumentException"/>
  /// (<see cref="Status.InvalidArgument"/>) when the trainer is created.</remarks>
  public Precision ActivationDtype {
    get { return ActivationDtypeNative; }
    set { ActivationDtypeNative = value; }
  }

  /// <summary>Sharded data parallel: <see cref="ShardMode.None"/> (the default: every device holds the
  /// parameters, the gradient and the optimizer state whole), <see cref="ShardMode.Optimizer"/> (ZeRO stage 1:
  /// each device keeps, and updates, the optimizer state of one contiguous range of the parameters only; the
  /// gradient is reduce-scattered and the updated ranges are all-gathered), <see cref="ShardMode.Gradients"/>
  /// (ZeRO stage 2: also the gradient; backward writes each gradient bucket, <see cref="BucketBytes"/> of whole
  /// layers, into one of two staging buffers, and each finished bucket is reduce-scattered into the devices'
  /// ranges while backward goes on, so that each device keeps the summed gradient of its range only) or
  /// <see cref="ShardMode.Parameters"/> (ZeRO stage 3, PyTorch's FSDP: also the parameters; each device keeps its
  /// range of them only, and a pass, training, evaluation or prediction, copies each bucket of them in from the
  /// devices that own it into one gather buffer of the largest bucket's size just before the bucket's layers
  /// run). <c>Optimizer</c> trains to the same bits as <c>None</c>: the parameters, the step and fit results, and
  /// checkpoints (which load into any device count and mode); so do <c>Gradients</c> and <c>Parameters</c> with
  /// one micro-batch per optimizer step (with <see cref="AccumulationSteps"/> &gt; 1 each micro-batch's sum is
  /// added into the range: one more float32 rounding per micro-batch); with <c>Parameters</c>,
  /// <see cref="Trainer.GetParameters()"/>, the checksum and checkpoints gather the whole vector. Per device the
  /// optimizer state becomes 1/K of its bytes over K devices (AdamW: 8 bytes per parameter become 8/K), with
  /// <c>Gradients</c> and <c>Parameters</c> the gradient its range's 4/K bytes per parameter plus the two staging
  /// buckets, and with <c>Parameters</c> the parameters their range's 4/K bytes per parameter plus the gather
  /// buffer; <see cref="Trainer.GetReplicaMemory"/> reports them.</summary>
  /// <remarks><c>Optimizer</c> runs on CPU devices and GPUs; a trainer on CUDA devices refuses <c>Gradients</c>
  /// and <c>Parameters</c> with <see cref="UnsupportedException"/> (<see cref="Status.Unsupported"/>). Tied
  /// parameters (<see cref="Model.Tie"/>) are sharded like the others. Across MPI processes each process shards
  /// among its own devices. A value outside the enum is <see cref="InvalidArgumentException"/>
  /// (<see cref="Status.InvalidArgument"/>) when the trainer is created.</remarks>
  public ShardMode Shard {
    get { return ShardNative; }
    set { ShardNative = value; }
  }

  /// <summary>Across MPI processes, which devices share one copy of what <see cref="Shard"/> splits:
  /// <see cref="DPTrain.ShardScope.Process"/> (the default: each process shards among its own devices and keeps one
  /// whole copy across them, PyTorch FSDP's HYBRID_SHARD) or <see cref="DPTrain.ShardScope.World"/> (among every
  /// device of every process, DeepSpeed's ZeRO: with P processes of K devices each device keeps 1/(P K); the
  /// same bits as <see cref="ShardMode.None"/>). With <c>World</c>, <see cref="Trainer.SaveCheckpoint"/> is collective:
  /// every process calls it and process 0 writes the file. Without a communicator both are the same.</summary>
  /// <remarks><c>World</c> takes every <see cref="ShardMode"/> on CPU devices; with <c>Parameters</c> setting the
  /// parameters, loading a checkpoint and disposing of the trainer are collective too (every process, such
  /// trainers disposed of in the same order). A value outside the enum is <see cref="InvalidArgumentException"/> (<see cref="Status.InvalidArgument"/>) when the
  /// trainer is created.</remarks>
  public ShardScope ShardScope {
    get { return ShardScopeNative; }
    set { ShardScopeNative = value; }
  }

  /// <summary>Pipeline model parallel: the model is cut into this many stages S, and each step's batch into
  /// <see cref="MicroBatches"/> micro-batches that pass forward through the stages and back. The trainer's K
  /// devices hold the stages in order, R = K / S data-parallel replicas of each (each micro-batch split among a
  /// stage's replicas, their gradients all-reduced). 0 or 1 (the default 0): no pipeline. A step gives the very
  /// bits of R devices with <see cref="AccumulationSteps"/> M stepped on the same micro-batches (the batch's even
  /// split: the first n % M micro-batches get one more sample); with a clip norm the gradient norm may differ in
  /// its last bits. The stages are cut where <see cref="PipelineCuts"/> says, or where they divide
  /// <see cref="PipelineBalance"/>'s costs most evenly; <see cref="Trainer.GetReplicaMemory"/> reports each
  /// stage's part.</summary>
  /// <remarks>K must be a multiple of S, CPU devices of one process: any other count is
  /// <see cref="UnsupportedException"/> (<see cref="Status.Unsupported"/>), and so are sharding
  /// (<see cref="Shard"/>) and a parameter tied across stages that is not its stage's last (a language
  /// model's head is); a split other than the even one is
  /// <see cref="InvalidArgumentException"/> (<see cref="Status.InvalidArgument"/>), and so is a model with fewer
  /// than stages - 1 places to cut (between layers, where one tensor is live).</remarks>
  public ulong PipelineStages {
    get { return PipelineStagesNative; }
    set { PipelineStagesNative = value; }
  }

  /// <summary>Micro-batches per pipelined step (<see cref="PipelineStages"/>), 1 to 1024 (a batch of fewer
  /// samples has one per sample); 0 (the default): four per stage.</summary>
  /// <remarks>More than 1024 is <see cref="InvalidArgumentException"/> (<see cref="Status.OutOfRange"/>) when
  /// the trainer is created.</remarks>
  public ulong MicroBatches {
    get { return MicroBatchesNative; }
    set { MicroBatchesNative = value; }
  }

  /// <summary>The pipeline's schedule: <see cref="DPTrain.PipelineSchedule.OneFOneB"/> (1F1B, the default;
  /// stage s of S keeps at most S - s micro-batches' activations) or <see cref="DPTrain.PipelineSchedule.GPipe"/>
  /// (every forward, then every backward; each stage keeps all the micro-batches' activations). The same
  /// results either way.</summary>
  /// <remarks>A value outside the enum is <see cref="InvalidArgumentException"/>
  /// (<see cref="Status.InvalidArgument"/>) when the trainer is created.</remarks>
  public PipelineSchedule PipelineSchedule {
    get { return PipelineScheduleNative; }
    set { PipelineScheduleNative = value; }
  }

  /// <summary>Where the pipeline's stages after the first begin: stages - 1 node names, comma-separated, in node
  /// order (<c>"layer2.0.conv1,layer3.0.conv1,layer4.0.conv1"</c>; a node without a name is its index). A stage
  /// may begin only at a node where one tensor is live (between blocks, not inside a residual block).
  /// <c>null</c> or <c>""</c> (the default <c>null</c>): the cuts that divide <see cref="PipelineBalance"/>'s
  /// costs most evenly (<see cref="Trainer.PipelineCuts"/> gives them). The options keep their own copy of the
  /// text.</summary>
  /// <remarks>An unknown name, a node inside a block, names out of order or a count other than stages - 1 is
  /// <see cref="InvalidArgumentException"/> (<see cref="Status.InvalidArgument"/>) when the trainer is
  /// created.</remarks>
  public string PipelineCuts {
    get { return PipelineCutsNative; }
    set { PipelineCutsNative = value; }
  }
}

}
