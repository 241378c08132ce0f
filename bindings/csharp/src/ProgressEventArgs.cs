// A snapshot of one progress report, for Trainer.ProgressChanged.
using System;

namespace DPTrain {

/// <summary>One progress report of <see cref="Trainer.Fit"/> (a copy: it stays valid after the handler).</summary>
public sealed class ProgressEventArgs : EventArgs {
  internal ProgressEventArgs(Progress p) {
    Kind = p.Kind;
    Epoch = p.Epoch;
    Epochs = p.Epochs;
    Batch = p.Batch;
    Batches = p.Batches;
    Samples = p.Samples;
    Loss = p.Loss;
    Accuracy = p.Accuracy;
    SamplesPerSecond = p.SamplesPerSecond;
    EpochSeconds = p.EpochSeconds;
    HasTest = p.HasTest != 0;
    TestLoss = p.TestLoss;
    TestAccuracy = p.TestAccuracy;
    LearningRate = p.LearningRate;
    LossScale = p.LossScale;
  }

  /// <summary>Batch report (every FitOptions.ProgressEvery batches) or end-of-epoch report.</summary>
  public ProgressKind Kind { get; private set; }
  /// <summary>1-based epoch of this Fit call.</summary>
  public ulong Epoch { get; private set; }
  /// <summary>Epochs requested.</summary>
  public ulong Epochs { get; private set; }
  /// <summary>Batches done in this epoch.</summary>
  public ulong Batch { get; private set; }
  /// <summary>Batches per epoch.</summary>
  public ulong Batches { get; private set; }
  /// <summary>Samples done in this epoch.</summary>
  public ulong Samples { get; private set; }
  /// <summary>Mean training loss over the epoch so far.</summary>
  public double Loss { get; private set; }
  /// <summary>Training accuracy over the epoch so far.</summary>
  public double Accuracy { get; private set; }
  /// <summary>Training throughput over the epoch so far.</summary>
  public double SamplesPerSecond { get; private set; }
  /// <summary>Seconds spent training in this epoch so far.</summary>
  public double EpochSeconds { get; private set; }
  /// <summary>Epoch reports: whether a test set was evaluated.</summary>
  public bool HasTest { get; private set; }
  /// <summary>Epoch reports with HasTest: test loss.</summary>
  public double TestLoss { get; private set; }
  /// <summary>Epoch reports with HasTest: test accuracy.</summary>
  public double TestAccuracy { get; private set; }
  /// <summary>Learning rate of the latest update.</summary>
  public double LearningRate { get; private set; }
  /// <summary>The loss scale now (<see cref="Precision.Fp16"/>; 1 without loss scaling).</summary>
  public double LossScale { get; private set; }

  /// <summary>Set to true to stop training after this report (FitResult.Stopped is then 1).</summary>
  public bool Stop { get; set; }
}

}
