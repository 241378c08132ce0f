/* csharp.i: the C# part of the shared interface (included by dptrain.i before anything else).
 *
 * - size_t is ulong; uint64_t already is (stdint.i without SWIGWORDSIZE64).
 * - Arrays cross pinned, never copied: a (pointer, count) pair becomes one C# array parameter; the
 *   proxy pins it with `fixed` and passes its address and length (the classes are `unsafe partial`,
 *   compiled with mcs -unsafe; the hand-written halves live in bindings/csharp/src/).
 * - A failed call (dptrain_binding::Error) becomes a pending DPTrain.DptrainException subclass (one per
 *   status category, see Exceptions.cs), thrown by the proxy as soon as the native call returns.
 * - A disposed proxy is rejected before the C API sees it: as `this` by a native check of `self`, as an
 *   argument by getCPtr; both throw ObjectDisposedException. A Trainer or Dataset in use by a running Fit
 *   refuses to be disposed.
 * - Progress: Trainer.fit is internal (FitNative); the public Trainer.Fit (src/Trainer.cs) passes a
 *   ProgressListener director that catches every managed exception of the user's listener or event
 *   handlers, asks the library to stop, and rethrows it once the native call has returned: no managed
 *   exception ever unwinds through native frames, so ProgressBridge's C++ path is not needed here.
 * - Naming: PascalCase methods and properties, enum items without their DPT_ prefix; argument-free getters
 *   (deviceCount, parameterCount ...) become read-only properties in the hand-written halves. */

/* ---- Integers --------------------------------------------------------------------------------- */

%apply unsigned long long { size_t };
%apply const unsigned long long & { const size_t & };

/* ---- Errors: native -> pending managed exception ------------------------------------------------ */

%insert(runtime) %{
/* Set by DPTrain's intermediary class when it loads: they build the managed exception and make it pending. */
typedef void (SWIGSTDCALL *DptrainCSharpErrorCallback)(int status, int category, const char *message);
typedef void (SWIGSTDCALL *DptrainCSharpDisposedCallback)(const char *type_name);
static DptrainCSharpErrorCallback dptrain_csharp_error_callback = NULL;
static DptrainCSharpDisposedCallback dptrain_csharp_disposed_callback = NULL;

#ifdef __cplusplus
extern "C"
#endif
SWIGEXPORT void SWIGSTDCALL DptrainCSharpRegisterCallbacks(DptrainCSharpErrorCallback error,
                                                           DptrainCSharpDisposedCallback disposed) {
  dptrain_csharp_error_callback = error;
  dptrain_csharp_disposed_callback = disposed;
}

static void DptrainCSharpSetError(int status, int category, const char *message) {
  if (dptrain_csharp_error_callback != NULL) {
    dptrain_csharp_error_callback(status, category, message);
  } else {
    SWIG_CSharpSetPendingException(SWIG_CSharpApplicationException, message);
  }
}

static void DptrainCSharpSetDisposed(const char *type_name) {
  if (dptrain_csharp_disposed_callback != NULL) {
    dptrain_csharp_disposed_callback(type_name);
  } else {
    SWIG_CSharpSetPendingException(SWIG_CSharpNullReferenceException, type_name);
  }
}
%}

%pragma(csharp) imclassimports=%{
using System;
using System.Runtime.InteropServices;
%}

%pragma(csharp) imclasscode=%{
  /* Registers the two callbacks above when the intermediary class is first used, i.e. before any call
   * can fail. The delegates are static, so they outlive every native call. */
  internal class DptrainExceptionHelper {
    public delegate void ErrorDelegate(int status, int category, [MarshalAs(UnmanagedType.LPStr)] string message);
    public delegate void DisposedDelegate([MarshalAs(UnmanagedType.LPStr)] string typeName);

    static readonly ErrorDelegate errorDelegate = new ErrorDelegate(SetError);
    static readonly DisposedDelegate disposedDelegate = new DisposedDelegate(SetDisposed);

    [DllImport("$dllimport", EntryPoint = "DptrainCSharpRegisterCallbacks")]
    static extern void RegisterCallbacks(ErrorDelegate error, DisposedDelegate disposed);

    static void SetError(int status, int category, string message) {
      SWIGPendingException.Set(global::DPTrain.DptrainException.FromStatus(status, category, message));
    }

    static void SetDisposed(string typeName) {
      SWIGPendingException.Set(new ObjectDisposedException(typeName, "the " + typeName + " has been disposed"));
    }

    static DptrainExceptionHelper() {
      RegisterCallbacks(errorDelegate, disposedDelegate);
    }
  }

  static protected DptrainExceptionHelper exceptionHelper = new DptrainExceptionHelper();
%}

%exception {
  try {
    $action
  } catch (const dptrain_binding::Error &e) {
    DptrainCSharpSetError(static_cast<int>(e.status()), e.category(), e.what());
    return $null;
  } catch (const std::bad_alloc &) {
    DptrainCSharpSetError(DPT_ERROR_OUT_OF_MEMORY, 3000, "out of memory in the C# binding");
    return $null;
  } catch (const std::exception &e) {
    DptrainCSharpSetError(DPT_ERROR_INTERNAL, 9000, e.what());
    return $null;
  } catch (...) {
    DptrainCSharpSetError(DPT_ERROR_INTERNAL, 9000, "unknown C++ exception in the C# binding");
    return $null;
  }
}

/* ---- Disposed proxies --------------------------------------------------------------------------- */

/* `this` of a disposed proxy reaches the wrapper as NULL (member variables would be dereferenced). */
%define DPT_CS_SELF_CHECK(CTYPE, NAME)
%typemap(check, canthrow=1) CTYPE *self %{
  if (!$1) {
    DptrainCSharpSetDisposed(NAME);
    return $null;
  }
%}
%enddef
DPT_CS_SELF_CHECK(dpt_context, "Context")
DPT_CS_SELF_CHECK(dpt_model, "Model")
DPT_CS_SELF_CHECK(dpt_dataset, "Dataset")
DPT_CS_SELF_CHECK(dpt_trainer, "Trainer")
DPT_CS_SELF_CHECK(dpt_device_info, "DeviceInfo")
DPT_CS_SELF_CHECK(dpt_backend_info, "BackendInfo")
DPT_CS_SELF_CHECK(dpt_context_options, "ContextOptions")
DPT_CS_SELF_CHECK(dpt_trainer_options, "TrainerOptions")
DPT_CS_SELF_CHECK(dpt_optimizer_options, "OptimizerOptions")
DPT_CS_SELF_CHECK(dpt_fit_options, "FitOptions")
DPT_CS_SELF_CHECK(dpt_step_result, "StepResult")
DPT_CS_SELF_CHECK(dpt_eval_result, "EvalResult")
DPT_CS_SELF_CHECK(dpt_fit_result, "FitResult")
DPT_CS_SELF_CHECK(dpt_progress, "Progress")
DPT_CS_SELF_CHECK(dpt_replica_memory, "ReplicaMemoryNative")
DPT_CS_SELF_CHECK(dpt_replica_times, "ReplicaTimesNative")
DPT_CS_SELF_CHECK(dptrain_binding::ProgressListener, "ProgressListener")
DPT_CS_SELF_CHECK(dptrain_binding::TextParts, "TextParts")

/* A disposed proxy passed as an argument: getCPtr throws instead of passing NULL (which the C API would
 * reject, or, for options, silently read as "defaults"). Otherwise SWIG's stock proxy body. */
%typemap(csbody) SWIGTYPE %{
  private global::System.Runtime.InteropServices.HandleRef swigCPtr;
  /// <summary>Whether this object owns its native object and frees it (SWIG's proxy plumbing).</summary>
  protected bool swigCMemOwn;

  internal $csclassname(global::System.IntPtr cPtr, bool cMemoryOwn) {
    swigCMemOwn = cMemoryOwn;
    swigCPtr = new global::System.Runtime.InteropServices.HandleRef(this, cPtr);
  }

  internal static global::System.Runtime.InteropServices.HandleRef getCPtr($csclassname obj) {
    if (obj == null) return new global::System.Runtime.InteropServices.HandleRef(null, global::System.IntPtr.Zero);
    if (obj.swigCPtr.Handle == global::System.IntPtr.Zero)
      throw new global::System.ObjectDisposedException("$csclassname", "the $csclassname has been disposed");
    return obj.swigCPtr;
  }

  internal static global::System.Runtime.InteropServices.HandleRef swigRelease($csclassname obj) {
    if (obj != null) {
      if (!obj.swigCMemOwn)
        throw new global::System.ApplicationException("Cannot release ownership as memory is not owned");
      global::System.Runtime.InteropServices.HandleRef ptr = obj.swigCPtr;
      obj.swigCMemOwn = false;
      obj.Dispose();
      return ptr;
    } else {
      return new global::System.Runtime.InteropServices.HandleRef(null, global::System.IntPtr.Zero);
    }
  }

  /// <summary>True once Dispose has run (or for a proxy that never owned a native object).</summary>
  public bool IsDisposed { get { return swigCPtr.Handle == global::System.IntPtr.Zero; } }
%}

/* A Trainer or Dataset in use by a running Fit (e.g. disposed from a progress handler or another thread) is
 * not freed under the library's feet: Dispose throws instead. swigBusy is counted by Trainer.Fit. */
%define DPT_CS_GUARDED_DISPOSE(CTYPE)
%typemap(csdisposing, methodname="Dispose", methodmodifiers="protected", parameters="bool disposing") CTYPE {
    if (disposing && global::System.Threading.Volatile.Read(ref swigBusy) != 0)
      throw new global::System.InvalidOperationException("the $csclassname is in use by a running Fit and cannot be disposed now");
    lock(this) {
      if (swigCPtr.Handle != global::System.IntPtr.Zero) {
        if (swigCMemOwn) {
          swigCMemOwn = false;
          $imcall;
        }
        swigCPtr = new global::System.Runtime.InteropServices.HandleRef(null, global::System.IntPtr.Zero);
      }
    }
  }
%enddef
DPT_CS_GUARDED_DISPOSE(dpt_trainer)
DPT_CS_GUARDED_DISPOSE(dpt_dataset)

/* A listener gets an owned copy of each progress report, which it may keep: the library's report lives on its
 * stack only for the duration of the callback, so a proxy over it would read (and write) freed memory once
 * Fit has returned. A copy's native memory goes with Dispose or the finalizer. */
%copyctor dpt_progress;
%typemap(csdirectorin) const dpt_progress & "new $csclassname(new $csclassname($iminput, false))"

/* Every proxy is `unsafe` (for `fixed`) and `partial` (for the hand-written halves). */
%typemap(csclassmodifiers) SWIGTYPE "public unsafe partial class"
/* ... but the one that hands over the two parts of a text to Dataset.LoadText (src/Dataset.cs) is internal, and
 * so are the C structs that Trainer.GetReplicaMemory and Trainer.GetReplicaTimes (src/Trainer.cs) copy into the
 * ReplicaMemory and ReplicaTimes values. */
%typemap(csclassmodifiers) dptrain_binding::TextParts "internal unsafe partial class"
%typemap(csclassmodifiers) dpt_replica_memory "internal unsafe partial class"
%typemap(csclassmodifiers) dpt_replica_times "internal unsafe partial class"

/* ---- Arrays: (pointer, count) -> one pinned C# array ---------------------------------------------- */

/* The intermediary signature carries both halves: "IntPtr name, ulong jargN" (and "T *name, unsigned
 * long long jargN" in C). A null array is an ArgumentNullException before anything is pinned. */
%define DPT_CS_PINNED_ARRAY(CTYPE, CSTYPE, PTR, COUNT)
%typemap(ctype) (CTYPE *PTR, size_t COUNT) "CTYPE *$1_name_ptr, unsigned long long"
%typemap(imtype) (CTYPE *PTR, size_t COUNT) "global::System.IntPtr $1_name_ptr, ulong"
%typemap(cstype) (CTYPE *PTR, size_t COUNT) "CSTYPE[]"
%typemap(csin,
         pre="    if ($csinput == null) throw new global::System.ArgumentNullException(\"$csinput\");\n"
             "    fixed (CSTYPE* swig_ptrTo_$csinput = $csinput) {",
         terminator="    }")
  (CTYPE *PTR, size_t COUNT) "(global::System.IntPtr)swig_ptrTo_$csinput, (ulong)$csinput.LongLength"
%typemap(in) (CTYPE *PTR, size_t COUNT) %{
  $1 = ($1_ltype)$1_name_ptr;
  $2 = (size_t)$input;
%}
%typemap(freearg) (CTYPE *PTR, size_t COUNT) ""
%typemap(argout) (CTYPE *PTR, size_t COUNT) ""
%enddef

DPT_CS_PINNED_ARRAY(const float, float, IN_FLOATS, IN_COUNT)
DPT_CS_PINNED_ARRAY(float, float, OUT_FLOATS, OUT_COUNT)
DPT_CS_PINNED_ARRAY(const int32_t, int, IN_INTS, IN_COUNT)
DPT_CS_PINNED_ARRAY(int32_t, int, OUT_INTS, OUT_COUNT)
DPT_CS_PINNED_ARRAY(const size_t, ulong, IN_SIZES, IN_COUNT)

/* ---- Naming ------------------------------------------------------------------------------------- */

/* Methods (written lowerCamelCase in dptrain.i) and fields (snake_case in the headers) in PascalCase. */
%rename("%(firstuppercase)s", %$isfunction, %$ismember) "";
%rename("%(camelcase)s", %$isvariable, %$ismember) "";

/* Trainer.fit is wrapped by the hand-written Trainer.Fit (event, listener lifetime, callback errors). */
%rename(FitNative) dpt_trainer::fit;
%csmethodmodifiers dpt_trainer::fit "internal";

/* Enum items without the enum's prefix: SplitPolicy.Even, Status.InvalidArgument ... */
%rename(Ok) DPT_OK;
%rename(InvalidArgument) DPT_ERROR_INVALID_ARGUMENT;
%rename(NullPointer) DPT_ERROR_NULL_POINTER;
%rename(OutOfRange) DPT_ERROR_OUT_OF_RANGE;
%rename(SizeMismatch) DPT_ERROR_SIZE_MISMATCH;
%rename(InvalidState) DPT_ERROR_INVALID_STATE;
%rename(BufferTooSmall) DPT_ERROR_BUFFER_TOO_SMALL;
%rename(NonFinite) DPT_ERROR_NON_FINITE;
%rename(Busy) DPT_ERROR_BUSY;
%rename(Unsupported) DPT_ERROR_UNSUPPORTED;
%rename(Device) DPT_ERROR_DEVICE;
%rename(OutOfMemory) DPT_ERROR_OUT_OF_MEMORY;
%rename(DeviceNotFound) DPT_ERROR_DEVICE_NOT_FOUND;
%rename(Communication) DPT_ERROR_COMMUNICATION;
%rename(Timeout) DPT_ERROR_TIMEOUT;
%rename(IO) DPT_ERROR_IO;
%rename(Format) DPT_ERROR_FORMAT;
%rename(Internal) DPT_ERROR_INTERNAL;
%rename(Cpu) DPT_DEVICE_CPU;
%rename(Cuda) DPT_DEVICE_CUDA;
%rename(CpuOnly) DPT_DEVICES_CPU; /* (one C scope: the names must differ from DeviceKind's) */
%rename(CudaOnly) DPT_DEVICES_CUDA;
%rename(All) DPT_DEVICES_ALL;
%rename(Relu) DPT_ACTIVATION_RELU;
%rename(Sigmoid) DPT_ACTIVATION_SIGMOID;
%rename(Tanh) DPT_ACTIVATION_TANH;
%rename(Avg) DPT_POOL_AVG;
%rename(Max) DPT_POOL_MAX;
%rename(Train) DPT_DATASET_TRAIN;
%rename(Test) DPT_DATASET_TEST;
%rename(Even) DPT_SPLIT_EVEN;
%rename(Weighted) DPT_SPLIT_WEIGHTED;
%rename(Auto) DPT_SPLIT_AUTO;
%rename(Ring) DPT_ALLREDUCE_RING;
%rename(Naive) DPT_ALLREDUCE_NAIVE;
%rename(UniformFanIn) DPT_INIT_UNIFORM_FAN_IN;
%rename(Normal) DPT_INIT_NORMAL;
%rename(Sgd) DPT_OPTIMIZER_SGD;
%rename(AdamW) DPT_OPTIMIZER_ADAMW;
%rename(Constant) DPT_SCHEDULE_CONSTANT;
%rename(Step) DPT_SCHEDULE_STEP;
%rename(Cosine) DPT_SCHEDULE_COSINE;
%rename(Skip) DPT_NONFINITE_SKIP;
%rename(Error) DPT_NONFINITE_ERROR;
%rename(Local) DPT_COMMUNICATOR_LOCAL;
%rename(Mpi) DPT_COMMUNICATOR_MPI;
%rename(Batch) DPT_PROGRESS_BATCH;
%rename(Epoch) DPT_PROGRESS_EPOCH;
%rename(Gelu) DPT_ACTIVATION_GELU;
%rename(GeluTanh) DPT_ACTIVATION_GELU_TANH;
%rename(Sync) DPT_BATCH_NORM_SYNC;
%rename(PerDevice) DPT_BATCH_NORM_LOCAL; /* (one C scope: Local is Communicator.Local) */
%rename(Fp32) DPT_PRECISION_FP32; /* (one C scope: Float32 is InputType.Float32) */
%rename(Bf16) DPT_PRECISION_BF16;
%rename(Fp16) DPT_PRECISION_FP16;
%rename(Parameter) DPT_TENSOR_PARAMETER;
%rename(Buffer) DPT_TENSOR_BUFFER;
%rename(Float32) DPT_INPUT_FLOAT32;
%rename(Tokens) DPT_INPUT_TOKENS;
%rename(AllParameters) DPT_WEIGHT_DECAY_ALL; /* (one C scope: All is DeviceSelection.All) */
%rename(Matrices) DPT_WEIGHT_DECAY_MATRICES;
%rename(None) DPT_SHARD_NONE;
%rename(Optimizer) DPT_SHARD_OPTIMIZER;
%rename(Gradients) DPT_SHARD_GRADIENTS;
%rename(Parameters) DPT_SHARD_PARAMETERS;
%rename(Process) DPT_SHARD_SCOPE_PROCESS;
%rename(World) DPT_SHARD_SCOPE_WORLD;
%rename(OneFOneB) DPT_PIPELINE_1F1B; /* (a C# name cannot begin with a digit) */
%rename(GPipe) DPT_PIPELINE_GPIPE;
%rename(ProcessScope) DPT_PIPELINE_SCOPE_PROCESS; /* (one C scope: Process and World are ShardScope's) */
%rename(WorldScope) DPT_PIPELINE_SCOPE_WORLD;
%rename(Work) DPT_PIPELINE_BALANCE_WORK;
%rename(Time) DPT_PIPELINE_BALANCE_TIME;
%rename(ParameterBytes) DPT_PIPELINE_BALANCE_PARAMETERS; /* (one C scope: Parameters is ShardMode's) */

/* SWIG writes no XML documentation: ShardMode carries its summary in its modifiers (TrainerOptions.Shard, written
 * by hand, documents it in full). */
%typemap(csclassmodifiers) enum dpt_shard_mode %{/// <summary>What sharded data parallel splits across a trainer's
/// devices (<see cref="TrainerOptions.Shard"/>): <c>None</c> (the default) keeps parameters, gradients and
/// optimizer state whole on every device; <c>Optimizer</c> (ZeRO stage 1) has each device keep the optimizer
/// state of one contiguous range of the parameters only, so that a device's optimizer state takes 1/K of its
/// bytes over K devices, with the same bits as <c>None</c>; <c>Gradients</c> (ZeRO stage 2) also the summed
/// gradient of that range (reduce-scattered bucket by bucket during backward through two staging buckets), with
/// the same bits as <c>None</c> at one micro-batch per optimizer step; <c>Parameters</c> (ZeRO stage 3, FSDP)
/// also the parameters of that range (a pass copies each bucket of them in from the devices that own it into
/// one gather buffer just before the bucket's layers run), with the bits of <c>Gradients</c>. <c>Optimizer</c>
/// also runs on GPUs; <c>Gradients</c> and <c>Parameters</c> run on CPU devices only. Across MPI processes each
/// process shards among its own devices (the counts may differ; a process of one device shards
/// nothing).</summary>
public enum%}
%typemap(csclassmodifiers) enum dpt_shard_scope %{/// <summary>Across MPI processes, which devices share one copy of
/// what <see cref="ShardMode"/> splits (<see cref="TrainerOptions.ShardScope"/>): <c>Process</c> (the default;
/// PyTorch FSDP's HYBRID_SHARD) shards among each process's own devices, one whole copy per process;
/// <c>World</c> (DeepSpeed's ZeRO, FSDP's FULL_SHARD) among every device of every process, with every
/// <see cref="ShardMode"/> on CPU devices (<see cref="ShardMode.Parameters"/>: a pass reads the ranges other
/// processes own with one-sided MPI gets; setting the parameters, loading and disposing of the trainer are
/// then collective, such trainers disposed of in the same order) and <see cref="ShardMode.Optimizer"/> on
/// GPUs.</summary>
public enum%}
%typemap(csclassmodifiers) enum dpt_pipeline_schedule %{/// <summary>The order in which each stage of a pipeline runs its
/// micro-batches (<see cref="TrainerOptions.PipelineSchedule"/>): <c>OneFOneB</c> (1F1B, the default;
/// PipeDream-Flush, as Megatron-LM) runs at most S - s - 1 forwards ahead, then one forward and one backward in
/// turn, so that stage s of S keeps at most S - s micro-batches' activations; <c>GPipe</c> runs every forward,
/// then every backward, and each stage keeps all the micro-batches' activations. The same bubble,
/// (S - 1) / (M + S - 1) of the step, and the same results.</summary>
public enum%}
%typemap(csclassmodifiers) enum dpt_pipeline_scope %{/// <summary>Where a pipeline's stages run across MPI processes
/// (<c>TrainerOptions.PipelineScope</c>): <c>ProcessScope</c> (the default) has every process run every stage on
/// its own devices, on its share of each batch; <c>WorldScope</c> divides the S stages among the P processes (S/P each, or P/S copies of each,
/// or <c>TrainerOptions.PipelineCopies</c> C copies of the pipeline, S C/P stages each; the activations and gradients
/// between processes sent as MPI messages, from GPUs through host buffers; every process given the whole batch;
/// the bits of one process running all S stages, within 1e-5 with more than two copies). <c>WorldScope</c> needs S a
/// multiple of P or P of S (or of P/C), the same device count in every process and no sharding but <c>ShardMode.Optimizer</c> (each stage's optimizer state
/// among its replicas in the process, or with <c>ShardScope.World</c> among every copy's replicas of it;
/// <c>UnsupportedException</c> otherwise; a
/// tie between two processes' stages goes between them as messages); reading the parameters, the checksum and saving (checkpoint,
/// safetensors) are then collective: every process calls them, process 0 writes. Without a communicator both
/// are the same.</summary>
public enum%}

%typemap(csclassmodifiers) enum dpt_pipeline_balance %{/// <summary>What a pipeline's automatic cuts divide evenly among
/// its stages when <c>TrainerOptions.PipelineCuts</c> names none (<c>TrainerOptions.PipelineBalance</c>):
/// <c>Work</c> (the default) each layer's estimated work per sample (its weight matrices' multiply-adds plus
/// one operation per output element; the same cuts on every machine and in every run); <c>Time</c> each
/// layer's measured time (the first device trains the whole model on one micro-batch of synthetic samples,
/// <c>TrainerOptions.PipelineBalanceBatch</c>, when the trainer is created, and each layer counts its best
/// forward plus backward of three; across MPI processes process 0 measures; the cuts may vary from run to
/// run); <c>ParameterBytes</c> each layer's parameters (memory, not time). <c>Trainer.PipelineCuts</c> gives
/// the cuts chosen.</summary>
public enum%}

/* Read-only getters become properties: the generated method turns private under another name and the
 * hand-written half of the class adds the property (Context.DeviceCount, Model.ParameterCount ...). */
%define DPT_CS_PROPERTY(METHOD, PRIVATE_NAME)
%rename(PRIVATE_NAME) METHOD;
%csmethodmodifiers METHOD "private";
%enddef
DPT_CS_PROPERTY(dpt_context::deviceCount, GetDeviceCount)
DPT_CS_PROPERTY(dpt_model::inputSize, GetInputSize)
DPT_CS_PROPERTY(dpt_model::outputSize, GetOutputSize)
DPT_CS_PROPERTY(dpt_model::parameterCount, GetParameterCount)
DPT_CS_PROPERTY(dpt_model::layerCount, GetLayerCount)
DPT_CS_PROPERTY(dpt_dataset::sampleCount, GetSampleCount)
DPT_CS_PROPERTY(dpt_dataset::channels, GetChannels)
DPT_CS_PROPERTY(dpt_dataset::height, GetHeight)
DPT_CS_PROPERTY(dpt_dataset::width, GetWidth)
DPT_CS_PROPERTY(dpt_dataset::classCount, GetClassCount)
DPT_CS_PROPERTY(dpt_dataset::inputType, GetInputType)
DPT_CS_PROPERTY(dpt_dataset::targetsPerSample, GetTargetsPerSample)
DPT_CS_PROPERTY(dpt_model::inputType, GetInputType)
DPT_CS_PROPERTY(dpt_trainer::parameterCount, GetParameterCount)
DPT_CS_PROPERTY(dpt_trainer::deviceCount, GetDeviceCount)
DPT_CS_PROPERTY(dpt_trainer::pipelineCuts, GetPipelineCuts)
/* TrainerOptions.Precision, InitialLossScale, LossScaleGrowthInterval, AllreduceDtype, ActivationDtype, Shard,
 * ShardScope, PipelineStages, MicroBatches, PipelineSchedule and PipelineCuts are written by hand (src/TrainerOptions.cs) for
 * their XML documentation: the generated properties turn private under other names. */
%rename(PrecisionNative) dpt_trainer_options::precision;
%csmethodmodifiers dpt_trainer_options::precision "private";
%rename(InitialLossScaleNative) dpt_trainer_options::initial_loss_scale;
%csmethodmodifiers dpt_trainer_options::initial_loss_scale "private";
%rename(LossScaleGrowthIntervalNative) dpt_trainer_options::loss_scale_growth_interval;
%csmethodmodifiers dpt_trainer_options::loss_scale_growth_interval "private";
%rename(AllreduceDtypeNative) dpt_trainer_options::allreduce_dtype;
%csmethodmodifiers dpt_trainer_options::allreduce_dtype "private";
%rename(ActivationDtypeNative) dpt_trainer_options::activation_dtype;
%csmethodmodifiers dpt_trainer_options::activation_dtype "private";
%rename(ShardNative) dpt_trainer_options::shard;
%csmethodmodifiers dpt_trainer_options::shard "private";
%rename(ShardScopeNative) dpt_trainer_options::shard_scope;
%csmethodmodifiers dpt_trainer_options::shard_scope "private";
%rename(PipelineStagesNative) dpt_trainer_options::pipeline_stages;
%csmethodmodifiers dpt_trainer_options::pipeline_stages "private";
%rename(MicroBatchesNative) dpt_trainer_options::micro_batches;
%csmethodmodifiers dpt_trainer_options::micro_batches "private";
%rename(PipelineScheduleNative) dpt_trainer_options::pipeline_schedule;
%csmethodmodifiers dpt_trainer_options::pipeline_schedule "private";
%rename(PipelineCutsNative) dpt_trainer_options::pipeline_cuts;
%csmethodmodifiers dpt_trainer_options::pipeline_cuts "private";
%rename(GetDeviceInfo) dpt_context::deviceInfo;
%rename(GetBackendInfo) dpt_context::backendInfo;

/* The graph builders, tensor queries and named tensors take and return ulong ids and "c,h,w" texts: they turn
 * private under another name, and src/Model.cs wraps them with TensorId, int[] shapes, NamedTensor lists and
 * optional arguments (model.Conv2d(x, 64, 3, padding: 1, bias: false)). */
%define DPT_CS_PRIVATE(METHOD, PRIVATE_NAME)
%rename(PRIVATE_NAME) METHOD;
%csmethodmodifiers METHOD "private";
%enddef
DPT_CS_PRIVATE(dpt_model::conv2d, Conv2dNative)
DPT_CS_PRIVATE(dpt_model::dense, DenseNative)
DPT_CS_PRIVATE(dpt_model::linear, LinearNative)
DPT_CS_PRIVATE(dpt_model::tokenEmbedding, TokenEmbeddingNative)
DPT_CS_PRIVATE(dpt_model::positionEmbedding, PositionEmbeddingNative)
DPT_CS_PRIVATE(dpt_model::causalSelfAttention, CausalSelfAttentionNative)
DPT_CS_PRIVATE(dpt_model::batchNorm, BatchNormNative)
DPT_CS_PRIVATE(dpt_model::layerNorm, LayerNormNative)
DPT_CS_PRIVATE(dpt_model::activation, ActivationNative)
DPT_CS_PRIVATE(dpt_model::pool, PoolNative)
DPT_CS_PRIVATE(dpt_model::globalAvgPool, GlobalAvgPoolNative)
DPT_CS_PRIVATE(dpt_model::flatten, FlattenNative)
DPT_CS_PRIVATE(dpt_model::dropout, DropoutNative)
DPT_CS_PRIVATE(dpt_model::add, AddNative)
DPT_CS_PRIVATE(dpt_model::concat2, Concat2Native)
DPT_CS_PRIVATE(dpt_model::concat3, Concat3Native)
DPT_CS_PRIVATE(dpt_model::tieParameter, TieNative)
DPT_CS_PRIVATE(dpt_model::outputTensor, GetOutputTensor)
DPT_CS_PRIVATE(dpt_model::setOutput, SetOutputTensor)
DPT_CS_PRIVATE(dpt_model::tensorCount, GetTensorCount)
DPT_CS_PRIVATE(dpt_model::tensorShape, GetTensorShapeText)
DPT_CS_PRIVATE(dpt_model::bufferCount, GetBufferCount)
DPT_CS_PRIVATE(dpt_model::namedTensorCount, GetNamedTensorCount)
DPT_CS_PRIVATE(dpt_model::namedTensorName, GetNamedTensorName)
DPT_CS_PRIVATE(dpt_model::namedTensorOffset, GetNamedTensorOffset)
DPT_CS_PRIVATE(dpt_model::namedTensorShape, GetNamedTensorShapeText)
/* Dataset.LoadText (src/Dataset.cs) returns the training part and the validation part through an out
 * parameter. */
DPT_CS_PRIVATE(dpt_dataset::loadText, LoadTextParts)
/* Trainer.GetReplicaMemory (src/Trainer.cs) returns the ReplicaMemory value (src/ReplicaMemory.cs). */
DPT_CS_PRIVATE(dpt_trainer::replicaMemory, GetReplicaMemoryNative)
/* Trainer.GetReplicaTimes returns the ReplicaTimes value (src/ReplicaTimes.cs); Trainer.TraceStart and
 * Trainer.TraceWrite are written by hand (src/Trainer.cs) for their XML documentation. */
DPT_CS_PRIVATE(dpt_trainer::replicaTimes, GetReplicaTimesNative)
DPT_CS_PRIVATE(dpt_trainer::replicaTotals, GetReplicaTotalsNative)
DPT_CS_PRIVATE(dpt_trainer::traceStart, TraceStartNative)
DPT_CS_PRIVATE(dpt_trainer::traceWrite, TraceWriteNative)

/* The C API has no buffer count per trainer: each Trainer remembers its model's (the trainer copies the model,
 * so it cannot change), for the array-returning GetBuffers(). Both constructors name their model `model`; a
 * failed construction throws before the body runs. */
%typemap(csconstruct, excode=SWIGEXCODE) dpt_trainer %{: this($imcall, true) {$excode
    swigBufferCount = model.BufferCount;
  }
%}

/* Module-level helpers, reached through the hand-written DPTrain.Library (the module class is internal). */
%pragma(csharp) moduleclassmodifiers="internal class"
%rename(VersionNumber) dptrain_binding::versionNumber;
%rename(VersionString) dptrain_binding::versionString;
%rename(StatusString) dptrain_binding::statusString;
