// Trains LeNet on Fashion-MNIST across 2 CPU devices through the C# binding, with the defaults of the C CLI
// (`dptrain train --model lenet`): batch 256, SGD lr 0.2, weights ~ N(0, 0.01^2), even split, ring all-reduce.
// Prints the accuracy after each epoch and, last, `param_checksum <16 hex>`: with the same flags it equals the
// CLI's (bitwise identical parameters).
//
//   mono TrainFashionMnist.exe [--epochs N] [--train-limit N] [--test-limit N] [--seed N]
//                              [--devices N | cpu:N] [--data DIR]
using System;
using DPTrain;

static class TrainFashionMnist {
  sealed class Options {
    public ulong Epochs = 10;
    public ulong TrainLimit;  // 0 = all
    public ulong TestLimit;   // 0 = all
    public ulong Seed;
    public ulong Devices = 2;
    public string DataDir;    // null = DPTRAIN_DATA_DIR or the Debian package's directory
  }

  const string Usage =
      "usage: TrainFashionMnist.exe [--epochs N] [--train-limit N] [--test-limit N] [--seed N] [--devices N] [--data DIR]";

  static int Main(string[] args) {
    Options o;
    try {
      o = Parse(args);
    } catch (ArgumentException e) {
      Console.Error.WriteLine("error: " + e.Message);
      Console.Error.WriteLine(Usage);
      return 2;
    }
    if (o == null) {
      Console.WriteLine(Usage);
      return 0;
    }
    try {
      return Run(o);
    } catch (DptrainException e) {
      Console.Error.WriteLine("error: " + e.Message);
      return 1;
    }
  }

  static int Run(Options o) {
    using (var context = new Context(o.Devices))
    using (var train = Load(o.DataDir, DatasetPart.Train, o.TrainLimit))
    using (var test = Load(o.DataDir, DatasetPart.Test, o.TestLimit))
    using (var model = Model.Builtin("lenet"))
    using (var trainerOptions = new TrainerOptions())
    using (var optimizer = new OptimizerOptions())
    using (var fitOptions = new FitOptions()) {
      trainerOptions.Seed = o.Seed;
      trainerOptions.Init = InitScheme.Normal;
      trainerOptions.InitStd = 0.01f;
      trainerOptions.Split = SplitPolicy.Even;
      trainerOptions.Allreduce = AllReduceAlgorithm.Ring;
      optimizer.Kind = OptimizerKind.Sgd;
      optimizer.LearningRate = 0.2f;
      fitOptions.Epochs = o.Epochs;
      fitOptions.BatchSize = 256;

      using (var trainer = new Trainer(context, model, trainerOptions, optimizer)) {
        Console.WriteLine("dptrain {0}: lenet, {1} parameters, {2} devices; {3} train, {4} test samples",
                          Library.Version, trainer.ParameterCount, trainer.DeviceCount, train.SampleCount,
                          test.SampleCount);
        trainer.ProgressChanged += (sender, p) => {
          if (p.Kind != ProgressKind.Epoch) return;
          Console.WriteLine("epoch {0}/{1}: train loss {2:F4} accuracy {3:F4}, test loss {4:F4} accuracy {5:F4} ({6:F1} s)",
                            p.Epoch, p.Epochs, p.Loss, p.Accuracy, p.TestLoss, p.TestAccuracy, p.EpochSeconds);
        };
        using (var result = trainer.Fit(train, test, fitOptions)) {
          Console.WriteLine("final test accuracy {0:F4} after {1} epochs, {2:F0} samples/s", result.TestAccuracy,
                            result.EpochsCompleted, result.SamplesPerSecond);
        }
        Console.WriteLine("param_checksum " + trainer.ParameterChecksum());
      }
    }
    return 0;
  }

  /// The first <paramref name="limit"/> samples of one part (all of them for 0 or a limit beyond the set).
  static Dataset Load(string directory, DatasetPart part, ulong limit) {
    Dataset full = Dataset.LoadFashionMnist(directory, part);
    if (limit == 0 || limit >= full.SampleCount) return full;
    using (full) return full.Subset(0, limit);
  }

  static Options Parse(string[] args) {
    var o = new Options();
    for (int i = 0; i < args.Length; ++i) {
      string name = args[i];
      if (name == "-h" || name == "--help") return null;
      if (i + 1 >= args.Length) throw new ArgumentException(name + " needs a value");
      string value = args[++i];
      switch (name) {
        case "--epochs": o.Epochs = Positive(name, value); break;
        case "--train-limit": o.TrainLimit = Number(name, value); break;
        case "--test-limit": o.TestLimit = Number(name, value); break;
        case "--seed": o.Seed = Number(name, value); break;
        case "--devices": o.Devices = Positive(name, value.StartsWith("cpu:") ? value.Substring(4) : value); break;
        case "--data": o.DataDir = value; break;
        default: throw new ArgumentException("unknown option " + name);
      }
    }
    return o;
  }

  static ulong Number(string name, string value) {
    ulong n;
    if (!ulong.TryParse(value, System.Globalization.NumberStyles.None,
                        System.Globalization.CultureInfo.InvariantCulture, out n))
      throw new ArgumentException(name + ": '" + value + "' is not a non-negative integer");
    return n;
  }

  static ulong Positive(string name, string value) {
    ulong n = Number(name, value);
    if (n == 0) throw new ArgumentException(name + " must be positive");
    return n;
  }
}
