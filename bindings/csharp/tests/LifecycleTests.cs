// Create, use, dispose; use after dispose raises ObjectDisposedException and never crashes Mono.
using System;
using System.Text.RegularExpressions;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class LifecycleTests {
  [Test]
  public void VersionIsReported() {
    Assert.That(Library.Version, Is.StringMatching(@"^\d+\.\d+\.\d+"));
    string[] parts = Library.Version.Split('.');
    uint expected = uint.Parse(parts[0]) * 10000 + uint.Parse(parts[1]) * 100 + uint.Parse(Regex.Match(parts[2], @"^\d+").Value);
    Assert.AreEqual(expected, Library.VersionNumber);
    Assert.AreEqual(64, Library.MaxCpuDevices);
    Assert.AreEqual("size mismatch", Library.StatusString(Status.SizeMismatch));
  }

  [Test]
  public void ArraysCrossAsPinnedPointers() {
    // Zero copy: the P/Invoke signatures take raw pointers (the proxy pins the array with `fixed`), so the
    // marshaller never copies an array in or out.
    var pinvoke = typeof(Trainer).Assembly.GetType("DPTrain.dptrainPINVOKE", true);
    foreach (string name in new[] { "Trainer_Step", "Trainer_GetParameters", "Trainer_SetParameters", "new_Dataset" }) {
      var method = pinvoke.GetMethod(name, System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Public |
                                           System.Reflection.BindingFlags.NonPublic);
      Assert.IsNotNull(method, name);
      foreach (var p in method.GetParameters())
        Assert.IsFalse(p.ParameterType.IsArray, name + "(" + p.Name + ") is marshalled as an array");
      Assert.That(Array.FindAll(method.GetParameters(), p => p.ParameterType == typeof(IntPtr)).Length,
                  Is.GreaterThanOrEqualTo(1), name);
    }
  }

  [Test]
  public void CudaIsAskedForOnlyOnRequest() {
    using (var cpu = new Context(2))
    using (var all = new Context(2, 0, DeviceSelection.All)) {
      BackendInfo none = cpu.GetBackendInfo(DeviceKind.Cuda);
      Assert.AreEqual(0, none.Requested);
      StringAssert.Contains("not requested", none.Reason);
      BackendInfo cuda = all.GetBackendInfo(DeviceKind.Cuda);
      Assert.AreEqual(1, cuda.Requested);
      Assert.AreEqual(2 + cuda.DeviceCount, all.DeviceCount);
      if (cuda.DeviceCount == 0) Assert.IsNotEmpty(cuda.Reason);
      Assert.IsFalse(all.CanAccessPeer(0, 1));
      Assert.AreEqual(all.GetDeviceInfo(0).TotalMemory, all.GetDeviceInfo(0).FreeMemory);
    }
  }

  [Test]
  public void CreateUseDispose() {
    var context = new Context(2);
    Assert.AreEqual(2UL, context.DeviceCount);
    DeviceInfo[] devices = context.GetDevices();
    Assert.AreEqual(2, devices.Length);
    Assert.AreEqual("cpu:0", devices[0].Name);
    Assert.AreEqual("cpu:1", devices[1].Name);
    Assert.AreEqual(DeviceKind.Cpu, devices[1].Kind);
    Assert.AreEqual(1UL, devices[1].Ordinal);

    var model = TestData.MakeModel();
    Assert.AreEqual(16UL, model.InputSize);
    Assert.AreEqual(4UL, model.OutputSize);
    Assert.AreEqual(3UL, model.LayerCount);
    Assert.AreEqual(16UL * 16 + 16 + 16 * 4 + 4, model.ParameterCount);
    StringAssert.Contains("dense:16", model.Describe());

    var data = TestData.MakeDataset(32);
    Assert.AreEqual(32UL, data.SampleCount);
    Assert.AreEqual(1UL, data.Channels);
    Assert.AreEqual(4UL, data.Height);
    Assert.AreEqual(4UL, data.Width);
    Assert.AreEqual(4UL, data.ClassCount);

    var trainer = new Trainer(context, model);
    Assert.AreEqual(model.ParameterCount, trainer.ParameterCount);
    Assert.AreEqual(2UL, trainer.DeviceCount);
    using (var r = trainer.EvaluateDataset(data, 0)) Assert.AreEqual(32UL, r.Samples);

    foreach (IDisposable d in new IDisposable[] { trainer, data, model, context }) d.Dispose();
    Assert.IsTrue(trainer.IsDisposed);
    Assert.IsTrue(data.IsDisposed);
    Assert.IsTrue(model.IsDisposed);
    Assert.IsTrue(context.IsDisposed);
  }

  [Test]
  public void DisposeIsIdempotent() {
    var context = new Context(1);
    var model = TestData.MakeModel();
    var data = TestData.MakeDataset(8);
    var trainer = new Trainer(context, model);
    var options = new FitOptions();
    for (int i = 0; i < 3; ++i) {
      trainer.Dispose();
      data.Dispose();
      model.Dispose();
      context.Dispose();
      options.Dispose();
    }
    Assert.IsTrue(trainer.IsDisposed && data.IsDisposed && model.IsDisposed && context.IsDisposed && options.IsDisposed);
  }

  static void AssertDisposed(string name, TestDelegate call) {
    var e = Assert.Throws<ObjectDisposedException>(call);
    Assert.AreEqual(name, e.ObjectName);
    StringAssert.Contains("the " + name + " has been disposed", e.Message);
  }

  [Test]
  public void UseAfterDisposeThrowsObjectDisposed() {
    float[] x;
    int[] y;
    TestData.Make(8, out x, out y);
    var context = new Context(2);
    var model = TestData.MakeModel();
    var data = TestData.MakeDataset(8);
    var trainer = new Trainer(context, model);
    var options = new TrainerOptions();
    StepResult step = trainer.Step(x, y);
    trainer.Dispose();
    data.Dispose();
    model.Dispose();
    options.Dispose();
    step.Dispose();

    AssertDisposed("Trainer", () => trainer.Step(x, y));
    AssertDisposed("Trainer", () => { var n = trainer.ParameterCount; });
    AssertDisposed("Trainer", () => trainer.GetParameters());
    AssertDisposed("Trainer", () => trainer.ParameterChecksum());
    AssertDisposed("Trainer", () => trainer.Fit(TestData.MakeDataset(8)));
    AssertDisposed("Model", () => model.AddDense(3));
    AssertDisposed("Model", () => { var n = model.ParameterCount; });
    AssertDisposed("Dataset", () => { var n = data.SampleCount; });
    AssertDisposed("Dataset", () => data.Subset(0, 1));
    AssertDisposed("TrainerOptions", () => options.Seed = 3);
    AssertDisposed("TrainerOptions", () => { var s = options.Seed; });
    AssertDisposed("StepResult", () => { var l = step.Loss; });

    // The context still works; then it is disposed too.
    Assert.AreEqual(2UL, context.DeviceCount);
    context.Dispose();
    AssertDisposed("Context", () => { var n = context.DeviceCount; });
    AssertDisposed("Context", () => context.GetDeviceInfo(0));
  }

  [Test]
  public void DisposedArgumentThrowsObjectDisposed() {
    using (var context = new Context(2))
    using (var model = TestData.MakeModel())
    using (var trainer = new Trainer(context, model)) {
      var deadContext = new Context(1);
      deadContext.Dispose();
      var deadModel = TestData.MakeModel();
      deadModel.Dispose();
      var deadData = TestData.MakeDataset(8);
      deadData.Dispose();
      var deadOptions = new FitOptions();
      deadOptions.Dispose();
      var deadTrainerOptions = new TrainerOptions();
      deadTrainerOptions.Dispose();

      AssertDisposed("Context", () => new Trainer(deadContext, model));
      AssertDisposed("Model", () => new Trainer(context, deadModel));
      // A disposed options object must not silently mean "defaults".
      AssertDisposed("TrainerOptions", () => new Trainer(context, model, deadTrainerOptions, null));
      AssertDisposed("Dataset", () => trainer.Fit(deadData));
      using (var live = TestData.MakeDataset(8)) {
        AssertDisposed("Dataset", () => trainer.Fit(live, deadData));
        AssertDisposed("FitOptions", () => trainer.Fit(live, null, deadOptions));
      }
      // The trainer is unharmed.
      using (var data = TestData.MakeDataset(8))
      using (var r = trainer.EvaluateDataset(data, 4)) Assert.AreEqual(8UL, r.Samples);
    }
  }

  [Test]
  public void ModelMayBeDisposedBeforeItsTrainer() {
    float[] x;
    int[] y;
    TestData.Make(8, out x, out y);
    using (var context = new Context(2)) {
      Trainer trainer;
      using (var model = TestData.MakeModel()) trainer = new Trainer(context, model);
      using (trainer)
      using (var r = trainer.Step(x, y)) Assert.AreEqual(8UL, r.Samples);
    }
  }

  [Test]
  public void DisposingTheContextLeavesItsTrainersTraining() {
    // As in the C API, a trainer shares its context's devices: it may outlive the context.
    float[] x;
    int[] y;
    TestData.Make(16, out x, out y);
    using (var kept = new Context(2))
    using (var reference = TestData.MakeTrainer(kept, seed: 9)) {
      var disposed = new Context(2);
      using (var orphan = TestData.MakeTrainer(disposed, seed: 9)) {
        disposed.Dispose();
        Assert.IsTrue(disposed.IsDisposed);
        Assert.IsFalse(orphan.IsDisposed);
        Assert.AreEqual(2UL, orphan.DeviceCount);
        // Same seed, same batches: it trains exactly like the trainer whose context is alive.
        for (int i = 0; i < 5; ++i) {
          using (var a = reference.Step(x, y))
          using (var b = orphan.Step(x, y)) Assert.AreEqual(a.Loss, b.Loss, "step " + i);
        }
        using (var data = TestData.MakeDataset(32))
        using (var options = new FitOptions { Epochs = 2, BatchSize = 8 }) {
          using (var r = orphan.Fit(data, null, options)) Assert.AreEqual(2UL, r.EpochsCompleted);
          using (var r = reference.Fit(data, null, options)) Assert.AreEqual(2UL, r.EpochsCompleted);
        }
        Assert.AreEqual(reference.ParameterChecksum(), orphan.ParameterChecksum());
      }
    }
  }

  static ulong MemoryInUse(Context context) {
    ulong bytes = 0;
    foreach (DeviceInfo d in context.GetDevices()) bytes += d.MemoryInUse;
    return bytes;
  }

  static ulong CreateAndDrop(Context context, int count) {
    for (int i = 0; i < count; ++i) TestData.MakeTrainer(context);
    return MemoryInUse(context);
  }

  [Test]
  public void DroppedTrainersOfALongLivedContextAreFreed() {
    // The context holds no references to its trainers: undisposed ones are freed by their finalizers.
    using (var context = new Context(2)) {
      ulong baseline = MemoryInUse(context);
      ulong alive = CreateAndDrop(context, 50);
      Assert.That(alive, Is.GreaterThan(baseline));
      ulong now = alive;
      for (int i = 0; i < 100 && now != baseline; ++i) {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        now = MemoryInUse(context);
      }
      Assert.AreEqual(baseline, now, "bytes still held by dropped trainers");
    }
  }

  [Test]
  public void FinalizersReleaseForgottenObjects() {
    // The safety net: objects never disposed are released by their finalizers without crashing.
    for (int i = 0; i < 20; ++i) {
      var context = new Context(1);
      var model = TestData.MakeModel();
      var trainer = new Trainer(context, model);
      var data = TestData.MakeDataset(4);
      new FitOptions();
      trainer.EvaluateDataset(data, 0);
    }
    GC.Collect();
    GC.WaitForPendingFinalizers();
    GC.Collect();
    using (var context = new Context(1)) Assert.AreEqual(1UL, context.DeviceCount);
  }
}

}
