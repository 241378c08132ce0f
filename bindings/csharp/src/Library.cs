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

  /// <summary>Where Fashion-MNIST is looked for by default (Debian's dataset-fashion-mnist).</summary>
  public static string DefaultFashionMnistDirectory { get { return dptrain.DPT_FASHION_MNIST_DEFAULT_DIR; } }

  /// <summary>The library's name of a status, e.g. "size mismatch".</summary>
  public static string StatusString(Status status) { return dptrain.StatusString((int)status); }
}

}
