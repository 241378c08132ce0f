// TrainerOptions.AllreduceDtype (trainer.h allreduce_dtype): the 16-bit gradient all-reduce. Its default, the
// replicas it keeps bitwise identical, how far it moves the parameters from the float32 wire, and the refusal
// of a value outside the enum.
using System;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class AllreduceDtypeTests {
  Context context;

  [TestFixtureSetUp]
  public void CreateContext() { context = new Context(2); }

  [TestFixtureTearDown]
  public void DisposeContext() { context.Dispose(); }

  static void AssertBitwiseEqual(float[] expected, float[] actual, string what) {
    Assert.AreEqual(expected.Length, actual.Length, what + ": length");
    for (int i = 0; i < expected.Length; ++i)
      Assert.AreEqual(TestData.Bits(expected[i]), TestData.Bits(actual[i]), what + ", element " + i);
  }

  static bool BitwiseEqual(float[] a, float[] b) {
    return a.Select(TestData.Bits).SequenceEqual(b.Select(TestData.Bits));
  }

  /// |(a - start) - (b - start)| / |b - start| in the Euclidean norm: how far a's movement is from b's.
  static double RelativeMovementDifference(float[] a, float[] b, float[] start) {
    Assert.AreEqual(start.Length, a.Length);
    Assert.AreEqual(start.Length, b.Length);
    double d = 0, n = 0;
    for (int i = 0; i < start.Length; ++i) {
      double moveA = (double)a[i] - start[i], moveB = (double)b[i] - start[i];
      d += (moveA - moveB) * (moveA - moveB);
      n += moveB * moveB;
    }
    Assert.Greater(n, 0.0, "the reference did not move");
    return Math.Sqrt(d / n);
  }

  /// The tiny MLP on 2 CPU devices, seed 5, the given all-reduce dtype, after 3 steps of 16 samples: its
  /// start, then the parameters of replica 0 and of replica 1.
  float[][] Train(Model model, Precision wire) {
    float[] x;
    int[] y;
    TestData.Make(16, out x, out y);  // 8 samples per device
    using (var options = new TrainerOptions()) {
      options.Seed = 5;
      options.AllreduceDtype = wire;
      Assert.AreEqual(wire, options.AllreduceDtype);
      using (var trainer = new Trainer(context, model, options, null)) {
        Assert.AreEqual(2UL, trainer.DeviceCount);
        float[] start = trainer.GetParameters();
        for (int i = 0; i < 3; ++i)
          using (StepResult r = trainer.Step(x, y)) Assert.AreEqual(1, r.Applied, wire + ", step " + (i + 1));
        return new[] { start, trainer.GetReplicaParameters(0), trainer.GetReplicaParameters(1) };
      }
    }
  }

  /// The default is Fp32. Over a Bf16 (and an Fp16) wire the two replicas stay bitwise identical after 3
  /// steps, and end on other bits than the float32 wire's (so the option reaches the library, and Bf16 is
  /// not Fp16), while their movement from the start stays within 2e-2 of the float32 wire's (relative,
  /// Euclidean norm over the whole vector), Bf16's further than Fp16's.
  [Test]
  public void A16BitWireKeepsReplicasIdenticalAndCloseToFloat32() {
    using (var options = new TrainerOptions()) Assert.AreEqual(Precision.Fp32, options.AllreduceDtype);
    using (var model = TestData.MakeModel()) {
      float[][] fp32 = Train(model, Precision.Fp32);
      float[][] bf16 = Train(model, Precision.Bf16);
      float[][] fp16 = Train(model, Precision.Fp16);
      AssertBitwiseEqual(fp32[0], bf16[0], "the same seed starts alike");
      AssertBitwiseEqual(fp32[0], fp16[0], "the same seed starts alike");
      AssertBitwiseEqual(fp32[1], fp32[2], "float32 wire: replica 1 against replica 0");
      AssertBitwiseEqual(bf16[1], bf16[2], "Bf16 wire: replica 1 against replica 0");
      AssertBitwiseEqual(fp16[1], fp16[2], "Fp16 wire: replica 1 against replica 0");
      Assert.IsFalse(BitwiseEqual(fp32[0], fp32[1]), "3 steps left the parameters unchanged");
      Assert.IsFalse(BitwiseEqual(fp32[1], bf16[1]), "the Bf16 wire trains to the float32 wire's bits");
      Assert.IsFalse(BitwiseEqual(fp32[1], fp16[1]), "the Fp16 wire trains to the float32 wire's bits");
      Assert.IsFalse(BitwiseEqual(bf16[1], fp16[1]), "the Bf16 and Fp16 wires train to the same bits");
      double bf16Difference = RelativeMovementDifference(bf16[1], fp32[1], fp32[0]);
      Assert.LessOrEqual(bf16Difference, 2e-2, "the Bf16 wire's movement differs by " + bf16Difference + " relative");
      double fp16Difference = RelativeMovementDifference(fp16[1], fp32[1], fp32[0]);
      Assert.LessOrEqual(fp16Difference, 2e-2, "the Fp16 wire's movement differs by " + fp16Difference + " relative");
      // bfloat16 keeps 8 significant bits, float16 11: the Bf16 wire strays further (about 8 times here).
      Assert.Greater(bf16Difference, fp16Difference, "the Bf16 wire strays less than the Fp16 wire");
    }
  }

  /// A value outside the enum is refused when the trainer is created: InvalidArgumentException, naming the
  /// option.
  [Test]
  public void AnUnknownDtypeIsRefused() {
    using (var model = TestData.MakeModel())
    using (var options = new TrainerOptions()) {
      foreach (int value in new[] { 3, -1 }) {
        options.AllreduceDtype = (Precision)value;
        Assert.AreEqual((Precision)value, options.AllreduceDtype);
        var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, model, options, null),
                                                        "all-reduce dtype " + value);
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        Assert.AreEqual(1000, e.Category);
        StringAssert.Contains("allreduce_dtype " + value, e.LibraryMessage);
      }
      options.AllreduceDtype = Precision.Bf16;
      using (var trainer = new Trainer(context, model, options, null)) Assert.AreEqual(2UL, trainer.DeviceCount);
    }
  }
}

}
