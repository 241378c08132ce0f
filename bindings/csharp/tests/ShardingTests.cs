// TrainerOptions.Shard (trainer.h shard, ZeRO stages 1, 2 and 3) and Trainer.GetReplicaMemory
// (dpt_trainer_replica_memory): the default, the bits of a sharded optimizer, of sharded gradients and of sharded
// parameters against an unsharded run, each device's part of AdamW's state, of the gradient and of the
// parameters, sharded gradients and parameters with tied parameters (the unsharded bits), and the refusal of a
// device out of range and of a mode outside the enum.
using System;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class ShardingTests {
  const int Devices = 3;
  const int Side = 8;                 // samples are 1 x 8 x 8
  const int SampleSize = Side * Side;
  const int Classes = 3;
  const int Samples = 24;             // 8 per device
  /// 64 -> 128 -> 3: three norm blocks of 4096 parameters, so each of the 3 devices owns one range.
  const ulong Parameters = SampleSize * 128 + 128 + 128 * Classes + Classes;
  /// Hidden layers of 64 units in MakeDeepMlp: alike, so that small buckets hold about one layer each.
  const int DeepLayers = 6;
  const ulong DeepParameters = SampleSize * 64 + 64 + (DeepLayers - 1) * (64 * 64 + 64) + 64 * Classes + Classes;
  /// Gradients' and Parameters' runs use buckets of 4096 bytes (whole layers, each at least this size).
  const ulong BucketBytes = 4096;

  Context context;

  [TestFixtureSetUp]
  public void CreateContext() { context = new Context(Devices); }

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

  /// 1x8x8 -> 6 x (dense 64 -> relu) -> dense 3: 25155 parameters, six buckets of 4096 bytes (the head's 195
  /// parameters join the last hidden layer's bucket).
  static Model MakeDeepMlp() {
    var model = new Model(1, Side, Side);
    for (int i = 0; i < DeepLayers; ++i) {
      model.AddDense(64);
      model.AddActivation(Activation.Relu);
    }
    model.AddDense(Classes);
    return model;
  }

  /// What one run leaves: its start, every replica's parameters, the checksum, every replica's memory and an
  /// evaluation of the batch after the steps.
  sealed class Run {
    public float[] Start;
    public float[][] Replicas = new float[Devices][];
    public string Checksum;
    public ReplicaMemory[] Memory = new ReplicaMemory[Devices];
    public double Loss;
    public double Accuracy;
  }

  /// The model on 3 CPU devices, seed 7, AdamW (decoupled weight decay, gradient clipping: each device clips with
  /// the blocked norm), 3 steps on one batch, with the given shard mode and bucket size (0: the default), then an
  /// evaluation of the batch.
  Run Train(Model model, ShardMode shard, ulong bucketBytes = 0) {
    float[] x;
    int[] y;
    TestData.MakeRipple(Side, Samples, out x, out y);
    using (var options = new TrainerOptions())
    using (var optimizer = new OptimizerOptions()) {
      options.Seed = 7;
      options.Shard = shard;
      Assert.AreEqual(shard, options.Shard);
      if (bucketBytes != 0) options.BucketBytes = bucketBytes;
      optimizer.Kind = OptimizerKind.AdamW;
      optimizer.LearningRate = 0.01f;
      optimizer.WeightDecay = 0.01f;
      optimizer.ClipNorm = 0.5f;
      using (var trainer = new Trainer(context, model, options, optimizer)) {
        Assert.AreEqual((ulong)Devices, trainer.DeviceCount);
        Assert.AreEqual(model.ParameterCount, trainer.ParameterCount);
        var run = new Run { Start = trainer.GetParameters() };
        for (int i = 0; i < 3; ++i)
          using (StepResult r = trainer.Step(x, y))
            Assert.AreEqual(1, r.Applied, shard + ", step " + (i + 1));
        for (int d = 0; d < Devices; ++d) {
          run.Replicas[d] = trainer.GetReplicaParameters((ulong)d);
          run.Memory[d] = trainer.GetReplicaMemory((ulong)d);
        }
        run.Checksum = trainer.ParameterChecksum();
        using (EvalResult e = trainer.Evaluate(x, y)) {
          Assert.AreEqual((ulong)Samples, e.Samples, shard + ": evaluated samples");
          run.Loss = e.Loss;
          run.Accuracy = e.Accuracy;
        }
        return run;
      }
    }
  }

  /// Parameters (and, unless the gradient is sharded, gradients) are float32 (4 bytes a parameter), no buffers,
  /// and the total is the sum.
  static void AssertParts(ReplicaMemory m, ulong parameters, bool wholeGradient, string what) {
    Assert.AreEqual(4 * parameters, m.Parameters, what + ": parameters");
    if (wholeGradient) Assert.AreEqual(4 * parameters, m.Gradients, what + ": gradients");
    Assert.AreEqual(0UL, m.Buffers, what + ": buffers (no batch norm)");
    Assert.Greater(m.Activations, 0UL, what + ": activations");
    Assert.AreEqual(m.Parameters + m.Gradients + m.OptimizerState + m.Buffers + m.Activations, m.Total,
                    what + ": total");
  }

  /// The default is None. Optimizer trains to the very bits of None (every replica, and the checksum), while
  /// each device keeps a part of AdamW's state (8 bytes per parameter): the parts add up to the state of one
  /// unsharded replica, each smaller than it.
  [Test]
  public void ShardingTheOptimizerKeepsTheBitsAndSplitsTheState() {
    using (var options = new TrainerOptions()) Assert.AreEqual(ShardMode.None, options.Shard);
    using (var model = TestData.MakeRippleMlp(Side)) {
      Run none = Train(model, ShardMode.None);
      Run sharded = Train(model, ShardMode.Optimizer);
      AssertBitwiseEqual(none.Start, sharded.Start, "the same seed starts alike");
      Assert.IsFalse(BitwiseEqual(none.Start, none.Replicas[0]), "3 steps left the parameters unchanged");
      for (int d = 0; d < Devices; ++d) {
        AssertBitwiseEqual(none.Replicas[0], none.Replicas[d], "None: replica " + d + " against replica 0");
        AssertBitwiseEqual(none.Replicas[d], sharded.Replicas[d], "Optimizer against None, replica " + d);
      }
      Assert.AreEqual(none.Checksum, sharded.Checksum, "the checksums");

      ulong whole = none.Memory[0].OptimizerState;
      Assert.AreEqual(8 * Parameters, whole, "AdamW's state of an unsharded replica");
      ulong sum = 0;
      for (int d = 0; d < Devices; ++d) {
        AssertParts(none.Memory[d], Parameters, true, "None, device " + d);
        AssertParts(sharded.Memory[d], Parameters, true, "Optimizer, device " + d);
        Assert.AreEqual(whole, none.Memory[d].OptimizerState, "None, device " + d + ": the whole state");
        ulong part = sharded.Memory[d].OptimizerState;
        Assert.Greater(part, 0UL, "Optimizer, device " + d);
        Assert.Less(part, whole, "Optimizer, device " + d);
        sum += part;
      }
      Assert.AreEqual(whole, sum, "the devices' parts add up to the unsharded state");
    }
  }

  /// Gradients with buckets of 4096 bytes and one micro-batch per step trains to the very bits of None (every
  /// replica, and the checksum) on the MLP and on a deeper one. Each device keeps the optimizer state of the same
  /// range as with Optimizer (the parts add up to the unsharded state) and the summed gradient of that range
  /// (AdamW: half its state's bytes) plus two staging buckets, the same on every device: over the devices the
  /// ranges add up to one unsharded gradient. The MLP's 8320-parameter layer fills its buckets, so there sharding
  /// the gradient saves nothing; on the deeper MLP (six alike layers, six buckets) each device reports less than
  /// an unsharded replica's gradient, and the three together less than three unsharded replicas'.
  [Test]
  public void ShardingTheGradientsKeepsTheBitsAndSplitsTheGradient() {
    using (var mlp = TestData.MakeRippleMlp(Side))
    using (var deep = MakeDeepMlp()) {
      foreach (Model model in new[] { mlp, deep }) {
        bool saves = model == deep; // sharding the gradient saves memory
        ulong parameters = saves ? DeepParameters : Parameters;
        Assert.AreEqual(parameters, model.ParameterCount);
        string name = saves ? "deep MLP" : "MLP";
        Run none = Train(model, ShardMode.None);
        Run optimizer = Train(model, ShardMode.Optimizer);
        Run gradients = Train(model, ShardMode.Gradients, BucketBytes);
        Assert.IsFalse(BitwiseEqual(none.Start, none.Replicas[0]),
                       name + ": 3 steps left the parameters unchanged");
        for (int d = 0; d < Devices; ++d)
          AssertBitwiseEqual(none.Replicas[d], gradients.Replicas[d],
                             name + ": Gradients against None, replica " + d);
        Assert.AreEqual(none.Checksum, gradients.Checksum, name + ": the checksums");

        ulong whole = none.Memory[0].Gradients;
        Assert.AreEqual(4 * parameters, whole, name + ": the gradient of an unsharded replica");
        ulong staging = gradients.Memory[0].Gradients - gradients.Memory[0].OptimizerState / 2;
        Assert.Greater(staging, 0UL, name + ": staging buckets");
        ulong state = 0, ranges = 0, sum = 0;
        for (int d = 0; d < Devices; ++d) {
          string what = name + ", Gradients, device " + d;
          ReplicaMemory m = gradients.Memory[d];
          AssertParts(m, parameters, false, what);
          Assert.AreEqual(optimizer.Memory[d].OptimizerState, m.OptimizerState,
                          what + ": the optimizer state of Optimizer's range");
          // The range's gradient takes 4 bytes per parameter, its AdamW state 8.
          Assert.AreEqual(m.OptimizerState / 2 + staging, m.Gradients,
                          what + ": the range's gradient plus device 0's staging buckets");
          if (saves) Assert.Less(m.Gradients, whole, what + ": less than an unsharded replica's gradient");
          state += m.OptimizerState;
          ranges += m.Gradients - staging;
          sum += m.Gradients;
        }
        Assert.AreEqual(none.Memory[0].OptimizerState, state, name + ": the devices' optimizer states add up");
        Assert.AreEqual(whole, ranges,
                        name + ": the devices' ranges of the gradient add up to the unsharded one");
        if (saves) Assert.Less(sum, Devices * whole, name + ": the devices' gradients against 3 unsharded ones");
      }
    }
  }

  /// Parameters with buckets of 4096 bytes and one micro-batch per step trains the deeper MLP (six alike layers,
  /// six buckets) to the very bits of None: every replica's parameters (each gathered from the devices' ranges),
  /// the checksum, and the loss and accuracy of an evaluation after the steps (whose passes gather the parameters
  /// as training does); the start gathers to None's too. Each device keeps Gradients' optimizer state and
  /// gradient, and of the parameters its range (AdamW: half its state's bytes) plus a gather buffer, the same on
  /// every device: over the devices the ranges add up to one unsharded replica's parameters, and each device's
  /// parameters take less than an unsharded replica's.
  [Test]
  public void ShardingTheParametersKeepsTheBitsAndSplitsTheParameters() {
    using (var deep = MakeDeepMlp()) {
      Assert.AreEqual(DeepParameters, deep.ParameterCount);
      Run none = Train(deep, ShardMode.None);
      Run gradients = Train(deep, ShardMode.Gradients, BucketBytes);
      Run parameters = Train(deep, ShardMode.Parameters, BucketBytes);
      AssertBitwiseEqual(none.Start, parameters.Start, "the same seed starts alike");
      Assert.IsFalse(BitwiseEqual(none.Start, none.Replicas[0]), "3 steps left the parameters unchanged");
      for (int d = 0; d < Devices; ++d)
        AssertBitwiseEqual(none.Replicas[d], parameters.Replicas[d], "Parameters against None, replica " + d);
      Assert.AreEqual(none.Checksum, parameters.Checksum, "the checksums");
      Assert.AreEqual(BitConverter.DoubleToInt64Bits(none.Loss), BitConverter.DoubleToInt64Bits(parameters.Loss),
                      "the evaluation's loss: None " + none.Loss + ", Parameters " + parameters.Loss);
      Assert.AreEqual(none.Accuracy, parameters.Accuracy, "the evaluation's accuracy");

      ulong whole = none.Memory[0].Parameters;
      Assert.AreEqual(4 * DeepParameters, whole, "the parameters of an unsharded replica");
      ulong gather = parameters.Memory[0].Parameters - parameters.Memory[0].OptimizerState / 2;
      Assert.Greater(gather, 0UL, "gather buffer");
      ulong ranges = 0, sum = 0;
      for (int d = 0; d < Devices; ++d) {
        string what = "Parameters, device " + d;
        ReplicaMemory m = parameters.Memory[d];
        Assert.AreEqual(gradients.Memory[d].OptimizerState, m.OptimizerState,
                        what + ": the optimizer state of Gradients' range");
        Assert.AreEqual(gradients.Memory[d].Gradients, m.Gradients,
                        what + ": Gradients' range of the gradient and staging buckets");
        // The range's parameters take 4 bytes per parameter, its AdamW state 8.
        Assert.AreEqual(m.OptimizerState / 2 + gather, m.Parameters,
                        what + ": the range's parameters plus device 0's gather buffer");
        Assert.Less(m.Parameters, whole, what + ": less than an unsharded replica's parameters");
        Assert.AreEqual(0UL, m.Buffers, what + ": buffers (no batch norm)");
        Assert.Greater(m.Activations, 0UL, what + ": activations");
        Assert.AreEqual(m.Parameters + m.Gradients + m.OptimizerState + m.Buffers + m.Activations, m.Total,
                        what + ": total");
        ranges += m.Parameters - gather;
        sum += m.Parameters;
      }
      Assert.AreEqual(whole, ranges, "the devices' ranges of the parameters add up to the unsharded ones");
      Assert.Less(sum, Devices * whole, "the devices' parameters against 3 unsharded replicas'");
    }
  }

  /// The deep MLP with its third hidden layer's weight tied to its second's (<see cref="Model.Tie"/>: one parameter,
  /// two writers of its gradient, in different buckets): Gradients and Parameters train to the very bits of None
  /// (every replica, the checksum and the evaluation).
  [Test]
  public void ShardingTheGradientsOrTheParametersKeepsTiedParametersExact() {
    using (var deep = MakeDeepMlp()) {
      deep.Tie("4.weight", "2.weight");
      Run none = Train(deep, ShardMode.None, BucketBytes);
      foreach (ShardMode mode in new[] { ShardMode.Gradients, ShardMode.Parameters }) {
        Run sharded = Train(deep, mode, BucketBytes);
        for (int d = 0; d < Devices; ++d)
          AssertBitwiseEqual(none.Replicas[0], sharded.Replicas[d], mode + ", tied: replica " + d);
        Assert.AreEqual(none.Checksum, sharded.Checksum, mode + ", tied: checksum");
        Assert.AreEqual(none.Loss, sharded.Loss, mode + ", tied: evaluation loss");
      }
    }
  }

  /// A device past the last is an InvalidArgumentException with Status.OutOfRange; a mode outside the enum
  /// (4, -1) is refused when the trainer is created: InvalidArgumentException, naming the option, and so is a
  /// shard scope outside its enum (2, -1). Optimizer, Gradients and Parameters are taken, and
  /// ShardScope.World in one process.
  [Test]
  public void AnOutOfRangeDeviceAndAnUnknownModeAreRefused() {
    using (var model = TestData.MakeModel())
    using (var options = new TrainerOptions()) {
      using (var trainer = new Trainer(context, model)) {
        var e = Assert.Throws<InvalidArgumentException>(() => trainer.GetReplicaMemory(Devices));
        Assert.AreEqual(Status.OutOfRange, e.Status);
        Assert.AreEqual(1000, e.Category);
        StringAssert.Contains("dpt_trainer_replica_memory", e.LibraryMessage);
        Assert.AreEqual(4 * trainer.ParameterCount, trainer.GetReplicaMemory(Devices - 1).Parameters,
                        "the trainer is unharmed");
      }
      Assert.AreEqual(2, (int)ShardMode.Gradients);
      Assert.AreEqual(3, (int)ShardMode.Parameters);
      foreach (int value in new[] { 4, -1 }) {
        options.Shard = (ShardMode)value;
        Assert.AreEqual((ShardMode)value, options.Shard);
        var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, model, options, null),
                                                        "shard mode " + value);
        Assert.AreEqual(Status.InvalidArgument, e.Status);
        StringAssert.Contains("shard mode " + value, e.LibraryMessage);
      }
      foreach (int value in new[] { 2, -1 }) {
        options.Shard = ShardMode.Optimizer;
        options.ShardScope = (ShardScope)value;
        var e = Assert.Throws<InvalidArgumentException>(() => new Trainer(context, model, options, null),
                                                        "shard scope " + value);
        StringAssert.Contains("shard scope " + value, e.LibraryMessage);
      }
      Assert.AreEqual(ShardScope.Process, new TrainerOptions().ShardScope, "the default scope");
      options.ShardScope = ShardScope.World;
      foreach (ShardMode mode in new[] { ShardMode.Optimizer, ShardMode.Gradients, ShardMode.Parameters }) {
        options.Shard = mode;
        using (var trainer = new Trainer(context, model, options, null))
          Assert.AreEqual((ulong)Devices, trainer.DeviceCount, mode.ToString());
      }
    }
  }
}

}
