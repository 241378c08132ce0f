// A failed call becomes the exception class of its status category, carrying the library's message.
using System;
using System.IO;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class ErrorsTests {
  [Test]
  public void EveryCategoryMapsToItsClass() {
    var cases = new[] {
      new { Status = Status.InvalidArgument, Type = typeof(InvalidArgumentException) },
      new { Status = Status.NullPointer, Type = typeof(InvalidArgumentException) },
      new { Status = Status.OutOfRange, Type = typeof(InvalidArgumentException) },
      new { Status = Status.SizeMismatch, Type = typeof(InvalidArgumentException) },
      new { Status = Status.InvalidState, Type = typeof(InvalidArgumentException) },
      new { Status = Status.BufferTooSmall, Type = typeof(InvalidArgumentException) },
      new { Status = Status.NonFinite, Type = typeof(InvalidArgumentException) },
      new { Status = Status.Busy, Type = typeof(InvalidArgumentException) },
      new { Status = Status.Unsupported, Type = typeof(UnsupportedException) },
      new { Status = Status.Device, Type = typeof(DeviceException) },
      new { Status = Status.OutOfMemory, Type = typeof(DeviceException) },
      new { Status = Status.DeviceNotFound, Type = typeof(DeviceException) },
      new { Status = Status.Communication, Type = typeof(CommunicationException) },
      new { Status = Status.Timeout, Type = typeof(CommunicationException) },
      new { Status = Status.IO, Type = typeof(IOFormatException) },
      new { Status = Status.Format, Type = typeof(IOFormatException) },
      new { Status = Status.Internal, Type = typeof(InternalException) },
    };
    foreach (var c in cases) {
      int code = (int)c.Status;
      DptrainException e = DptrainException.FromStatus(code, code / 1000 * 1000, "detail " + code);
      Assert.AreEqual(c.Type, e.GetType(), c.Status.ToString());
      Assert.AreEqual(c.Status, e.Status);
      Assert.AreEqual(code, e.StatusCode);
      Assert.AreEqual(code / 1000 * 1000, e.Category);
      Assert.AreEqual("detail " + code, e.LibraryMessage);
      Assert.AreEqual(Library.StatusString(c.Status) + " (" + code + "): detail " + code, e.Message);
    }
    // The status of a call into a handle another thread is calling into: pinned at 1007, named "busy".
    Assert.AreEqual(1007, (int)Status.Busy);
    Assert.AreEqual("busy", Library.StatusString(Status.Busy));
    Assert.AreEqual("busy (1007): detail 1007", DptrainException.FromStatus(1007, 1000, "detail 1007").Message);
    // A status this build does not name keeps its number.
    DptrainException future = DptrainException.FromStatus(1042, 1000, "later");
    Assert.AreEqual(typeof(InvalidArgumentException), future.GetType());
    Assert.AreEqual(1042, future.StatusCode);
    // An unknown category still gives a DptrainException.
    DptrainException unknown = DptrainException.FromStatus(7001, 7000, "from the future");
    Assert.AreEqual(typeof(DptrainException), unknown.GetType());
    Assert.AreEqual(7001, unknown.StatusCode);
  }

  [Test]
  public void SizeMismatchIsInvalidArgumentWithTheLibraryMessage() {
    using (var context = new Context(2))
    using (var trainer = TestData.MakeTrainer(context)) {
      var e = Assert.Throws<InvalidArgumentException>(() => trainer.Step(new float[10], new int[2]));
      Assert.AreEqual(Status.SizeMismatch, e.Status);
      Assert.AreEqual(1000, e.Category);
      Assert.AreEqual("dpt_trainer_step: input_count is 10, expected 2 x 16 = 32", e.LibraryMessage);
      StringAssert.StartsWith("size mismatch (1003): dpt_trainer_step: input_count is 10", e.Message);
    }
  }

  [Test]
  public void MissingDeviceIsDeviceException() {
    using (var context = new Context(2)) {
      var e = Assert.Throws<DeviceException>(() => context.GetDeviceInfo(5));
      Assert.AreEqual(Status.DeviceNotFound, e.Status);
      Assert.AreEqual(3000, e.Category);
      StringAssert.Contains("device index 5 does not exist (the context has 2 devices)", e.LibraryMessage);
    }
  }

  [Test]
  public void ExhaustedArenaIsOutOfMemory() {
    using (var context = new Context(2, 4096))
    using (var model = Model.Builtin("lenet")) {
      var e = Assert.Throws<DeviceException>(() => new Trainer(context, model));
      Assert.AreEqual(Status.OutOfMemory, e.Status);
      StringAssert.Contains("out of memory", e.LibraryMessage);
    }
  }

  [Test]
  public void MissingFileIsIOError() {
    var e = Assert.Throws<IOFormatException>(() => Dataset.LoadIdx("/nonexistent/images.gz", "/nonexistent/labels.gz"));
    Assert.AreEqual(Status.IO, e.Status);
    Assert.AreEqual(5000, e.Category);
    StringAssert.Contains("cannot open '/nonexistent/images.gz'", e.LibraryMessage);
  }

  [Test]
  public void GarbageFileIsFormatError() {
    string path = Path.GetTempFileName();
    try {
      File.WriteAllText(path, "this is not an IDX file");
      var e = Assert.Throws<IOFormatException>(() => Dataset.LoadIdx(path, path));
      Assert.AreEqual(Status.Format, e.Status);
      StringAssert.Contains("bad magic", e.LibraryMessage);
      StringAssert.Contains(path, e.Message);
    } finally {
      File.Delete(path);
    }
  }

  [Test]
  public void UnknownBuiltinIsInvalidArgument() {
    var e = Assert.Throws<InvalidArgumentException>(() => Model.Builtin("resnet"));
    Assert.AreEqual(Status.InvalidArgument, e.Status);
    StringAssert.Contains("unknown built-in model 'resnet'", e.LibraryMessage);
  }

  [Test]
  public void EveryErrorIsCatchableAsDptrainException() {
    Assert.Throws<InvalidArgumentException>(() => new Context(1000));
    try {
      Dataset.LoadIdx("/nonexistent", "/nonexistent");
      Assert.Fail("no exception");
    } catch (DptrainException e) {
      Assert.IsInstanceOf<IOFormatException>(e);
    }
  }

  [Test]
  public void ErrorsOnOneThreadDoNotLeakToAnother() {
    // The pending exception is per thread: a failure on a worker thread surfaces there only.
    Exception seen = null;
    var worker = new System.Threading.Thread(() => {
      try { new Context(1000); } catch (Exception e) { seen = e; }
    });
    worker.Start();
    worker.Join();
    Assert.IsInstanceOf<InvalidArgumentException>(seen);
    using (var context = new Context(1)) Assert.AreEqual(1UL, context.DeviceCount);
  }
}

}
