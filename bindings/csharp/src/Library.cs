// Library-level facts: version and status names.
namespace DPTrain {

/// <summary>Version and status helpers of the native library.</summary>
public static class Library {
  /// <summary>The library's version, e.g. "0.2.0".</summary>
  public static string Version { get { return dptrain.VersionString(); } }

  /// <summary>MAJOR * 10000 + MINOR * 100 + PATCH.</summary>
  public static uint VersionNumber { get { return dptrain.VersionNumber(); } }

  /// <summary>Largest number of CPU devices a context can have.</summary>
  public static int MaxCpuDevices { get { return dptrain.DPT_MAX_CPU_DEVICES; } }

  /// <summary>A label (target) that does not count, as PyTorch's ignore_index: no loss, no gradient, not in the
  /// count the loss is divided by (<see cref="StepResult.Targets"/>).</summary>
  public static int IgnoreLabel { get { return dptrain.DPT_IGNORE_LABEL; } }

  /// <summary>The vocabulary of <see cref="Dataset.LoadText"/>: one token per byte.</summary>
  public static int TextVocabulary { get { return dptrain.DPT_TEXT_VOCABULARY; } }

  /// <summary>Where Fashion-MNIST is looked for by default (Debian's dataset-fashion-mnist).</summary>
  public static string DefaultFashionMnistDirectory { get { return dptrain.DPT_FASHION_MNIST_DEFAULT_DIR; } }

  /// <summary>The library's name of a status, e.g. "size mismatch".</summary>
  public static string StatusString(Status status) { return dptrain.StatusString((int)status); }
}

}
