// Progress reports: the ProgressChanged event and ProgressListener subclasses (SWIG director), also when Fit
// runs on another thread; an exception thrown by a handler stops training and surfaces from Fit.
using System;
using System.Collections.Generic;
using System.Threading;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class CallbacksTests {
  Context context;
  Dataset train;
  Dataset test;

  [TestFixtureSetUp]
  public void Create() {
    context = new Context(2);
    train = TestData.MakeDataset(96);
    test = train.Subset(0, 32);
  }

  [TestFixtureTearDown]
  public void Release() {
    test.Dispose();
    train.Dispose();
    context.Dispose();
  }

  static FitOptions Options(ulong epochs, ulong progressEvery) {
    var o = new FitOptions();
    o.Epochs = epochs;
    o.BatchSize = 32;  // 3 batches per epoch
    o.ProgressEvery = progressEvery;
    return o;
  }

  [Test]
  public void EventReportsEveryEpoch() {
    var reports = new List<ProgressEventArgs>();
    object sender = null;
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(3, 0)) {
      trainer.ProgressChanged += (s, p) => { sender = s; reports.Add(p); };
      using (var r = trainer.Fit(train, test, options)) Assert.AreEqual(3UL, r.EpochsCompleted);
      Assert.AreSame(trainer, sender);
    }
    Assert.AreEqual(3, reports.Count);
    for (int i = 0; i < 3; ++i) {
      ProgressEventArgs p = reports[i];
      Assert.AreEqual(ProgressKind.Epoch, p.Kind);
      Assert.AreEqual((ulong)(i + 1), p.Epoch);
      Assert.AreEqual(3UL, p.Epochs);
      Assert.AreEqual(3UL, p.Batch);
      Assert.AreEqual(3UL, p.Batches);
      Assert.AreEqual(96UL, p.Samples);
      Assert.IsTrue(p.HasTest);
      Assert.That(p.TestAccuracy, Is.InRange(0.0, 1.0));
      Assert.AreEqual(0.5, p.LearningRate, 1e-6);
    }
    Assert.That(reports[2].Loss, Is.LessThan(reports[0].Loss));
  }

  [Test]
  public void BatchReportsWithProgressEvery() {
    var kinds = new List<ProgressKind>();
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(2, 1)) {
      trainer.ProgressChanged += (s, p) => kinds.Add(p.Kind);
      trainer.Fit(train, null, options).Dispose();
    }
    // Per epoch of 3 batches: reports after batches 1 and 2, then the epoch report (it replaces the last
    // batch report).
    Assert.AreEqual(6, kinds.Count);
    Assert.AreEqual(4, kinds.FindAll(k => k == ProgressKind.Batch).Count);
    Assert.AreEqual(ProgressKind.Epoch, kinds[2]);
    Assert.AreEqual(ProgressKind.Epoch, kinds[5]);
  }

  sealed class RecordingListener : ProgressListener {
    public readonly List<ulong> Epochs = new List<ulong>();
    public int ThreadId;
    public ulong StopAtEpoch;
    public override bool OnProgress(Progress progress) {
      ThreadId = Thread.CurrentThread.ManagedThreadId;
      Epochs.Add(progress.Epoch);
      // Collecting here must not free the director or the report.
      GC.Collect();
      GC.WaitForPendingFinalizers();
      return progress.Epoch == StopAtEpoch;
    }
  }

  [Test]
  public void ListenerSubclassReceivesReports() {
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(3, 0)) {
      var listener = new RecordingListener();
      using (var r = trainer.Fit(train, null, options, listener)) Assert.AreEqual(3UL, r.EpochsCompleted);
      CollectionAssert.AreEqual(new ulong[] { 1, 2, 3 }, listener.Epochs);
    }
  }

  /// Keeps every report it gets, and what each said during the call.
  sealed class KeepingListener : ProgressListener {
    public readonly List<Progress> Kept = new List<Progress>();
    public readonly List<Tuple<ulong, ulong, double>> Seen = new List<Tuple<ulong, ulong, double>>();
    public override bool OnProgress(Progress progress) {
      Kept.Add(progress);
      Seen.Add(Tuple.Create(progress.Epoch, progress.Samples, progress.Loss));
      return false;
    }
  }

  [Test]
  public void KeptReportsAreOwnedCopies() {
    var listener = new KeepingListener();
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(3, 0)) {
      trainer.Fit(train, null, options, listener).Dispose();
    }
    // Once Fit has returned, every kept report still reads what it said during the call (the library's
    // report lived on its stack: a proxy over it would read freed memory).
    Assert.AreEqual(3, listener.Kept.Count);
    for (int i = 0; i < 3; ++i) {
      Progress p = listener.Kept[i];
      Assert.AreEqual((ulong)(i + 1), p.Epoch);
      Assert.AreEqual(listener.Seen[i].Item1, p.Epoch);
      Assert.AreEqual(3UL, p.Epochs);
      Assert.AreEqual(96UL, p.Samples);
      Assert.AreEqual(listener.Seen[i].Item3, p.Loss);
      Assert.AreEqual(ProgressKind.Epoch, p.Kind);
    }
    // ... and is the caller's own: writing to one changes that copy only.
    listener.Kept[0].Epoch = 42;
    Assert.AreEqual(42UL, listener.Kept[0].Epoch);
    Assert.AreEqual(2UL, listener.Kept[1].Epoch);
    listener.Kept.ForEach(p => p.Dispose());
  }

  [Test]
  public void ListenerOrEventCanStopTraining() {
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(5, 0)) {
      var listener = new RecordingListener { StopAtEpoch = 2 };
      using (var r = trainer.Fit(train, null, options, listener)) {
        Assert.AreEqual(1, r.Stopped);
        Assert.AreEqual(2UL, r.EpochsCompleted);
      }
      trainer.ProgressChanged += (s, p) => p.Stop = true;
      using (var r = trainer.Fit(train, null, options)) {
        Assert.AreEqual(1, r.Stopped);
        Assert.AreEqual(1UL, r.EpochsCompleted);
      }
    }
  }

  [Test]
  public void FitOnAnotherThreadCallsBack() {
    int fitThread = 0, callbackThread = 0, reports = 0;
    ulong epochs = 0;
    Exception failure = null;
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(2, 1)) {
      trainer.ProgressChanged += (s, p) => {
        callbackThread = Thread.CurrentThread.ManagedThreadId;
        Interlocked.Increment(ref reports);
      };
      var worker = new Thread(() => {
        fitThread = Thread.CurrentThread.ManagedThreadId;
        try {
          using (var r = trainer.Fit(train, test, options)) epochs = r.EpochsCompleted;
        } catch (Exception e) {
          failure = e;
        }
      });
      worker.Start();
      Assert.IsTrue(worker.Join(TimeSpan.FromSeconds(60)), "Fit did not finish");
    }
    Assert.IsNull(failure);
    Assert.AreEqual(2UL, epochs);
    Assert.AreEqual(6, reports);
    Assert.AreNotEqual(Thread.CurrentThread.ManagedThreadId, fitThread);
    Assert.AreEqual(fitThread, callbackThread, "reports arrive on the thread that called Fit");
  }

  static void ThrowFromHandler(object sender, ProgressEventArgs p) {
    throw new InvalidOperationException("handler failed at epoch " + p.Epoch);
  }

  [Test]
  public void ThrowingHandlerStopsTrainingAndSurfaces() {
    int calls = 0;
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(5, 1)) {
      trainer.ProgressChanged += (s, p) => ++calls;
      trainer.ProgressChanged += ThrowFromHandler;
      var e = Assert.Throws<InvalidOperationException>(() => trainer.Fit(train, test, options));
      Assert.AreEqual("handler failed at epoch 1", e.Message);
      StringAssert.Contains("ThrowFromHandler", e.StackTrace, "the original stack trace is kept");
      Assert.AreEqual(1, calls, "training stopped at the first report");

      // The trainer is still usable, and a later Fit without the failing handler works.
      trainer.ProgressChanged -= ThrowFromHandler;
      using (var r = trainer.Fit(train, null, options)) Assert.AreEqual(5UL, r.EpochsCompleted);
    }
  }

  sealed class ThrowingListener : ProgressListener {
    public override bool OnProgress(Progress progress) {
      throw new ArgumentException("listener failed");
    }
  }

  [Test]
  public void ThrowingListenerOnAnotherThreadSurfacesThere() {
    Exception failure = null;
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(3, 0)) {
      var worker = new Thread(() => {
        try { trainer.Fit(train, null, options, new ThrowingListener()); } catch (Exception e) { failure = e; }
      });
      worker.Start();
      Assert.IsTrue(worker.Join(TimeSpan.FromSeconds(60)));
      Assert.IsInstanceOf<ArgumentException>(failure);
      Assert.AreEqual("listener failed", failure.Message);
      // No exception is left pending on either thread.
      using (var r = trainer.EvaluateDataset(test, 0)) Assert.AreEqual(32UL, r.Samples);
    }
  }

  [Test]
  public void DisposingWhatFitUsesFromAHandlerIsRefused() {
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(3, 0)) {
      EventHandler<ProgressEventArgs> disposeTrainer = (s, p) => trainer.Dispose();
      trainer.ProgressChanged += disposeTrainer;
      var e = Assert.Throws<InvalidOperationException>(() => trainer.Fit(train, test, options));
      Assert.AreEqual("the Trainer is in use by a running Fit and cannot be disposed now", e.Message);
      Assert.IsFalse(trainer.IsDisposed);
      trainer.ProgressChanged -= disposeTrainer;

      EventHandler<ProgressEventArgs> disposeData = (s, p) => test.Dispose();
      trainer.ProgressChanged += disposeData;
      e = Assert.Throws<InvalidOperationException>(() => trainer.Fit(train, test, options));
      Assert.AreEqual("the Dataset is in use by a running Fit and cannot be disposed now", e.Message);
      Assert.IsFalse(test.IsDisposed);
      trainer.ProgressChanged -= disposeData;

      // Once Fit has returned, both dispose normally.
      using (var r = trainer.Fit(train, test, options)) Assert.AreEqual(3UL, r.EpochsCompleted);
      using (var scratch = train.Subset(0, 8)) {
        trainer.Fit(scratch, null, options).Dispose();
        scratch.Dispose();
        Assert.IsTrue(scratch.IsDisposed);
      }
    }
  }

  [Test]
  public void LibraryErrorInsideHandlerSurfaces() {
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = Options(2, 0)) {
      trainer.ProgressChanged += (s, p) => { new Context(1000); };
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.Fit(train, null, options));
      StringAssert.Contains("cpu_devices 1000 exceeds 64", e.Message);
    }
  }
}

}
