// Trainer.GetReplicaTimes and GetReplicaTotals (dpt_trainer_replica_times, _totals) and the timeline, Trainer.TraceStart / TraceWrite
// (dpt_trainer_trace_start / _write), docs/profiling.md: the figures before and after a step, how they add up,
// the bus bandwidth's count, a trace of one step, and the refusals.
using System;
using System.IO;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class ProfilingTests {
  const int Devices = 3;
  const int Side = 8;                 // samples are 1 x 8 x 8
  const int SampleSize = Side * Side;
  const int Classes = 3;
  const int Samples = 24;             // 8 per device
  /// 64 -> 128 -> 3.
  const ulong Parameters = SampleSize * 128 + 128 + 128 * Classes + Classes;

  Context context;
  string dir;

  [TestFixtureSetUp]
  public void CreateContext() {
    context = new Context(Devices);
    dir = Path.Combine(Path.GetTempPath(), "dptrain-csharp-profiling-" + Guid.NewGuid().ToString("N"));
    Directory.CreateDirectory(dir);
  }

  [TestFixtureTearDown]
  public void DisposeContext() {
    context.Dispose();
    Directory.Delete(dir, true);
  }

  /// The MLP on 3 CPU devices, seed 7, SGD, one micro-batch per step, no gradient buckets (one all-reduce on each
  /// device's thread).
  Trainer MakeTrainer() {
    using (var model = TestData.MakeRippleMlp(Side))
    using (var options = new TrainerOptions())
    using (var optimizer = new OptimizerOptions()) {
      options.Seed = 7;
      options.AccumulationSteps = 1;
      options.BucketBytes = 0;
      optimizer.LearningRate = 0.1f;
      return new Trainer(context, model, options, optimizer);
    }
  }

  /// One step on the batch; returns its total seconds.
  static double Step(Trainer trainer) {
    float[] x;
    int[] y;
    TestData.MakeRipple(Side, Samples, out x, out y);
    using (StepResult r = trainer.Step(x, y)) {
      Assert.AreEqual(1, r.Applied, "the step updated the parameters");
      return r.TotalSeconds;
    }
  }

  /// Before any step every figure of every replica is 0. After a step each replica computed, all-reduced and
  /// updated (each > 0), its idle time is not negative, the four add up to the step's total seconds (the
  /// reduction ran on the device's own thread: no buckets), and its bus bandwidth times its communication seconds
  /// is the all-reduce's bus bytes, parameters * 4 * 2 (K - 1) / K.
  [Test]
  public void ReplicaTimesAddUpToTheStep() {
    using (Trainer trainer = MakeTrainer()) {
      Assert.AreEqual((ulong)Devices, trainer.DeviceCount);
      Assert.AreEqual(Parameters, trainer.ParameterCount);
      for (int d = 0; d < Devices; ++d)
        Assert.AreEqual(new ReplicaTimes(0, 0, 0, 0, 0), trainer.GetReplicaTimes((ulong)d),
                        "before any step, device " + d);

      double total = Step(trainer);
      Assert.Greater(total, 0.0, "total seconds");
      double busBytes = Parameters * 4.0 * 2.0 * (Devices - 1) / Devices;
      for (int d = 0; d < Devices; ++d) {
        ReplicaTimes t = trainer.GetReplicaTimes((ulong)d);
        string what = "device " + d + ": " + t;
        Assert.Greater(t.ComputeSeconds, 0.0, what);
        Assert.Greater(t.CommunicationSeconds, 0.0, what);
        Assert.Greater(t.UpdateSeconds, 0.0, what);
        Assert.GreaterOrEqual(t.IdleSeconds, 0.0, what);
        double sum = t.ComputeSeconds + t.CommunicationSeconds + t.UpdateSeconds + t.IdleSeconds;
        Assert.AreEqual(total, sum, 1e-9 * total, what + ": the parts against the step's total " + total);
        Assert.AreEqual(busBytes, t.BusBandwidth * t.CommunicationSeconds, 1e-6 * busBytes, what + ": bus bytes");
        Assert.IsTrue(t == trainer.GetReplicaTimes((ulong)d), what + ": a second read");
      }
    }
  }

  /// GetReplicaTotals: all 0 before any step; after two steps each figure is the sum of the two steps' (the same
  /// additions), the bus bandwidth their bytes over their seconds; an evaluation adds nothing; a device past the
  /// last is refused.
  [Test]
  public void ReplicaTotalsAddUpTheSteps() {
    using (Trainer trainer = MakeTrainer()) {
      Assert.AreEqual(new ReplicaTimes(0, 0, 0, 0, 0), trainer.GetReplicaTotals(0), "before any step");
      var sum = new double[Devices, 5];
      for (int s = 0; s < 2; ++s) {
        Step(trainer);
        for (int d = 0; d < Devices; ++d) {
          ReplicaTimes t = trainer.GetReplicaTimes((ulong)d);
          sum[d, 0] += t.ComputeSeconds;
          sum[d, 1] += t.CommunicationSeconds;
          sum[d, 2] += t.UpdateSeconds;
          sum[d, 3] += t.IdleSeconds;
          sum[d, 4] += t.BusBandwidth * t.CommunicationSeconds;
        }
      }
      float[] x;
      int[] y;
      TestData.MakeRipple(Side, Samples, out x, out y);
      using (EvalResult e = trainer.Evaluate(x, y)) {}
      for (int d = 0; d < Devices; ++d) {
        ReplicaTimes totals = trainer.GetReplicaTotals((ulong)d);
        string what = "device " + d + ": " + totals;
        Assert.AreEqual(sum[d, 0], totals.ComputeSeconds, 0.0, what);
        Assert.AreEqual(sum[d, 1], totals.CommunicationSeconds, 0.0, what);
        Assert.AreEqual(sum[d, 2], totals.UpdateSeconds, 0.0, what);
        Assert.AreEqual(sum[d, 3], totals.IdleSeconds, 0.0, what);
        double bandwidth = sum[d, 4] / sum[d, 1];
        Assert.AreEqual(bandwidth, totals.BusBandwidth, 1e-9 * bandwidth, what);
      }
      var error = Assert.Throws<InvalidArgumentException>(() => trainer.GetReplicaTotals(Devices));
      Assert.AreEqual(Status.OutOfRange, error.Status);
      StringAssert.Contains("dpt_trainer_replica_totals", error.LibraryMessage);
    }
  }

  /// A device past the last is an InvalidArgumentException with Status.OutOfRange, and the trainer is unharmed.
  [Test]
  public void AnOutOfRangeDeviceIsRefused() {
    using (Trainer trainer = MakeTrainer()) {
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.GetReplicaTimes(Devices));
      Assert.AreEqual(Status.OutOfRange, e.Status);
      Assert.AreEqual(1000, e.Category);
      StringAssert.Contains("dpt_trainer_replica_times", e.LibraryMessage);
      Step(trainer);
      Assert.Greater(trainer.GetReplicaTimes(Devices - 1).ComputeSeconds, 0.0, "the trainer is unharmed");
    }
  }

  /// TraceStart(1000), one step and TraceWrite give Chrome trace-event JSON (checked as text) with a compute and a
  /// communication row per device and the ops' forward events; the write stops the recording, so a second write
  /// is Status.InvalidState.
  [Test]
  public void ATraceOfOneStepIsWritten() {
    using (Trainer trainer = MakeTrainer()) {
      trainer.TraceStart(1000);
      Step(trainer);
      string path = Path.Combine(dir, "trace.json");
      trainer.TraceWrite(path);
      string json = File.ReadAllText(path);
      StringAssert.StartsWith("{\"displayTimeUnit\"", json);
      StringAssert.EndsWith("]}", json.Trim());
      StringAssert.Contains("\"traceEvents\"", json);
      for (int d = 0; d < Devices; ++d) {
        StringAssert.Contains("\"cpu:" + d + " compute\"", json, "device " + d + "'s compute row");
        StringAssert.Contains("\"cpu:" + d + " communication\"", json, "device " + d + "'s communication row");
      }
      StringAssert.Contains("\"ph\":\"X\"", json);
      StringAssert.Contains("\"cat\":\"forward\"", json);
      StringAssert.Contains("\"cat\":\"backward\"", json);
      StringAssert.Contains("\"name\":\"all-reduce\"", json);
      StringAssert.Contains("\"name\":\"update\"", json);

      string again = Path.Combine(dir, "again.json");
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceWrite(again));
      Assert.AreEqual(Status.InvalidState, e.Status);
      Assert.IsFalse(File.Exists(again), "nothing written");
    }
  }

  /// TraceWrite without a recording is Status.InvalidState; TraceStart(0) Status.InvalidArgument, above 2^24
  /// Status.OutOfRange; an unwritable path is an IOFormatException (Status.IO) that leaves the recording stopped;
  /// a null path Status.NullPointer. The trainer still trains and traces afterwards.
  [Test]
  public void TraceMisuseIsRefused() {
    using (Trainer trainer = MakeTrainer()) {
      string path = Path.Combine(dir, "never.json");
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceWrite(path));
      Assert.AreEqual(Status.InvalidState, e.Status);
      StringAssert.Contains("dpt_trainer_trace_write", e.LibraryMessage);

      e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceStart(0));
      Assert.AreEqual(Status.InvalidArgument, e.Status);
      StringAssert.Contains("dpt_trainer_trace_start", e.LibraryMessage);
      e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceStart((1UL << 24) + 1));
      Assert.AreEqual(Status.OutOfRange, e.Status);
      e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceWrite(path));
      Assert.AreEqual(Status.InvalidState, e.Status, "the refused starts started nothing");

      trainer.TraceStart(10);
      e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceWrite(null));
      Assert.AreEqual(Status.NullPointer, e.Status);
      string unwritable = Path.Combine(dir, "no-such-dir", "trace.json");
      var io = Assert.Throws<IOFormatException>(() => trainer.TraceWrite(unwritable));
      Assert.AreEqual(Status.IO, io.Status);
      e = Assert.Throws<InvalidArgumentException>(() => trainer.TraceWrite(path));
      Assert.AreEqual(Status.InvalidState, e.Status, "the failed write stopped the recording");

      trainer.TraceStart(10);
      Step(trainer);
      trainer.TraceWrite(path);
      Assert.Greater(new FileInfo(path).Length, 0L, "a trace after the refusals");
    }
  }
}

}
