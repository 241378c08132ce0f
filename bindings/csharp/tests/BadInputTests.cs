// Bad input: null arrays, wrong lengths, bad labels, disposed or null handles, negative and overflowing
// sizes. Each is an exception with a clear message; none crashes Mono.
using System;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class BadInputTests {
  Context context;
  Trainer trainer;
  float[] x;
  int[] y;

  [TestFixtureSetUp]
  public void Create() {
    context = new Context(2);
    trainer = TestData.MakeTrainer(context);
    TestData.Make(8, out x, out y);
  }

  [TestFixtureTearDown]
  public void Release() {
    trainer.Dispose();
    context.Dispose();
  }

  static void AssertNull(string parameter, TestDelegate call) {
    var e = Assert.Throws<ArgumentNullException>(call);
    Assert.AreEqual(parameter, e.ParamName);
  }

  static InvalidArgumentException AssertInvalid(Status status, string message, TestDelegate call) {
    var e = Assert.Throws<InvalidArgumentException>(call);
    Assert.AreEqual(status, e.Status, e.Message);
    StringAssert.Contains(message, e.Message);
    return e;
  }

  [Test]
  public void NullArrays() {
    AssertNull("inputs", () => trainer.Step(null, y));
    AssertNull("labels", () => trainer.Step(x, null));
    AssertNull("inputs", () => trainer.Evaluate(null, y));
    AssertNull("params_", () => trainer.SetParameters(null));
    AssertNull("out_params", () => trainer.GetParameters(null));
    AssertNull("out_logits", () => trainer.Predict(x, 8, (float[])null));
    AssertNull("inputs", () => new Dataset(null, y, 1, 4, 4, 4));
    AssertNull("devices", () => new Trainer(context, TestData.MakeModel(), null, null, null, new float[0]));
    AssertNull("weights", () => new Trainer(context, TestData.MakeModel(), null, null, new ulong[] { 0 }, null));
  }

  [Test]
  public void EmptyArrays() {
    AssertInvalid(Status.NullPointer, "dpt_trainer_step: inputs is NULL", () => trainer.Step(new float[0], new int[0]));
  }

  [Test]
  public void WrongLengths() {
    AssertInvalid(Status.SizeMismatch, "input_count is 127, expected 8 x 16 = 128",
                  () => trainer.Step(new float[127], y));
    AssertInvalid(Status.SizeMismatch, "dpt_trainer_evaluate", () => trainer.Evaluate(x, new int[7]));
    AssertInvalid(Status.SizeMismatch, "count is 3, the model has 340 parameters",
                  () => trainer.SetParameters(new float[3]));
    AssertInvalid(Status.SizeMismatch, "count is 341, the model has 340 parameters",
                  () => trainer.GetParameters(new float[341]));
    AssertInvalid(Status.SizeMismatch, "logit_count is 31, expected 32", () => trainer.Predict(x, 8, new float[31]));
    AssertInvalid(Status.SizeMismatch, "input_count is 10, expected 128", () => new Dataset(new float[10], y, 1, 4, 4, 4));
    AssertInvalid(Status.SizeMismatch, "1 split weights for 2 devices",
                  () => new Trainer(context, TestData.MakeModel(), null, null, new ulong[] { 0, 1 }, new float[] { 1 }));
    using (var data = TestData.MakeDataset(8))
      AssertInvalid(Status.SizeMismatch, "dpt_dataset_copy_batch", () => data.CopyBatch(0, 2, new float[31], new int[2]));
  }

  [Test]
  public void BadValues() {
    AssertInvalid(Status.OutOfRange, "label 4 of sample 4 is outside [0, 4)",
                  () => trainer.Step(x, new[] { 0, 1, 2, 3, 4, 1, 2, 3 }));
    AssertInvalid(Status.OutOfRange, "is outside [0, 4)", () => trainer.Step(x, new[] { 0, 1, 2, 3, -2, 1, 2, 3 }));  // -1 is the ignore label
    AssertInvalid(Status.OutOfRange, "dropout rate must be in [0, 1)", () => TestData.MakeModel().AddDropout(1.5f));
    AssertInvalid(Status.InvalidArgument, "device 0 is listed twice",
                  () => new Trainer(context, TestData.MakeModel(), null, null, new ulong[] { 0, 0 }, new float[0]));
    using (var options = new FitOptions())
    using (var data = TestData.MakeDataset(8)) {
      options.BatchSize = 0;
      AssertInvalid(Status.InvalidArgument, "batch_size must be positive", () => trainer.Fit(data, null, options));
    }
  }

  [Test]
  public void NullHandles() {
    using (var model = TestData.MakeModel()) {
      AssertInvalid(Status.NullPointer, "dpt_trainer_create: context is NULL", () => new Trainer(null, model));
      AssertInvalid(Status.NullPointer, "dpt_trainer_create: model is NULL", () => new Trainer(context, null));
    }
    AssertInvalid(Status.NullPointer, "dpt_trainer_fit: train is NULL", () => trainer.Fit(null));
    AssertInvalid(Status.NullPointer, "name is NULL", () => Model.Builtin(null));
  }

  [Test]
  public void NegativeAndOverflowingSizes() {
    // size_t is ulong: a negative count arrives as a huge one and is rejected, never wrapped into range.
    ulong minusOne = unchecked((ulong)-1L);
    using (var data = TestData.MakeDataset(8)) {
      AssertInvalid(Status.OutOfRange, "subset [0, +18446744073709551615) exceeds the 8 samples",
                    () => data.Subset(0, minusOne));
      AssertInvalid(Status.OutOfRange, "exceeds the 8 samples", () => data.Subset(minusOne, 1));
      AssertInvalid(Status.OutOfRange, "exceed the 8 samples", () => data.CopyBatch(minusOne, 2, new float[32], new int[2]));
    }
    AssertInvalid(Status.OutOfRange, "cpu_devices 18446744073709551615 exceeds 64", () => new Context(minusOne));
    AssertInvalid(Status.InvalidArgument, "more than 2^28 floats per sample", () => new Dataset(x, y, minusOne, 2, 2, 4));
    AssertInvalid(Status.InvalidArgument, "more than 2^28 floats per sample",
                  () => new Dataset(x, y, 1UL << 32, 1UL << 32, 1, 4));
    AssertInvalid(Status.InvalidArgument, "more than 2^28 floats per sample", () => new Model(minusOne, minusOne, 2));
    AssertInvalid(Status.InvalidArgument, "dense units must be in 1..2^28", () => TestData.MakeModel().AddDense(minusOne));
    AssertInvalid(Status.InvalidArgument, "overflows size_t", () => trainer.Predict(x, minusOne, new float[32]));
    AssertInvalid(Status.OutOfRange, "replica 18446744073709551615 does not exist", () => trainer.GetReplicaParameters(minusOne));
    var e = Assert.Throws<DeviceException>(
        () => new Trainer(context, TestData.MakeModel(), null, null, new ulong[] { minusOne }, new float[0]));
    StringAssert.Contains("device index 18446744073709551615 does not exist", e.Message);
    Assert.Throws<OverflowException>(() => trainer.Predict(x, minusOne, 4));
  }

  [Test]
  public void TrainerIsUsableAfterBadInput() {
    try { trainer.Step(new float[3], y); } catch (InvalidArgumentException) {}
    using (var r = trainer.Step(x, y)) Assert.AreEqual(8UL, r.Samples);
  }
}

}
