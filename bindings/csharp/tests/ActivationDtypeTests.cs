// TrainerOptions.ActivationDtype (trainer.h activation_dtype): activations kept as 16-bit copies from forward
// to backward. Its default, the replicas it keeps bitwise identical, how far it moves the parameters of a
// batch-norm model from float32 activations, and the refusal of a value outside the enum.
using System;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class ActivationDtypeTests {
  const int Side = 12;                // samples are 1 x 12 x 12
  const int SampleSize = Side * Side;
  const int Classes = 3;
  const int Samples = 16;             // 8 per device

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

  /// |a - b| / |b| in the Euclidean norm.
  static double RelativeDifference(float[] a, float[] b) {
    Assert.AreEqual(b.Length, a.Length);
    double d = 0, n = 0;
    for (int i = 0; i < a.Length; ++i) {
      d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
      n += (double)b[i] * b[i];
    }
    Assert.Greater(n, 0.0, "the reference is zero");
    return Math.Sqrt(d / n);
  }

  /// A 3x3 convolution to 4 channels (no bias) and a batch norm.
  static TensorId ConvBn(Model m, TensorId x) {
    return m.BatchNorm(m.Conv2d(x, 4, 3, padding: 1, bias: false));
  }

  /// 1x12x12 -> conv 4 -> bn -> relu -> 3 blocks relu(x + bn(conv(relu(bn(conv(x)))))) -> gap -> dense 3. Its
  /// 24 activations of 4x12x12 are nearly all of its activation bytes, so the store keeps them as 16-bit
  /// copies (they save more than the float32 working slots cost), and batch norm's backward reads them.
  static Model MakeResidualModel() {
    var m = new Model(1, Side, Side);
    TensorId x = m.Activation(ConvBn(m, m.Input), Activation.Relu);
    for (int block = 0; block < 3; ++block)
      x = m.Activation(m.Add(x, ConvBn(m, m.Activation(ConvBn(m, x), Activation.Relu))), Activation.Relu);
    m.Dense(m.GlobalAvgPool(x), Classes);
    return m;
  }

  /// The residual model on 2 CPU devices, seed 5, Bf16 matrix products and the given activation dtype (null:
  /// the options' default), after 2 steps: its start, then the parameters of replica 0 and of replica 1.
  float[][] Train(Model model, Precision? activations) {
    float[] x;
    int[] y;
    TestData.MakeRipple(Side, Samples, out x, out y);
    using (var options = new TrainerOptions()) {
      options.Seed = 5;
      options.Precision = Precision.Bf16;
      if (activations.HasValue) {
        options.ActivationDtype = activations.Value;
        Assert.AreEqual(activations.Value, options.ActivationDtype);
      }
      using (var trainer = new Trainer(context, model, options, null)) {
        Assert.AreEqual(2UL, trainer.DeviceCount);
        float[] start = trainer.GetParameters();
        for (int i = 0; i < 2; ++i)
          using (StepResult r = trainer.Step(x, y))
            Assert.AreEqual(1, r.Applied, activations + ", step " + (i + 1));
        return new[] { start, trainer.GetReplicaParameters(0), trainer.GetReplicaParameters(1) };
      }
    }
  }

  /// The default is Fp32 (and trains to the bits of an explicit Fp32). With Bf16 (and Fp16) activations the
  /// two replicas stay bitwise identical after 2 steps and end on other bits than with float32 activations
  /// (batch norm's backward reads the rounded copies: the option reaches the library, and Bf16 is not Fp16),
  /// within 1e-2 of them (relative, Euclidean norm over the whole vector).
  [Test]
  public void SixteenBitActivationsKeepReplicasIdenticalAndCloseToFloat32() {
    using (var options = new TrainerOptions()) Assert.AreEqual(Precision.Fp32, options.ActivationDtype);
    using (var model = MakeResidualModel()) {
      float[][] byDefault = Train(model, null);
      float[][] fp32 = Train(model, Precision.Fp32);
      float[][] bf16 = Train(model, Precision.Bf16);
      float[][] fp16 = Train(model, Precision.Fp16);
      AssertBitwiseEqual(fp32[0], byDefault[0], "the same seed starts alike");
      AssertBitwiseEqual(fp32[0], bf16[0], "the same seed starts alike");
      AssertBitwiseEqual(fp32[0], fp16[0], "the same seed starts alike");
      AssertBitwiseEqual(fp32[1], byDefault[1], "the default trains as Fp32");
      AssertBitwiseEqual(fp32[1], fp32[2], "float32 activations: replica 1 against replica 0");
      AssertBitwiseEqual(bf16[1], bf16[2], "Bf16 activations: replica 1 against replica 0");
      AssertBitwiseEqual(fp16[1], fp16[2], "Fp16 activations: replica 1 against replica 0");
      Assert.IsFalse(BitwiseEqual(fp32[0], fp32[1]), "2 steps left the parameters unchanged");
      Assert.IsFalse(BitwiseEqual(fp32[1], bf16[1]), "Bf16 activations train to float32's bits");
      Assert.IsFalse(BitwiseEqual(fp32[1], fp16[1]), "Fp16 activations train to float32's bits");
      Assert.IsFalse(BitwiseEqual(bf16[1], fp16[1]), "Bf16 and Fp16 activations train to the same bits");
      double bf16Difference = RelativeDifference(bf16[1], fp32[1]);
      Assert.LessOrEqual(bf16Difference, 1e-2, "Bf16 activations differ by " + bf16Difference + " relative");
      double fp16Difference = RelativeDifference(fp16[1], fp32[1]);
      Assert.LessOrEqual(fp16Difference, 1e-2, "Fp16 activations differ by " + fp16Difference + " relative");
    }
  }

  /// A value outside the enum is refused when the trainer is created: InvalidArgumentException, naming the
  /// option.
  [Test]
  public void AnUnknownDtypeIsRefused() {
    using (var model = TestData.MakeModel())
    using (var options = new TrainerOptions()) {
      foreach (int value in new[] { 3, -1 }) {
        options.ActivationDtype = (Precision)value;
        Assert.AreEqual((Precision)value, options.ActivationDtype);
        var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, model, options, null),
                                                        "activation dtype " + value);
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        Assert.AreEqual(1000, e.Category);
        StringAssert.Contains("activation_dtype " + value, e.LibraryMessage);
      }
      options.ActivationDtype = Precision.Bf16;
      using (var trainer = new Trainer(context, model, options, null)) Assert.AreEqual(2UL, trainer.DeviceCount);
    }
  }
}

}
