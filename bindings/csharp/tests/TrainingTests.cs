// Training through the binding: steps reduce the loss, parameters round-trip bit for bit, replicas agree.
using System;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class TrainingTests {
  Context context;

  [TestFixtureSetUp]
  public void CreateContext() { context = new Context(2); }

  [TestFixtureTearDown]
  public void DisposeContext() { context.Dispose(); }

  [Test]
  public void StepsReduceLoss() {
    float[] x;
    int[] y;
    TestData.Make(64, out x, out y);
    using (var trainer = TestData.MakeTrainer(context)) {
      double first = 0, last = 0;
      for (int i = 0; i < 40; ++i) {
        using (StepResult r = trainer.Step(x, y)) {
          Assert.AreEqual(64UL, r.Samples);
          Assert.AreEqual(1, r.Applied);
          Assert.AreEqual((ulong)(i + 1), r.OptimizerSteps);
          Assert.AreEqual(0.5, r.LearningRate, 1e-6);
          Assert.That(r.TotalSeconds, Is.GreaterThan(0.0));
          if (i == 0) first = r.Loss;
          last = r.Loss;
        }
      }
      // Four classes: the untrained loss is about ln 4; the problem is easy to learn.
      Assert.AreEqual(Math.Log(4), first, 0.1);
      Assert.That(last, Is.LessThan(first * 0.25), "loss went from " + first + " to " + last);
      using (EvalResult e = trainer.Evaluate(x, y)) {
        Assert.AreEqual(1.0, e.Accuracy);
        Assert.That(e.Loss, Is.LessThan(first * 0.25));
      }
    }
  }

  [Test]
  public void ParametersRoundTripBitwise() {
    using (var trainer = TestData.MakeTrainer(context)) {
      float[] original = trainer.GetParameters();
      Assert.AreEqual((int)trainer.ParameterCount, original.Length);
      string originalSum = trainer.ParameterChecksum();

      // Values that a lossy path would change: negative zero, subnormals, extremes, and many distinct bits.
      var values = new float[original.Length];
      for (int i = 0; i < values.Length; ++i) values[i] = (float)Math.Sin(i * 0.37) * (1 + i % 7) / 3;
      values[0] = -0.0f;
      values[1] = 1e-40f;
      values[2] = float.MaxValue;
      values[3] = float.Epsilon;
      values[4] = -float.MaxValue;
      trainer.SetParameters(values);

      float[] back = trainer.GetParameters();
      float[] replica = trainer.GetReplicaParameters(1);
      for (int i = 0; i < values.Length; ++i) {
        Assert.AreEqual(TestData.Bits(values[i]), TestData.Bits(back[i]), "parameter " + i);
        Assert.AreEqual(TestData.Bits(values[i]), TestData.Bits(replica[i]), "replica 1, parameter " + i);
      }
      Assert.AreNotEqual(originalSum, trainer.ParameterChecksum());

      trainer.SetParameters(original);
      Assert.AreEqual(originalSum, trainer.ParameterChecksum());
      // The caller's buffer overload writes in place.
      var buffer = new float[original.Length];
      trainer.GetParameters(buffer);
      Assert.IsTrue(buffer.Select(TestData.Bits).SequenceEqual(original.Select(TestData.Bits)));
    }
  }

  [Test]
  public void ChecksumIsFnv1aOfTheParameterBytes() {
    using (var trainer = TestData.MakeTrainer(context)) {
      ulong hash = 0xcbf29ce484222325UL;
      foreach (float p in trainer.GetParameters()) {
        foreach (byte b in BitConverter.GetBytes(p)) {
          hash ^= b;
          hash *= 0x100000001b3UL;
        }
      }
      Assert.AreEqual(hash.ToString("x16"), trainer.ParameterChecksum());
    }
  }

  [Test]
  public void ReplicasStayIdenticalAndRunsRepeat() {
    float[] x;
    int[] y;
    TestData.Make(50, out x, out y);  // 25 samples per device
    string[] sums = new string[2];
    for (int run = 0; run < 2; ++run) {
      using (var trainer = TestData.MakeTrainer(context, seed: 7)) {
        for (int i = 0; i < 5; ++i) trainer.Step(x, y).Dispose();
        float[] r0 = trainer.GetReplicaParameters(0);
        float[] r1 = trainer.GetReplicaParameters(1);
        Assert.IsTrue(r0.Select(TestData.Bits).SequenceEqual(r1.Select(TestData.Bits)), "replicas differ");
        sums[run] = trainer.ParameterChecksum();
      }
    }
    Assert.AreEqual(sums[0], sums[1], "same seed, same steps, different parameters");
    using (var other = TestData.MakeTrainer(context, seed: 8))
      Assert.AreNotEqual(sums[0], other.ParameterChecksum());
  }

  [Test]
  public void ExplicitDevicesAndWeightedSplit() {
    float[] x;
    int[] y;
    TestData.Make(40, out x, out y);
    using (var model = TestData.MakeModel())
    using (var options = new TrainerOptions()) {
      options.Split = SplitPolicy.Weighted;
      using (var trainer = new Trainer(context, model, options, null, new ulong[] { 1, 0 }, new float[] { 3, 1 })) {
        Assert.AreEqual(2UL, trainer.DeviceCount);
        using (var r = trainer.Step(x, y)) Assert.AreEqual(40UL, r.Samples);
      }
      using (var single = new Trainer(context, model, null, null, new ulong[] { 1 }, new float[0]))
        Assert.AreEqual(1UL, single.DeviceCount);
    }
  }

  [Test]
  public void FitLearnsAndEvaluates() {
    using (var train = TestData.MakeDataset(256))
    using (var test = train.Subset(0, 64))
    using (var trainer = TestData.MakeTrainer(context))
    using (var options = new FitOptions()) {
      double before;
      using (var e = trainer.EvaluateDataset(test, 0)) before = e.Loss;
      options.Epochs = 4;
      options.BatchSize = 32;
      using (FitResult r = trainer.Fit(train, test, options)) {
        Assert.AreEqual(4UL, r.EpochsCompleted);
        Assert.AreEqual(0, r.Stopped);
        Assert.AreEqual(1, r.HasTest);
        Assert.AreEqual(32UL, r.OptimizerSteps);
        Assert.That(r.TestLoss, Is.LessThan(before * 0.25));
        Assert.AreEqual(1.0, r.TestAccuracy);
      }
    }
  }

  [Test]
  public void PredictAndCopyBatch() {
    using (var data = TestData.MakeDataset(16))
    using (var trainer = TestData.MakeTrainer(context)) {
      float[] x = new float[16 * TestData.SampleSize];
      int[] y = new int[16];
      data.CopyBatch(0, 16, x, y);
      float[] expectedX;
      int[] expectedY;
      TestData.Make(16, out expectedX, out expectedY);
      Assert.IsTrue(x.Select(TestData.Bits).SequenceEqual(expectedX.Select(TestData.Bits)));
      CollectionAssert.AreEqual(expectedY, y);

      using (var options = new FitOptions()) {
        options.Epochs = 30;
        options.BatchSize = 16;
        trainer.Fit(data, null, options).Dispose();
      }
      float[] logits = trainer.Predict(x, 16, TestData.Classes);
      Assert.AreEqual(16 * TestData.Classes, logits.Length);
      for (int s = 0; s < 16; ++s) {
        int best = 0;
        for (int c = 1; c < TestData.Classes; ++c)
          if (logits[s * TestData.Classes + c] > logits[s * TestData.Classes + best]) best = c;
        Assert.AreEqual(y[s], best, "sample " + s);
      }
    }
  }
}

}
