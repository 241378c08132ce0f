// TrainerOptions.PipelineStages, MicroBatches, PipelineSchedule and PipelineCuts (trainer.h, pipeline model
// parallel): the defaults, the bits of a 2-stage pipeline against one device accumulating the same
// micro-batches (both schedules, balanced and named cuts), and the refusal of more stages than devices, of too many
// micro-batches, of a cut at a node that does not exist and of a schedule outside the enum.
using System;
using System.Linq;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class PipelineTests {
  const int Stages = 2;
  const int MicroBatches = 4;
  const int Batch = 16;   // four micro-batches of 4 samples
  const int Steps = 2;
  const int SampleSize = TestData.SampleSize;
  /// The parameters of MakeMlp's layers.
  const ulong Fc1 = SampleSize * 24 + 24;
  const ulong Fc2 = 24 * 24 + 24;
  const ulong Head = 24 * TestData.Classes + TestData.Classes;

  /// 1x4x4 -> dense 24 "fc1" -> relu "relu1" -> dense 24 "fc2" -> relu "relu2" -> dense 4 "head" (1108
  /// parameters): four places to cut (before relu1, fc2, relu2 and head).
  static Model MakeMlp() {
    var model = new Model(1, TestData.Side, TestData.Side);
    TensorId x = model.Dense(model.Input, 24, name: "fc1");
    x = model.Activation(x, Activation.Relu, "relu1");
    x = model.Dense(x, 24, name: "fc2");
    x = model.Activation(x, Activation.Relu, "relu2");
    model.Dense(x, TestData.Classes, name: "head");
    return model;
  }

  /// Seed 7.
  static TrainerOptions MakeOptions() {
    return new TrainerOptions { Seed = 7 };
  }

  /// SGD with momentum and weight decay (no clip norm: with one, a pipeline's gradient norm may differ in its
  /// last bits).
  static OptimizerOptions MakeSgd() {
    return new OptimizerOptions { Kind = OptimizerKind.Sgd, LearningRate = 0.1f, Momentum = 0.9f,
                                  WeightDecay = 0.01f };
  }

  /// What one run leaves: the checksum and every device's memory.
  sealed class Run {
    public string Checksum;
    public ReplicaMemory[] Memory;
  }

  /// Trains the model with the options on the context for Steps batches of Batch samples (batch s is samples
  /// s * Batch ... of TestData.Make), each stepped as `slices` consecutive slices of equal size (and checks that
  /// the parameters moved).
  static Run Train(Context context, Model model, TrainerOptions options, int slices) {
    float[] x;
    int[] y;
    TestData.Make(Steps * Batch, out x, out y);
    int per = Batch / slices;
    using (var optimizer = MakeSgd())
    using (var trainer = new Trainer(context, model, options, optimizer)) {
      float[] start = trainer.GetParameters();
      for (int s = 0; s < Steps; ++s) {
        for (int i = 0; i < slices; ++i) {
          int first = s * Batch + i * per;
          var xs = new float[per * SampleSize];
          var ys = new int[per];
          Array.Copy(x, first * SampleSize, xs, 0, xs.Length);
          Array.Copy(y, first, ys, 0, ys.Length);
          using (StepResult r = trainer.Step(xs, ys)) {
            string what = "step " + (s + 1) + ", slice " + i;
            Assert.AreEqual((ulong)per, r.Samples, what);
            Assert.AreEqual(i == slices - 1 || options.AccumulationSteps <= 1 ? 1 : 0, r.Applied, what + ": applied");
          }
        }
      }
      Assert.IsFalse(start.Select(TestData.Bits).SequenceEqual(trainer.GetParameters().Select(TestData.Bits)),
                     Steps + " steps left the parameters unchanged");
      var run = new Run { Checksum = trainer.ParameterChecksum(), Memory = new ReplicaMemory[trainer.DeviceCount] };
      for (int d = 0; d < run.Memory.Length; ++d) run.Memory[d] = trainer.GetReplicaMemory((ulong)d);
      return run;
    }
  }

  /// The default is no pipeline. The MLP cut into 2 stages on 2 CPU devices, 4 micro-batches per step, trains to
  /// the checksum of one device with AccumulationSteps 4 stepped on the four consecutive 4-sample slices of each
  /// 16-sample batch: with OneFOneB (the default) and GPipe, with the balanced cut and with cuts named "fc2" and
  /// "head". Stepping the slices without accumulation (an update each) gives another checksum: the comparison sees
  /// a difference. Each stage holds the parameters of its layers (4 bytes each: fc1 before "fc2", fc1 and fc2
  /// before "head"), and with GPipe, which keeps every micro-batch's activations, each stage holds more
  /// activations than with OneFOneB.
  [Test]
  public void APipelineHasTheBitsOfOneDeviceAccumulatingItsMicroBatches() {
    using (var defaults = new TrainerOptions()) {
      Assert.AreEqual(0UL, defaults.PipelineStages, "the default: no pipeline");
      Assert.AreEqual(0UL, defaults.MicroBatches, "the default: four per stage");
      Assert.AreEqual(PipelineSchedule.OneFOneB, defaults.PipelineSchedule, "the default schedule");
      Assert.IsNull(defaults.PipelineCuts, "the default: balanced cuts");
      Assert.AreEqual(PipelineScope.ProcessScope, defaults.PipelineScope, "the default scope");
      Assert.AreEqual(0UL, defaults.PipelineCopies, "the default copies");
    }
    using (var one = new Context(1))
    using (var two = new Context(Stages))
    using (var model = MakeMlp()) {
      string expected;
      using (var accumulate = MakeOptions()) {
        accumulate.AccumulationSteps = MicroBatches;
        expected = Train(one, model, accumulate, MicroBatches).Checksum;
      }
      using (var updates = MakeOptions())
        Assert.AreNotEqual(expected, Train(one, model, updates, MicroBatches).Checksum, "an update per slice");

      // schedule, cuts, the first stage's parameters (0: the balanced cut's, not checked)
      var cases = new[] {
        Tuple.Create(PipelineSchedule.OneFOneB, (string)null, 0UL),
        Tuple.Create(PipelineSchedule.GPipe, (string)null, 0UL),
        Tuple.Create(PipelineSchedule.OneFOneB, "fc2", Fc1),
        Tuple.Create(PipelineSchedule.GPipe, "head", Fc1 + Fc2),
      };
      var runs = new Run[cases.Length];
      for (int i = 0; i < cases.Length; ++i) {
        var c = cases[i];
        string what = c.Item1 + ", cuts " + c.Item2;
        using (var options = MakeOptions()) {
          options.PipelineStages = Stages;
          options.MicroBatches = MicroBatches;
          options.PipelineSchedule = c.Item1;
          options.PipelineCuts = c.Item2;
          Assert.AreEqual((ulong)Stages, options.PipelineStages);
          Assert.AreEqual((ulong)MicroBatches, options.MicroBatches);
          Assert.AreEqual(c.Item1, options.PipelineSchedule);
          Assert.AreEqual(c.Item2, options.PipelineCuts);
          runs[i] = Train(two, model, options, 1);
        }
        Assert.AreEqual(expected, runs[i].Checksum, what);
        Assert.AreEqual(Stages, runs[i].Memory.Length, what);
        ulong first = runs[i].Memory[0].Parameters, second = runs[i].Memory[1].Parameters;
        Assert.AreEqual(4 * (Fc1 + Fc2 + Head), first + second, what + ": the stages' parameters");
        if (c.Item3 != 0) Assert.AreEqual(4 * c.Item3, first, what + ": the first stage's parameters");
      }
      // The world scope without a communicator is the process scope: the same bits.
      using (var world = MakeOptions()) {
        world.PipelineStages = Stages;
        world.MicroBatches = MicroBatches;
        world.PipelineScope = PipelineScope.WorldScope;
        Assert.AreEqual(PipelineScope.WorldScope, world.PipelineScope);
        Assert.AreEqual(expected, Train(two, model, world, 1).Checksum,
                        "PipelineScope.WorldScope without a communicator");
        // Copies of the pipeline divide the processes: no effect without a communicator.
        world.PipelineCopies = 2;
        Assert.AreEqual(2UL, world.PipelineCopies);
        Assert.AreEqual(expected, Train(two, model, world, 1).Checksum, "PipelineCopies without a communicator");
      }
      for (int s = 0; s < Stages; ++s) {
        ulong oneFOneB = runs[0].Memory[s].Activations, gpipe = runs[1].Memory[s].Activations;
        Assert.Greater(gpipe, oneFOneB, "stage " + s + ": GPipe's activations against 1F1B's");
      }
    }
  }

  /// The cuts a balance chose come back from Trainer.PipelineCuts in the form TrainerOptions.PipelineCuts takes:
  /// by parameters the MLP's two stages begin at "relu1" (408 | 675 parameters), by the estimated work at "fc2"
  /// (432 | 699 operations per sample); by measured time at one of its four places, which, named, gives a
  /// trainer the same cuts. No pipeline: "". The defaults are Work and 0; named cuts with another balance and a
  /// balance outside the enum are InvalidArgumentException.
  [Test]
  public void TheCutsABalanceChoseCanBeNamed() {
    using (var defaults = new TrainerOptions()) {
      Assert.AreEqual(PipelineBalance.Work, defaults.PipelineBalance, "the default balance");
      Assert.AreEqual(0UL, defaults.PipelineBalanceBatch, "the default: 16 samples");
    }
    using (var two = new Context(Stages))
    using (var model = MakeMlp())
    using (var optimizer = MakeSgd()) {
      var cases = new[] { Tuple.Create(PipelineBalance.ParameterBytes, "relu1"), Tuple.Create(PipelineBalance.Work, "fc2") };
      foreach (var c in cases) {
        using (var options = MakeOptions()) {
          options.PipelineStages = Stages;
          options.PipelineBalance = c.Item1;
          Assert.AreEqual(c.Item1, options.PipelineBalance);
          using (var trainer = new Trainer(two, model, options, optimizer))
            Assert.AreEqual(c.Item2, trainer.PipelineCuts, c.Item1.ToString());
        }
      }
      string measured;
      using (var options = MakeOptions()) {
        options.PipelineStages = Stages;
        options.PipelineBalance = PipelineBalance.Time;
        options.PipelineBalanceBatch = Batch;
        Assert.AreEqual((ulong)Batch, options.PipelineBalanceBatch);
        using (var trainer = new Trainer(two, model, options, optimizer)) measured = trainer.PipelineCuts;
      }
      CollectionAssert.Contains(new[] { "relu1", "fc2", "relu2", "head" }, measured, "by measured time");
      using (var options = MakeOptions()) {
        options.PipelineStages = Stages;
        options.PipelineCuts = measured;
        using (var trainer = new Trainer(two, model, options, optimizer))
          Assert.AreEqual(measured, trainer.PipelineCuts, "the measured cut, named");
      }
      using (var options = MakeOptions())
      using (var trainer = new Trainer(two, model, options, optimizer))
        Assert.AreEqual("", trainer.PipelineCuts, "no pipeline");
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model, o => {
        o.PipelineCuts = "fc2";
        o.PipelineBalance = PipelineBalance.Time;
      }, "one or the other");
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model,
                                              o => o.PipelineBalance = (PipelineBalance)3, "pipeline balance");
    }
  }

  static T AssertRefused<T>(Status status, Context context, Model model, Action<TrainerOptions> change,
                            params string[] fragments) where T : DptrainException {
    using (var options = MakeOptions())
    using (var optimizer = MakeSgd()) {
      options.PipelineStages = Stages;
      change(options);
      var e = Assert.Throws<T>(() => new Trainer(context, model, options, optimizer).Dispose(), status.ToString());
      Assert.AreEqual(status, e.Status, e.LibraryMessage);
      Assert.AreEqual((int)status / 1000 * 1000, e.Category);
      foreach (string f in fragments) StringAssert.Contains(f, e.LibraryMessage);
      return e;
    }
  }

  /// 3 stages on 2 devices is UnsupportedException (Status.Unsupported), 1025 micro-batches
  /// InvalidArgumentException with Status.OutOfRange, a cut at a node that does not exist and a schedule outside
  /// the enum (and a scope outside its enum, and copies of the pipeline in the process scope)
  /// InvalidArgumentException with Status.InvalidArgument. The limits themselves are taken, and the
  /// options keep their own copy of the cuts.
  [Test]
  public void TheLibraryRefusalsComeBackAsExceptions() {
    using (var two = new Context(Stages))
    using (var model = MakeMlp()) {
      AssertRefused<UnsupportedException>(Status.Unsupported, two, model, o => o.PipelineStages = 3,
                                          "dpt_trainer_create", "3 stages", "devices per stage");
      AssertRefused<InvalidArgumentException>(Status.OutOfRange, two, model, o => o.MicroBatches = 1025,
                                              "dpt_trainer_create", "1024", "1025");
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model, o => o.PipelineCuts = "nope",
                                              "dpt_trainer_create", "nope");
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model,
                                              o => o.PipelineSchedule = (PipelineSchedule)2, "pipeline schedule");
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model,
                                              o => o.PipelineScope = (PipelineScope)2, "pipeline scope");
      // Copies in the process scope, where every process is a copy.
      AssertRefused<InvalidArgumentException>(Status.InvalidArgument, two, model, o => o.PipelineCopies = 2,
                                              "process scope");
      Assert.AreEqual(1, (int)PipelineSchedule.GPipe);

      using (var options = MakeOptions())
      using (var optimizer = MakeSgd()) {
        options.PipelineStages = Stages;
        options.MicroBatches = 1024;
        options.PipelineCuts = "fc2";
        options.PipelineCuts = "relu2";  // replaces the copy
        Assert.AreEqual("relu2", options.PipelineCuts);
        using (var trainer = new Trainer(two, model, options, optimizer))
          Assert.AreEqual((ulong)Stages, trainer.DeviceCount);
        options.PipelineCuts = null;
        Assert.IsNull(options.PipelineCuts);
      }
    }
  }
}

}
