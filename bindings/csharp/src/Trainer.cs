// Hand-written half of Trainer: properties, array-returning overloads, and Fit with progress reporting.
using System;
using System.Runtime.ExceptionServices;
using System.Threading;

namespace DPTrain {

/// <summary>Data-parallel training: one parameter replica per device, split batches, all-reduced gradients.</summary>
/// <remarks>One trainer is used by one thread at a time. Arrays are pinned for the duration of a call, never
/// copied or kept.</remarks>
public partial class Trainer {
  /// Running Fit calls on this trainer (Dispose refuses while nonzero).
  internal int swigBusy;

  /// <summary>A trainer on every device of <paramref name="context"/>, with default options.</summary>
  public Trainer(Context context, Model model) : this(context, model, null, null) {}

  /// <summary>Number of parameters (floats) of one replica.</summary>
  public ulong ParameterCount { get { return GetParameterCount(); } }

  /// <summary>Number of devices (replicas).</summary>
  public ulong DeviceCount { get { return GetDeviceCount(); } }

  /// <summary>Where the pipeline's stages after the first begin: their first layers' names, comma-separated,
  /// as <see cref="TrainerOptions.PipelineCuts"/> takes them (<c>""</c> without a pipeline), so that a later
  /// run can name the cuts a <see cref="TrainerOptions.PipelineBalance"/> chose. Across MPI processes the same
  /// on every process.</summary>
  public string PipelineCuts { get { return GetPipelineCuts(); } }

  /// <summary>A copy of the parameters of the first replica.</summary>
  public float[] GetParameters() {
    var parameters = new float[GetParameterCount()];
    GetParameters(parameters);
    return parameters;
  }

  /// Floats of buffers of the model this trainer was created from (set by the constructors, csharp.i).
  readonly ulong swigBufferCount;

  /// <summary>Number of floats of buffers (running statistics of batch norms) of one replica, the
  /// <see cref="Model.BufferCount"/> of its model; 0 without batch norm.</summary>
  public ulong BufferCount { get { return swigBufferCount; } }

  /// <summary>A copy of the buffers (running statistics; every replica holds the same), in the order of
  /// <see cref="Model.NamedBuffers"/>. Empty without batch norm.</summary>
  public float[] GetBuffers() {
    var buffers = new float[swigBufferCount];
    if (buffers.Length != 0) GetBuffers(buffers);  // (an empty array pins as a null pointer)
    return buffers;
  }

  /// <summary>A copy of the parameters of replica <paramref name="replica"/>.</summary>
  public float[] GetReplicaParameters(ulong replica) {
    var parameters = new float[GetParameterCount()];
    GetReplicaParameters(replica, parameters);
    return parameters;
  }

  /// <summary>The bytes replica <paramref name="device"/> holds now in its device's memory, by what they are
  /// for: parameters (with <see cref="ShardMode.Parameters"/>: the device's own range of them plus its gather
  /// buffer), gradient (with <see cref="ShardMode.Gradients"/> or <c>Parameters</c>: the summed gradient of the
  /// device's own range plus the two staging buckets), optimizer state (of the device's own range in any sharded
  /// mode, <see cref="ShardMode.Optimizer"/>, <c>Gradients</c> or <c>Parameters</c>: over K devices the ranges'
  /// states add up to one unsharded replica's), running statistics, and everything the passes allocate
  /// (activations, which grow with the largest slice seen so far).</summary>
  /// <param name="device">0 .. <see cref="DeviceCount"/> - 1.</param>
  /// <exception cref="InvalidArgumentException"><see cref="Status.OutOfRange"/> for a device past the
  /// last.</exception>
  public ReplicaMemory GetReplicaMemory(ulong device) {
    using (ReplicaMemoryNative m = GetReplicaMemoryNative(device))
      return new ReplicaMemory(m.Parameters, m.Gradients, m.OptimizerState, m.Buffers, m.Activations, m.Total);
  }

  /// <summary>Replica <paramref name="device"/>'s share of the last <c>Step</c> call (of a micro-batch with
  /// accumulation: the update and, without gradient buckets, the reduction come with the last of a window): its
  /// compute (forward and backward), communication (its gradient reduction), update and idle seconds, and its
  /// reduction's bus bandwidth. <c>ComputeSeconds + UpdateSeconds + IdleSeconds</c>, plus
  /// <c>CommunicationSeconds</c> when the reduction ran on the device's own thread (no gradient buckets), is the
  /// call's <see cref="StepResult.TotalSeconds"/>. All 0 before the first step.</summary>
  /// <param name="device">0 .. <see cref="DeviceCount"/> - 1.</param>
  /// <exception cref="InvalidArgumentException"><see cref="Status.OutOfRange"/> for a device past the
  /// last.</exception>
  public ReplicaTimes GetReplicaTimes(ulong device) {
    using (ReplicaTimesNative t = GetReplicaTimesNative(device))
      return new ReplicaTimes(t.ComputeSeconds, t.CommunicationSeconds, t.UpdateSeconds, t.IdleSeconds,
                              t.BusBandwidth);
  }

  /// <summary>Replica <paramref name="device"/>'s times summed over every step call since this trainer was made
  /// (<see cref="Fit"/>'s steps included; evaluation and prediction are not steps): the seconds of compute,
  /// communication, update and idle, and the bus bandwidth of all its reductions (their bytes over their
  /// seconds). All 0 before the first step. A fit's share: the seconds after it minus those before.</summary>
  /// <param name="device">0 .. <see cref="DeviceCount"/> - 1.</param>
  /// <exception cref="InvalidArgumentException"><see cref="Status.OutOfRange"/> for a device past the
  /// last.</exception>
  public ReplicaTimes GetReplicaTotals(ulong device) {
    using (ReplicaTimesNative t = GetReplicaTotalsNative(device))
      return new ReplicaTimes(t.ComputeSeconds, t.CommunicationSeconds, t.UpdateSeconds, t.IdleSeconds,
                              t.BusBandwidth);
  }

  /// <summary>Starts recording a timeline of this trainer's work, from the next call on: per device, each op's
  /// forward and backward, the gradient reductions (on the device's thread, or with gradient buckets on its
  /// communication thread), the parameter gathers of <see cref="ShardMode.Parameters"/> and the update. Up to
  /// <paramref name="maxEvents"/> are kept per device and thread; later ones are dropped and counted. Calling it
  /// again restarts the recording; <see cref="TraceWrite"/> stops it and writes the file. On GPUs each recorded
  /// op waits for the one before it on the device, so its times are its device time (a recorded step is
  /// slower). Recording changes no bit of training.</summary>
  /// <param name="maxEvents">1 .. 2^24 events per device and thread (room for them is reserved now).</param>
  /// <exception cref="InvalidArgumentException"><see cref="Status.InvalidArgument"/> for 0,
  /// <see cref="Status.OutOfRange"/> above 2^24.</exception>
  /// <exception cref="DeviceException"><see cref="Status.OutOfMemory"/> when the room cannot be
  /// reserved.</exception>
  public void TraceStart(ulong maxEvents) { TraceStartNative(maxEvents); }

  /// <summary>Stops the recording that <see cref="TraceStart"/> started and writes the timeline to
  /// <paramref name="path"/> as Chrome trace-event JSON, atomically: two rows per device (<c>"cpu:0 compute"</c>,
  /// <c>"cpu:0 communication"</c>), one <c>"X"</c> event per recorded piece of work (categories <c>forward</c>,
  /// <c>backward</c>, <c>communication</c>, <c>gather</c>, <c>update</c>), idle time as gaps. Open it in
  /// <c>chrome://tracing</c> or https://ui.perfetto.dev (docs/profiling.md).</summary>
  /// <param name="path">The file to write (replaced if it exists).</param>
  /// <exception cref="InvalidArgumentException"><see cref="Status.InvalidState"/> when no recording runs;
  /// <see cref="Status.NullPointer"/> for a null path, <see cref="Status.InvalidArgument"/> for an empty
  /// one.</exception>
  /// <exception cref="IOFormatException"><see cref="Status.IO"/> when the file cannot be written (the recording
  /// then stays stopped).</exception>
  public void TraceWrite(string path) { TraceWriteNative(path); }

  /// <summary>Logits of <paramref name="sampleCount"/> samples, sampleCount * output size floats.</summary>
  public float[] Predict(float[] inputs, ulong sampleCount, ulong outputSize) {
    var logits = new float[checked(sampleCount * outputSize)];
    Predict(inputs, sampleCount, logits);
    return logits;
  }

  /// <summary>Logits of <paramref name="sampleCount"/> token sequences (every position's), sampleCount * output
  /// size floats (a model whose output is [T, V]: T * V per sample).</summary>
  public float[] PredictTokens(int[] tokens, ulong sampleCount, ulong outputSize) {
    var logits = new float[checked(sampleCount * outputSize)];
    PredictTokens(tokens, sampleCount, logits);
    return logits;
  }

  /// <summary>Raised with each progress report of <see cref="Fit"/>, on the thread the library reports on
  /// (the thread that called Fit). Set <see cref="ProgressEventArgs.Stop"/> to stop training; an exception
  /// thrown by a handler stops training and is rethrown by Fit.</summary>
  public event EventHandler<ProgressEventArgs> ProgressChanged;

  /// <summary>Trains for options.Epochs epochs over <paramref name="train"/>, evaluating
  /// <paramref name="test"/> (may be null) after each epoch.</summary>
  /// <param name="train">Training set.</param>
  /// <param name="test">Test set, or null.</param>
  /// <param name="options">Epochs, batch size, shuffling, report interval; null for the defaults.</param>
  /// <param name="listener">Receives the progress reports too (before the event handlers); may be null.
  /// It is kept alive for the duration of the call.</param>
  /// <exception cref="DptrainException">The library failed.</exception>
  /// <remarks>An exception thrown by the listener or a ProgressChanged handler stops training after that
  /// report and is rethrown here, with its original stack trace. While Fit runs, disposing the trainer or one
  /// of its datasets (from a handler or another thread) throws InvalidOperationException instead of freeing
  /// them under the library.</remarks>
  public FitResult Fit(Dataset train, Dataset test = null, FitOptions options = null,
                       ProgressListener listener = null) {
    // Neither the trainer nor the datasets may be freed while the library uses them.
    Interlocked.Increment(ref swigBusy);
    if (train != null) Interlocked.Increment(ref train.swigBusy);
    if (test != null) Interlocked.Increment(ref test.swigBusy);
    try {
      return FitWithReports(train, test, options, listener);
    } finally {
      if (test != null) Interlocked.Decrement(ref test.swigBusy);
      if (train != null) Interlocked.Decrement(ref train.swigBusy);
      Interlocked.Decrement(ref swigBusy);
    }
  }

  FitResult FitWithReports(Dataset train, Dataset test, FitOptions options, ProgressListener listener) {
    EventHandler<ProgressEventArgs> handlers = ProgressChanged;
    if (listener == null && handlers == null) return FitNative(train, test, options, null);
    using (var adapter = new FitProgressAdapter(this, listener, handlers)) {
      FitResult result = null;
      try {
        result = FitNative(train, test, options, adapter);
      } catch (Exception) {
        if (adapter.Error == null) throw;
      }
      if (adapter.Error != null) {
        if (result != null) result.Dispose();
        adapter.Error.Throw();
      }
      return result;
    }
  }

  /// <summary>The director behind Fit: forwards each report to the listener and the event handlers, and
  /// turns their exceptions into "stop" so that no managed exception unwinds through native frames.</summary>
  sealed class FitProgressAdapter : ProgressListener {
    readonly Trainer trainer;
    readonly ProgressListener listener;
    readonly EventHandler<ProgressEventArgs> handlers;

    internal ExceptionDispatchInfo Error { get; private set; }

    internal FitProgressAdapter(Trainer trainer, ProgressListener listener, EventHandler<ProgressEventArgs> handlers) {
      this.trainer = trainer;
      this.listener = listener;
      this.handlers = handlers;
    }

    public override bool OnProgress(Progress progress) {
      if (Error != null) return true;
      try {
        bool stop = false;
        if (listener != null) stop = listener.OnProgress(progress);
        if (handlers != null) {
          var args = new ProgressEventArgs(progress);
          handlers(trainer, args);
          stop = stop || args.Stop;
        }
        // progress is this call's own copy (csharp.i): without a listener nobody else can hold it.
        if (listener == null) progress.Dispose();
        return stop;
      } catch (Exception e) {
        Error = ExceptionDispatchInfo.Capture(e);
        return true;
      }
    }
  }
}

/// <summary>Receives the progress reports of <see cref="Trainer.Fit"/>: subclass it and override
/// OnProgress (return true to stop training). The <see cref="Progress"/> it receives is its own copy of the
/// report: it may be kept (and read or changed) after the call.</summary>
public partial class ProgressListener {}

}
