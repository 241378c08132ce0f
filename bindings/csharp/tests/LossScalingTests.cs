// Precision.Fp16 and its dynamic loss scaling (trainer.h): the options and their defaults, skipped windows in
// step results, a fit's result and progress reports, and the refusal of a scale that is not a power of two.
using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class LossScalingTests {
  Context context;

  [TestFixtureSetUp]
  public void CreateContext() { context = new Context(2); }

  [TestFixtureTearDown]
  public void DisposeContext() { context.Dispose(); }

  static double Pow2(int exponent) { return Math.Pow(2, exponent); }

  /// The tiny MLP in Fp16 from the given initial scale (null: the default) and growth interval.
  Trainer MakeFp16Trainer(Model model, double? initialScale, ulong? growthInterval = null,
                          NonfinitePolicy nonfinite = NonfinitePolicy.Skip) {
    using (var options = new TrainerOptions()) {
      options.Seed = 3;
      options.Precision = Precision.Fp16;
      options.Nonfinite = nonfinite;
      if (initialScale.HasValue) options.InitialLossScale = initialScale.Value;
      if (growthInterval.HasValue) options.LossScaleGrowthInterval = growthInterval.Value;
      return new Trainer(context, model, options, null);
    }
  }

  /// From 2^40 the scaled gradient overflows float16: the first windows are skipped, not failed (even with
  /// NonfinitePolicy.Error), each with Applied 0, SkippedOverflow 1, OverflowSteps 1, 2, 3 ..., the scale
  /// halved to exactly 2^(40-n) and the parameters bitwise unchanged; then a step applies at the scale that
  /// fits, which stays.
  [Test]
  public void OverflowingWindowsAreSkippedAndHalveTheScale() {
    float[] x;
    int[] y;
    TestData.Make(16, out x, out y);
    using (var model = TestData.MakeModel())
    using (var trainer = MakeFp16Trainer(model, Pow2(40), nonfinite: NonfinitePolicy.Error)) {
      Assert.AreEqual(2UL, trainer.DeviceCount);
      int[] start = trainer.GetParameters().Select(TestData.Bits).ToArray();
      int skipped = 0;
      for (int i = 0; i < 64; ++i) {
        using (StepResult r = trainer.Step(x, y)) {
          if (r.Applied != 0) {
            Assert.AreEqual(0, r.SkippedOverflow);
            Assert.AreEqual(1UL, r.OptimizerSteps);
            Assert.AreEqual((ulong)skipped, r.OverflowSteps);
            Assert.AreEqual(Pow2(40 - skipped), r.LossScale);
            break;
          }
          ++skipped;
          string where = "skipped window " + skipped;
          Assert.AreEqual(1, r.SkippedOverflow, where);
          Assert.AreEqual(0, r.SkippedNonfinite, where);
          Assert.AreEqual((ulong)skipped, r.OverflowSteps, where);
          Assert.AreEqual(0UL, r.OptimizerSteps, where);
          Assert.AreEqual(Pow2(40 - skipped), r.LossScale, where);
          Assert.IsFalse(double.IsNaN(r.Loss) || double.IsInfinity(r.Loss), where + ": the forward pass's loss");
          CollectionAssert.AreEqual(start, trainer.GetParameters().Select(TestData.Bits).ToArray(), where);
        }
      }
      // The tiny MLP's per-logit gradient (3/4 at the start) times 2^20 / 16 fits float16; times 2^24 / 16 not.
      Assert.That(skipped, Is.InRange(16, 24), "windows skipped before a step applied");
      CollectionAssert.AreNotEqual(start, trainer.GetParameters().Select(TestData.Bits).ToArray(),
                                   "the applied step left the parameters unchanged");
      using (StepResult next = trainer.Step(x, y)) {
        Assert.AreEqual(1, next.Applied);
        Assert.AreEqual((ulong)skipped, next.OverflowSteps);
        Assert.AreEqual(Pow2(40 - skipped), next.LossScale);
      }
    }
  }

  /// steps loss scales: from, doubled after each interval steps (0: never).
  static double[] Growing(double from, int interval, int steps) {
    var scales = new double[steps];
    for (int i = 0; i < steps; ++i) scales[i] = interval == 0 ? from : from * Pow2((i + 1) / interval);
    return scales;
  }

  /// The defaults are GradScaler's (65536, doubling after 2000 applied windows in a row), also in the trainer;
  /// the properties reach the trainer: from 8 with an interval of 2 the scale doubles every second step, with
  /// 0 it never grows (not even after 2000 steps); Fp32 reports a scale of 1.
  [Test]
  public void OptionsHaveGradScalersDefaultsAndReachTheTrainer() {
    using (var options = new TrainerOptions()) {
      Assert.AreEqual(65536.0, options.InitialLossScale);
      Assert.AreEqual(2000UL, options.LossScaleGrowthInterval);
      options.InitialLossScale = 8;
      options.LossScaleGrowthInterval = 0;
      Assert.AreEqual(8.0, options.InitialLossScale);
      Assert.AreEqual(0UL, options.LossScaleGrowthInterval);
    }
    float[] x;
    int[] y;
    TestData.Make(16, out x, out y);
    using (var model = TestData.MakeModel())
    using (var byDefault = MakeFp16Trainer(model, null))
    using (var growing = MakeFp16Trainer(model, 8, 2))
    using (var fixedScale = MakeFp16Trainer(model, 8, 0))
    using (var fp32 = TestData.MakeTrainer(context)) {
      var cases = new[] {
        new { Trainer = byDefault, Scales = Growing(65536, 2000, 2001) },
        new { Trainer = growing, Scales = new double[] { 8, 16, 16, 32, 32 } },
        new { Trainer = fixedScale, Scales = Growing(8, 0, 2001) },
        new { Trainer = fp32, Scales = new double[] { 1, 1 } },
      };
      Assert.AreEqual(65536.0, cases[0].Scales[1998]);
      Assert.AreEqual(131072.0, cases[0].Scales[1999]);
      foreach (var c in cases) {
        var scales = new List<double>();
        for (int i = 0; i < c.Scales.Length; ++i) {
          using (StepResult r = c.Trainer.Step(x, y)) {
            Assert.AreEqual(1, r.Applied);
            Assert.AreEqual(0, r.SkippedOverflow);
            Assert.AreEqual(0UL, r.OverflowSteps);
            scales.Add(r.LossScale);
          }
        }
        CollectionAssert.AreEqual(c.Scales, scales);
      }
    }
  }

  /// A scale that is not a power of two from 1 to 2^64 is refused when the trainer is created, whatever the
  /// precision; 2^64 itself is taken.
  [Test]
  public void AScaleThatIsNotAPowerOfTwoIsRefused() {
    using (var model = TestData.MakeModel())
    using (var options = new TrainerOptions()) {
      foreach (Precision precision in new[] { Precision.Fp16, Precision.Fp32 }) {
        foreach (double bad in new[] { 3, 0.5, 0, Pow2(65), double.PositiveInfinity, double.NaN }) {
          options.Precision = precision;
          options.InitialLossScale = bad;
          var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, model, options, null),
                                                          precision + ", initial loss scale " + bad);
          Assert.AreEqual(Status.InvalidArgument, e.Status);
          Assert.AreEqual(1000, e.Category);
          StringAssert.Contains("initial loss scale", e.LibraryMessage);
        }
      }
      options.Precision = Precision.Fp16;
      options.InitialLossScale = Pow2(64);
      using (var trainer = new Trainer(context, model, options, null)) Assert.AreEqual(2UL, trainer.DeviceCount);
    }
  }

  /// A fit from 2^40 reports its skipped windows and the scale they leave, in its result and in its progress
  /// reports.
  [Test]
  public void FitReportsOverflowStepsAndTheScale() {
    var reported = new List<double>();
    using (var train = TestData.MakeDataset(64))
    using (var model = TestData.MakeModel())
    using (var trainer = MakeFp16Trainer(model, Pow2(40)))
    using (var options = new FitOptions()) {
      options.Epochs = 10;
      options.BatchSize = 16;
      trainer.ProgressChanged += (s, p) => reported.Add(p.LossScale);
      using (FitResult r = trainer.Fit(train, null, options)) {
        Assert.That(r.OverflowSteps, Is.InRange(16UL, 24UL));
        Assert.AreEqual(40UL, r.OptimizerSteps + r.OverflowSteps);
        Assert.AreEqual(0UL, r.NonfiniteSteps);
        Assert.AreEqual(Pow2(40 - (int)r.OverflowSteps), r.LossScale);
        Assert.AreEqual(10, reported.Count);
        Assert.AreEqual(r.LossScale, reported[9]);
        Assert.That(reported[0], Is.GreaterThan(reported[9]));
      }
    }
  }
}

}
