// Graph models through the binding: builders that name their inputs, named parameters and buffers, JSON model
// files, running statistics, safetensors, the batch norm mode, the precision, the built-in resnet18 and the
// builders' errors.
using System;
using System.IO;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class GraphTests {
  Context context;

  [TestFixtureSetUp]
  public void CreateContext() { context = new Context(2); }

  [TestFixtureTearDown]
  public void DisposeContext() { context.Dispose(); }

  /// The basic block of model.h's example: y = relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)), the shortcut a
  /// 1x1 projection + batch norm when the stride or the channels change.
  static TensorId BasicBlock(Model m, TensorId x, ulong channels, ulong stride, string name) {
    TensorId y = m.Conv2d(x, channels, 3, stride, 1, false, name + ".conv1");
    y = m.BatchNorm(y, 1e-5f, 0.1f, name + ".bn1");
    y = m.Activation(y, Activation.Relu, name + ".relu1");
    y = m.Conv2d(y, channels, 3, 1, 1, false, name + ".conv2");
    y = m.BatchNorm(y, 1e-5f, 0.1f, name + ".bn2");
    TensorId s = x;
    if (stride != 1 || (ulong)m.GetTensorShape(x)[0] != channels) {
      s = m.Conv2d(x, channels, 1, stride, 0, false, name + ".downsample.0");
      s = m.BatchNorm(s, name: name + ".downsample.1");
    }
    y = m.Add(y, s, name + ".add");
    return m.Activation(y, Activation.Relu, name + ".relu2");
  }

  /// 1x4x4 -> conv 8 -> bn -> relu -> block (8, identity shortcut) -> block (16, stride 2, projection) -> gap
  /// -> dense 4.
  static Model MakeResidualModel() {
    var m = new Model(1, TestData.Side, TestData.Side);
    TensorId x = m.Conv2d(m.Input, 8, 3, padding: 1, bias: false, name: "conv1");
    x = m.BatchNorm(x, name: "bn1");
    x = m.Activation(x, Activation.Relu, "relu");
    x = BasicBlock(m, x, 8, 1, "layer1.0");
    x = BasicBlock(m, x, 16, 2, "layer2.0");
    x = m.GlobalAvgPool(x, "avgpool");
    m.Dense(x, TestData.Classes, name: "fc");
    return m;
  }

  static readonly string[] ResidualParameterNames = {
    "conv1.weight", "bn1.weight", "bn1.bias",
    "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias",
    "layer1.0.conv2.weight", "layer1.0.bn2.weight", "layer1.0.bn2.bias",
    "layer2.0.conv1.weight", "layer2.0.bn1.weight", "layer2.0.bn1.bias",
    "layer2.0.conv2.weight", "layer2.0.bn2.weight", "layer2.0.bn2.bias",
    "layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight", "layer2.0.downsample.1.bias",
    "fc.weight", "fc.bias" };

  /// precision null: the options' default.
  Trainer MakeTrainer(Model model, ulong seed, BatchNormMode mode = BatchNormMode.Sync,
                      Precision? precision = null) {
    using (var options = new TrainerOptions())
    using (var optimizer = new OptimizerOptions()) {
      options.Seed = seed;
      options.BatchNorm = mode;
      if (precision.HasValue) options.Precision = precision.Value;
      optimizer.LearningRate = 0.1f;
      return new Trainer(context, model, options, optimizer);
    }
  }

  static void TrainSteps(Trainer trainer, int steps) {
    float[] x;
    int[] y;
    TestData.Make(32, out x, out y);
    for (int i = 0; i < steps; ++i) trainer.Step(x, y).Dispose();
  }

  /// |a - b| / |b| in the Euclidean norm.
  static double RelativeDifference(float[] a, float[] b) {
    Assert.AreEqual(b.Length, a.Length);
    double d = 0, n = 0;
    for (int i = 0; i < a.Length; ++i) {
      d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
      n += (double)b[i] * b[i];
    }
    return Math.Sqrt(d / n);
  }

  static void AssertBitwiseEqual(float[] expected, float[] actual, string what) {
    Assert.AreEqual(expected.Length, actual.Length, what + ": length");
    for (int i = 0; i < expected.Length; ++i)
      Assert.AreEqual(TestData.Bits(expected[i]), TestData.Bits(actual[i]), what + " " + i);
  }

  /// Offsets in order, back to back from 0, sizes the products of the shapes, covering count exactly.
  static void AssertCovers(System.Collections.Generic.IReadOnlyList<NamedTensor> tensors, ulong count) {
    ulong next = 0;
    foreach (NamedTensor t in tensors) {
      Assert.AreEqual(next, t.Offset, t.Name + " offset");
      Assert.AreEqual(t.Shape.Aggregate(1UL, (p, d) => p * (ulong)d), t.Size, t.Name + " size");
      next += t.Size;
    }
    Assert.AreEqual(count, next);
  }

  [Test]
  public void ResidualBlockHasTheExpectedTensors() {
    using (var m = MakeResidualModel()) {
      // Tensor 0 is the input; each node made one tensor, the last one is the output.
      Assert.AreEqual(TensorId.Input, m.Input);
      Assert.AreEqual(new int[] { 1, 4, 4 }, m.GetTensorShape(m.Input));
      Assert.AreEqual(22UL, m.TensorCount);
      Assert.AreEqual(21UL, m.LayerCount);
      Assert.AreEqual(new TensorId(21), m.Output);
      Assert.AreEqual(new int[] { 8, 4, 4 }, m.GetTensorShape(new TensorId(10)));   // layer1.0's output
      Assert.AreEqual(new int[] { 16, 2, 2 }, m.GetTensorShape(new TensorId(19)));  // layer2.0's output
      Assert.AreEqual(new int[] { 16 }, m.GetTensorShape(new TensorId(20)));        // global average pooling
      Assert.AreEqual(4UL, m.OutputSize);
      Assert.AreEqual(16UL, m.InputSize);

      var parameters = m.NamedParameters;
      Assert.AreEqual(ResidualParameterNames, parameters.Select(t => t.Name).ToArray());
      Assert.IsTrue(parameters.All(t => t.Kind == TensorKind.Parameter));
      Assert.AreEqual(new int[] { 8, 1, 3, 3 }, parameters[0].Shape);
      Assert.AreEqual(new int[] { 8 }, parameters[1].Shape);
      Assert.AreEqual(new int[] { 16, 8, 3, 3 }, parameters.Single(t => t.Name == "layer2.0.conv1.weight").Shape);
      Assert.AreEqual(new int[] { 16, 8, 1, 1 }, parameters.Single(t => t.Name == "layer2.0.downsample.0.weight").Shape);
      Assert.AreEqual(new int[] { 4, 16 }, parameters.Single(t => t.Name == "fc.weight").Shape);  // [out, in]
      Assert.AreEqual(new int[] { 4 }, parameters.Last().Shape);
      Assert.AreEqual(5020UL, m.ParameterCount);
      AssertCovers(parameters, m.ParameterCount);
      Assert.AreEqual("conv1.weight [8,1,3,3] @0", parameters[0].ToString());

      // Shape is a copy: changing it changes nothing.
      parameters[0].Shape[0] = 99;
      Assert.AreEqual(8, parameters[0].Shape[0]);

      var buffers = m.NamedBuffers;
      string[] norms = { "bn1", "layer1.0.bn1", "layer1.0.bn2", "layer2.0.bn1", "layer2.0.bn2", "layer2.0.downsample.1" };
      Assert.AreEqual(norms.SelectMany(n => new[] { n + ".running_mean", n + ".running_var" }).ToArray(),
                      buffers.Select(t => t.Name).ToArray());
      Assert.IsTrue(buffers.All(t => t.Kind == TensorKind.Buffer));
      Assert.AreEqual(new int[] { 16 }, buffers.Last().Shape);
      Assert.AreEqual(144UL, m.BufferCount);
      AssertCovers(buffers, m.BufferCount);
      Assert.AreEqual(buffers.Select(t => t.Name), m.GetNamedTensors(TensorKind.Buffer).Select(t => t.Name));

      // A model without batch norm has no buffers.
      using (var mlp = TestData.MakeModel()) {
        Assert.AreEqual(0UL, mlp.BufferCount);
        Assert.AreEqual(0, mlp.NamedBuffers.Count);
        Assert.AreEqual(new[] { "0.weight", "0.bias", "2.weight", "2.bias" }, mlp.NamedParameters.Select(t => t.Name).ToArray());
      }
    }
  }

  [Test]
  public void OtherBuildersAndTheOutput() {
    using (var m = new Model(2, 4, 4)) {
      TensorId a = m.Conv2d(m.Input, 3, 1);                // 3x4x4; node 0 (tensor 1), named "0"
      TensorId b = m.Pool(m.Input, PoolKind.Max, 1, 1);    // 2x4x4
      TensorId c = m.Concat(a, b, "cat2");
      Assert.AreEqual(new int[] { 5, 4, 4 }, m.GetTensorShape(c));
      TensorId d = m.Concat(a, b, a, "cat3");
      Assert.AreEqual(new int[] { 8, 4, 4 }, m.GetTensorShape(d));
      TensorId e = m.Flatten(m.Dropout(d, 0.25f), "flat");
      Assert.AreEqual(new int[] { 128 }, m.GetTensorShape(e));
      TensorId f = m.LayerNorm(m.Dense(e, 6, false, "hidden"), name: "ln");
      TensorId g = m.Dense(m.Activation(f, Activation.Gelu), 3, name: "head");
      Assert.AreEqual(g, m.Output);
      Assert.AreEqual(3UL, m.OutputSize);
      Assert.AreEqual(new[] { "0.weight", "0.bias", "hidden.weight", "ln.weight", "ln.bias", "head.weight", "head.bias" },
                      m.NamedParameters.Select(t => t.Name).ToArray());
      // The output may be moved to another tensor (here the 6 layer-normed features).
      m.Output = f;
      Assert.AreEqual(f, m.Output);
      Assert.AreEqual(6UL, m.OutputSize);
      // TensorId is a value.
      Assert.AreEqual(new TensorId(3), (TensorId)3UL);
      Assert.AreEqual(3UL, (ulong)c);
      Assert.IsTrue(c != d);
      Assert.AreEqual("tensor 3", c.ToString());
    }
  }

  [Test]
  public void JsonRoundTripTrainsTheSame() {
    using (var original = MakeResidualModel()) {
      string json = original.ToJson();
      StringAssert.Contains("\"format\": \"dptrain.model\"", json);
      StringAssert.Contains("\"layer2.0.downsample.0\"", json);
      using (var copy = Model.FromJson(json)) {
        Assert.AreEqual(original.Describe(), copy.Describe());
        Assert.AreEqual(json, copy.ToJson());
        Assert.AreEqual(original.ParameterCount, copy.ParameterCount);
        Assert.AreEqual(original.NamedParameters.Select(t => t.ToString()), copy.NamedParameters.Select(t => t.ToString()));
        Assert.AreEqual(original.NamedBuffers.Select(t => t.ToString()), copy.NamedBuffers.Select(t => t.ToString()));
        using (var a = MakeTrainer(original, 7))
        using (var b = MakeTrainer(copy, 7)) {
          Assert.AreEqual(2UL, a.DeviceCount);
          Assert.AreEqual(a.ParameterChecksum(), b.ParameterChecksum());
          TrainSteps(a, 2);
          TrainSteps(b, 2);
          Assert.AreEqual(2UL, a.StepCount());
          Assert.AreEqual(a.ParameterChecksum(), b.ParameterChecksum());
          AssertBitwiseEqual(a.GetParameters(), b.GetParameters(), "parameter");
          AssertBitwiseEqual(a.GetBuffers(), b.GetBuffers(), "buffer");
        }
      }
    }
  }

  [Test]
  public void SafetensorsRoundTripIsBitwise() {
    string path = Path.Combine(Path.GetTempPath(), "dptrain-cs-" + Guid.NewGuid().ToString("N") + ".safetensors");
    try {
      using (var m = MakeResidualModel())
      using (var trained = MakeTrainer(m, 7))
      using (var other = MakeTrainer(m, 8)) {
        TrainSteps(trained, 2);
        trained.SaveSafetensors(path);
        Assert.That(new FileInfo(path).Length, Is.GreaterThan(4L * (long)(m.ParameterCount + m.BufferCount)));
        Assert.AreNotEqual(trained.ParameterChecksum(), other.ParameterChecksum());

        other.LoadSafetensors(path);
        AssertBitwiseEqual(trained.GetParameters(), other.GetParameters(), "parameter");
        AssertBitwiseEqual(trained.GetParameters(), other.GetReplicaParameters(1), "replica 1 parameter");
        AssertBitwiseEqual(trained.GetBuffers(), other.GetBuffers(), "buffer");
        Assert.AreEqual(trained.ParameterChecksum(), other.ParameterChecksum());
        // Weights only: the loading trainer's counters are its own.
        Assert.AreEqual(0UL, other.StepCount());
      }
      // A file that does not fit the model (other names) is refused, naming the tensors.
      using (var mlp = TestData.MakeModel())
      using (var trainer = MakeTrainer(mlp, 1)) {
        var e = Assert.Throws<InvalidArgumentException>(() => trainer.LoadSafetensors(path));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
      }
    } finally {
      File.Delete(path);
    }
    using (var m = MakeResidualModel())
    using (var trainer = MakeTrainer(m, 7)) {
      var e = Assert.Throws<IOFormatException>(() => trainer.LoadSafetensors(path));  // deleted above
      Assert.AreEqual(Status.IO, e.Status);
    }
  }

  [Test]
  public void BuffersChangeWithAStepAndRoundTrip() {
    using (var m = MakeResidualModel())
    using (var trainer = MakeTrainer(m, 7)) {
      Assert.AreEqual(m.BufferCount, trainer.BufferCount);
      float[] initial = trainer.GetBuffers();
      Assert.AreEqual((int)m.BufferCount, initial.Length);
      // PyTorch's initial running statistics: mean 0, variance 1.
      foreach (NamedTensor t in m.NamedBuffers) {
        float expected = t.Name.EndsWith(".running_var", StringComparison.Ordinal) ? 1.0f : 0.0f;
        for (ulong i = 0; i < t.Size; ++i) Assert.AreEqual(expected, initial[t.Offset + i], t.Name);
      }

      TrainSteps(trainer, 1);
      float[] after = trainer.GetBuffers();
      foreach (NamedTensor t in m.NamedBuffers) {
        bool changed = false;
        for (ulong i = 0; i < t.Size; ++i) changed |= TestData.Bits(after[t.Offset + i]) != TestData.Bits(initial[t.Offset + i]);
        Assert.IsTrue(changed, t.Name + " did not change");
      }

      // SetBuffers sets every replica: GetBuffers reads them back bit for bit, the caller's-array overload too.
      var values = new float[after.Length];
      for (int i = 0; i < values.Length; ++i) values[i] = 0.5f + (float)Math.Cos(i * 0.7) * 0.25f;
      trainer.SetBuffers(values);
      AssertBitwiseEqual(values, trainer.GetBuffers(), "buffer");
      var into = new float[values.Length];
      trainer.GetBuffers(into);
      AssertBitwiseEqual(values, into, "buffer (caller's array)");

      var e = Assert.Throws<InvalidArgumentException>(() => trainer.SetBuffers(new float[3]));
      Assert.AreEqual(Status.SizeMismatch, e.Status);
    }
    using (var mlp = TestData.MakeModel())
    using (var trainer = MakeTrainer(mlp, 1)) {
      Assert.AreEqual(0UL, trainer.BufferCount);
      Assert.AreEqual(0, trainer.GetBuffers().Length);
    }
  }

  [Test]
  public void BatchNormModeOption() {
    using (var options = new TrainerOptions()) Assert.AreEqual(BatchNormMode.Sync, options.BatchNorm);
    using (var m = MakeResidualModel())
    using (var sync = MakeTrainer(m, 7, BatchNormMode.Sync))
    using (var perDevice = MakeTrainer(m, 7, BatchNormMode.PerDevice))
    using (var perDeviceAgain = MakeTrainer(m, 7, BatchNormMode.PerDevice)) {
      Assert.AreEqual(sync.ParameterChecksum(), perDevice.ParameterChecksum());
      TrainSteps(sync, 2);
      TrainSteps(perDevice, 2);
      TrainSteps(perDeviceAgain, 2);
      // Statistics over each device's half of the batch are not those of the whole batch ...
      Assert.AreNotEqual(sync.ParameterChecksum(), perDevice.ParameterChecksum());
      // ... and are deterministic.
      Assert.AreEqual(perDevice.ParameterChecksum(), perDeviceAgain.ParameterChecksum());
    }
  }

  const int BnChannels = 2, BnPixels = 3 * 3, BnSamples = 10;

  /// 2x3x3 -> batch norm "bn" on the input itself (its statistics are the data's) -> flatten -> dense 3.
  static Model MakeBatchNormFirstModel() {
    var m = new Model(BnChannels, 3, 3);
    m.Dense(m.Flatten(m.BatchNorm(m.Input, name: "bn"), "flatten"), 3, name: "fc");
    return m;
  }

  /// 10 samples, channel 0 in [1, 3.5] and channel 1 in [-4, 0] (every mean and variance well away from 0, so
  /// that a relative tolerance means something); labels s % 3.
  static void MakeBatchNormData(out float[] x, out int[] y) {
    x = new float[BnSamples * BnChannels * BnPixels];
    y = new int[BnSamples];
    for (int s = 0; s < BnSamples; ++s) {
      y[s] = s % 3;
      for (int p = 0; p < BnPixels; ++p) {
        x[(s * BnChannels + 0) * BnPixels + p] = 1 + ((s * 7 + p * 3) % 11) / 4.0f;
        x[(s * BnChannels + 1) * BnPixels + p] = -4 + ((s * 5 + p * 2 + 1) % 13) / 3.0f;
      }
    }
  }

  /// What recomputing leaves, in double: per channel, the average over the batches (the first sampleCount
  /// samples, 0 = all, in batches of batchSize, 0 = 256) of each batch's mean, then of its unbiased variance
  /// over samples and pixels, in the order of the buffers (running_mean [C], then running_var [C]).
  static double[] ExpectedBatchNormStatistics(float[] x, int batchSize, int sampleCount) {
    int samples = sampleCount == 0 || sampleCount > BnSamples ? BnSamples : sampleCount;
    int batch = batchSize == 0 ? 256 : batchSize;
    var expected = new double[2 * BnChannels];
    int batches = 0;
    for (int start = 0; start < samples; start += batch, ++batches) {
      int end = Math.Min(start + batch, samples);
      double n = (end - start) * BnPixels;
      for (int c = 0; c < BnChannels; ++c) {
        double sum = 0, squares = 0;
        for (int s = start; s < end; ++s)
          for (int p = 0; p < BnPixels; ++p) sum += x[(s * BnChannels + c) * BnPixels + p];
        double mean = sum / n;
        for (int s = start; s < end; ++s)
          for (int p = 0; p < BnPixels; ++p) {
            double d = x[(s * BnChannels + c) * BnPixels + p] - mean;
            squares += d * d;
          }
        expected[c] += mean;
        expected[BnChannels + c] += squares / (n - 1);
      }
    }
    for (int i = 0; i < expected.Length; ++i) expected[i] /= batches;
    return expected;
  }

  static void AssertBatchNormStatistics(Trainer trainer, float[] x, int batchSize, int sampleCount) {
    double[] expected = ExpectedBatchNormStatistics(x, batchSize, sampleCount);
    float[] actual = trainer.GetBuffers();
    Assert.AreEqual(expected.Length, actual.Length);
    for (int i = 0; i < expected.Length; ++i)
      Assert.AreEqual(expected[i], actual[i], 1e-5 * Math.Abs(expected[i]),
                      "batches of " + batchSize + ", " + sampleCount + " samples: buffer " + i);
  }

  /// RecomputeBatchNorm (PyTorch's update_bn) sets the running statistics of a batch norm on the input to the
  /// average of the batches' means and unbiased variances, on 2 CPU devices; the parameters and the step count
  /// do not move; bad input is refused and leaves the trainer usable.
  [Test]
  public void RecomputeBatchNormAveragesTheBatchesStatistics() {
    float[] x;
    int[] y;
    MakeBatchNormData(out x, out y);
    using (var m = MakeBatchNormFirstModel())
    using (var data = new Dataset(x, y, BnChannels, 3, 3, 3))
    using (var trainer = MakeTrainer(m, 3)) {
      Assert.AreEqual(new[] { "bn.running_mean", "bn.running_var" }, m.NamedBuffers.Select(t => t.Name).ToArray());
      Assert.AreEqual(new[] { 0UL, (ulong)BnChannels }, m.NamedBuffers.Select(t => t.Offset).ToArray());
      var first4 = new float[4 * BnChannels * BnPixels];
      Array.Copy(x, first4, first4.Length);
      trainer.Step(first4, new[] { 0, 1, 2, 0 }).Dispose();  // parameters and statistics not the initial ones
      float[] parameters = trainer.GetParameters();
      ulong steps = trainer.StepCount();

      // Batches of 4, 4 and 2; 4 and 2 of the first 6 (the sizes are not swapped); one of 256 = all; 3, 3, 3
      // and 1 of "more than the dataset holds" (one device's slice of the last batch is empty).
      foreach (int[] c in new[] { new[] { 4, 0 }, new[] { 4, 6 }, new[] { 0, 0 }, new[] { 3, 100 } }) {
        trainer.SetBuffers(new[] { 7f, 7f, 7f, 7f });  // no recomputation leaves these
        trainer.RecomputeBatchNorm(data, (ulong)c[0], (ulong)c[1]);
        AssertBatchNormStatistics(trainer, x, c[0], c[1]);
      }
      AssertBitwiseEqual(parameters, trainer.GetParameters(), "parameter");
      Assert.AreEqual(steps, trainer.StepCount());

      // Bad input is refused before anything changes. (An empty dataset cannot be made: the constructor and
      // Subset refuse 0 samples; a negative size is not a ulong.)
      trainer.RecomputeBatchNorm(data, 4, 0);
      float[] before = trainer.GetBuffers();
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.RecomputeBatchNorm(null, 4, 0));
      Assert.AreEqual(Status.NullPointer, e.Status);
      StringAssert.Contains("dpt_trainer_recompute_batch_norm: dataset is NULL", e.Message);
      using (var other = TestData.MakeDataset(8)) {  // 1x4x4 samples
        e = Assert.Throws<InvalidArgumentException>(() => trainer.RecomputeBatchNorm(other, 4, 0));
        Assert.AreEqual(Status.SizeMismatch, e.Status);
      }
      using (var tokens = Dataset.CreateTokens(new int[2 * BnChannels * BnPixels], new[] { 0, 1 }, 2,
                                               BnChannels * BnPixels, 3)) {
        e = Assert.Throws<InvalidArgumentException>(() => trainer.RecomputeBatchNorm(tokens, 4, 0));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
      }
      var disposed = new Dataset(x, y, BnChannels, 3, 3, 3);
      disposed.Dispose();
      Assert.Throws<ObjectDisposedException>(() => trainer.RecomputeBatchNorm(disposed, 4, 0));
      AssertBitwiseEqual(before, trainer.GetBuffers(), "buffer after a refused call");
      // ... and the trainer stays usable.
      trainer.SetBuffers(new[] { 7f, 7f, 7f, 7f });
      trainer.RecomputeBatchNorm(data, 4, 0);
      AssertBatchNormStatistics(trainer, x, 4, 0);
      trainer.Step(first4, new[] { 0, 1, 2, 0 }).Dispose();
    }
    // A model without batch norm: nothing to do, no error.
    using (var mlp = TestData.MakeModel())
    using (var data = TestData.MakeDataset(8))
    using (var trainer = MakeTrainer(mlp, 1))
      trainer.RecomputeBatchNorm(data, 4, 0);
    // A pipeline averages its micro-batches' statistics (each batch cut as a training step cuts it): 2 stages
    // with 2 micro-batches, over the first 8 samples in batches of 4, see micro-batches of 2, 2, 2 and 2, as
    // one device does in batches of 2.
    using (var m = MakeBatchNormFirstModel())
    using (var data = new Dataset(x, y, BnChannels, 3, 3, 3))
    using (var one = new Context(1))
    using (var options = new TrainerOptions { Seed = 3, PipelineStages = 2, MicroBatches = 2 })
    using (var plainOptions = new TrainerOptions { Seed = 3 })
    using (var pipeline = new Trainer(context, m, options, null))
    using (var plain = new Trainer(one, m, plainOptions, null)) {
      pipeline.SetBuffers(new[] { 7f, 7f, 7f, 7f });  // no recomputation leaves these
      pipeline.RecomputeBatchNorm(data, 4, 8);
      plain.RecomputeBatchNorm(data, 2, 8);
      float[] expected = plain.GetBuffers();
      float[] actual = pipeline.GetBuffers();
      Assert.AreEqual(expected.Length, actual.Length);
      for (int i = 0; i < expected.Length; ++i)
        Assert.AreEqual(expected[i], actual[i], 1e-6 * Math.Abs(expected[i]),
                        "pipeline, batches of 4 in 2 micro-batches vs one device's batches of 2: buffer " + i);
    }
  }

  /// The default is Fp32; Bf16 matrix products (the model's conv2d and dense) train on 2 devices to other
  /// parameters than float32's (not float32 under another name), within 2e-2 of them (relative, over the
  /// whole vector), and to the same bits on every run with the same seed; a value outside the enum is
  /// refused.
  [Test]
  public void PrecisionOption() {
    using (var options = new TrainerOptions()) Assert.AreEqual(Precision.Fp32, options.Precision);
    using (var m = MakeResidualModel())
    using (var byDefault = MakeTrainer(m, 5))
    using (var fp32 = MakeTrainer(m, 5, precision: Precision.Fp32))
    using (var bf16 = MakeTrainer(m, 5, precision: Precision.Bf16))
    using (var bf16Again = MakeTrainer(m, 5, precision: Precision.Bf16)) {
      Assert.AreEqual(2UL, bf16.DeviceCount);
      foreach (Trainer t in new[] { byDefault, fp32, bf16, bf16Again }) TrainSteps(t, 3);
      AssertBitwiseEqual(fp32.GetParameters(), byDefault.GetParameters(), "the default is Fp32");
      float[] single = fp32.GetParameters(), mixed = bf16.GetParameters();
      Assert.IsFalse(single.Select(TestData.Bits).SequenceEqual(mixed.Select(TestData.Bits)),
                     "Bf16 trains to float32's bits");
      double difference = RelativeDifference(mixed, single);
      Assert.LessOrEqual(difference, 2e-2, "Bf16 differs from float32 by " + difference + " relative");
      AssertBitwiseEqual(mixed, bf16Again.GetParameters(), "two Bf16 runs with the same seed");
    }
    using (var m = MakeResidualModel())
    using (var options = new TrainerOptions()) {
      foreach (int value in new[] { 3, -1 }) {
        options.Precision = (Precision)value;
        Assert.AreEqual((Precision)value, options.Precision);
        var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, m, options, null));
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("precision", e.LibraryMessage);
      }
    }
  }

  [Test]
  public void BuiltinResnet18() {
    using (var m = Model.Builtin("resnet18")) {
      Assert.AreEqual(11172810UL, m.ParameterCount);
      Assert.AreEqual(10UL, m.OutputSize);
      var parameters = m.NamedParameters;
      var buffers = m.NamedBuffers;
      AssertCovers(parameters, m.ParameterCount);
      AssertCovers(buffers, m.BufferCount);
      Assert.AreEqual("conv1.weight", parameters[0].Name);
      Assert.AreEqual(new int[] { 64, 1, 3, 3 }, parameters[0].Shape);
      Assert.AreEqual(new int[] { 10, 512 }, parameters.Single(t => t.Name == "fc.weight").Shape);
      NamedTensor mean = buffers.Single(t => t.Name == "layer2.0.downsample.1.running_mean");
      Assert.AreEqual(new int[] { 128 }, mean.Shape);
      Assert.AreEqual(TensorKind.Buffer, mean.Kind);
      using (var copy = Model.FromJson(m.ToJson())) {
        Assert.AreEqual(m.Describe(), copy.Describe());
        Assert.AreEqual(buffers.Select(t => t.ToString()), copy.NamedBuffers.Select(t => t.ToString()));
      }
    }
  }

  [Test]
  public void BadTensorIdsAndNamesAreInvalidArguments() {
    using (var m = MakeResidualModel()) {
      ulong tensors = m.TensorCount;
      string json = m.ToJson();
      var missing = new TensorId(tensors);
      var e = Assert.Throws<InvalidArgumentException>(() => m.Conv2d(missing, 4, 3));
      Assert.AreEqual(Status.InvalidArgument, e.Status);
      Assert.AreEqual(1000, e.Category);
      StringAssert.Contains("dpt_model_conv2d", e.LibraryMessage);
      Assert.AreEqual(Status.InvalidArgument,
                      Assert.Throws<InvalidArgumentException>(() => m.Add(m.Output, new TensorId(99))).Status);
      Assert.AreEqual(Status.InvalidArgument,
                      Assert.Throws<InvalidArgumentException>(() => m.GetTensorShape(new TensorId(ulong.MaxValue))).Status);
      Assert.AreEqual(Status.InvalidArgument,
                      Assert.Throws<InvalidArgumentException>(() => m.Output = missing).Status);
      // A taken name; shapes an op does not take; a rate out of range.
      Assert.AreEqual(Status.InvalidArgument,
                      Assert.Throws<InvalidArgumentException>(() => m.Flatten(m.Output, "fc")).Status);
      Assert.AreEqual(Status.InvalidArgument,
                      Assert.Throws<InvalidArgumentException>(() => m.Add(new TensorId(10), new TensorId(19))).Status);
      Assert.AreEqual(Status.OutOfRange,
                      Assert.Throws<InvalidArgumentException>(() => m.Dropout(m.Output, 1.5f)).Status);
      // A failed call leaves the model unchanged.
      Assert.AreEqual(tensors, m.TensorCount);
      Assert.AreEqual(json, m.ToJson());
    }
    var f = Assert.Throws<IOFormatException>(() => Model.FromJson("{\"format\": \"dptrain.model\""));
    Assert.AreEqual(Status.Format, f.Status);
    Assert.Throws<ObjectDisposedException>(() => {
      var m = MakeResidualModel();
      m.Dispose();
      m.Conv2d(m.Input, 4, 3);
    });
  }
}

}
