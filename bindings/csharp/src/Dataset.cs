// Hand-written half of Dataset.
namespace DPTrain {

/// <summary>Labelled samples held in host memory (the constructor copies the caller's arrays).</summary>
public partial class Dataset {
  /// Running Fit calls that read this dataset (Dispose refuses while nonzero).
  internal int swigBusy;

  /// <summary>Number of samples.</summary>
  public ulong SampleCount { get { return GetSampleCount(); } }

  /// <summary>Channels of one sample.</summary>
  public ulong Channels { get { return GetChannels(); } }

  /// <summary>Height of one sample.</summary>
  public ulong Height { get { return GetHeight(); } }

  /// <summary>Width of one sample.</summary>
  public ulong Width { get { return GetWidth(); } }

  /// <summary>Number of classes.</summary>
  public ulong ClassCount { get { return GetClassCount(); } }

  /// <summary>Floats per sample (channels * height * width).</summary>
  public ulong SampleSize { get { return GetChannels() * GetHeight() * GetWidth(); } }

  /// <summary>Loads Fashion-MNIST from DPTRAIN_DATA_DIR or <see cref="Library.DefaultFashionMnistDirectory"/>.</summary>
  public static Dataset LoadFashionMnist(DatasetPart part) { return LoadFashionMnist(null, part); }
}

}
