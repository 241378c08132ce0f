// Hand-written half of Dataset.
namespace DPTrain {

/// <summary>Labelled samples held in host memory (the constructor copies the caller's arrays): float32 samples
/// with one label each, or int32 token sequences (<see cref="CreateTokens"/>, <see cref="LoadText"/>) with one
/// target per position or per sample. A label of <see cref="Library.IgnoreLabel"/> does not count.</summary>
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

  /// <summary>Float32 values (<see cref="DPTrain.InputType.Float32"/>) or int32 tokens
  /// (<see cref="DPTrain.InputType.Tokens"/>: read them with <see cref="CopyTokens"/>).</summary>
  public InputType InputType { get { return GetInputType(); } }

  /// <summary>Labels per sample: 1 for a classification dataset, the sequence length for next-token
  /// targets.</summary>
  public ulong TargetsPerSample { get { return GetTargetsPerSample(); } }

  /// <summary>Loads Fashion-MNIST from DPTRAIN_DATA_DIR or <see cref="Library.DefaultFashionMnistDirectory"/>.</summary>
  public static Dataset LoadFashionMnist(DatasetPart part) { return LoadFashionMnist(null, part); }

  /// <summary>Loads byte-level text: every byte is a token (vocabulary <see cref="Library.TextVocabulary"/>), cut
  /// into windows of <paramref name="contextLength"/> + 1 bytes: a sample's tokens are the first contextLength,
  /// its targets the next byte at every position. The last <paramref name="validationFraction"/> of the bytes
  /// make the validation part, the rest the training part (returned).</summary>
  /// <param name="path">A UTF-8 text file, or a directory whose text files are read in name order.</param>
  /// <param name="contextLength">Tokens per sample, 1 to 2^20.</param>
  /// <param name="validationFraction">In (0, 1), e.g. 0.1.</param>
  /// <param name="validation">Receives the validation part (the caller disposes it).</param>
  /// <exception cref="IOFormatException">Status IO when the path cannot be read; Status Format for a file that
  /// is not UTF-8 text.</exception>
  /// <exception cref="InvalidArgumentException">A bad length or fraction, or a part too short for one
  /// window.</exception>
  public static Dataset LoadText(string path, ulong contextLength, double validationFraction, out Dataset validation) {
    using (TextParts parts = LoadTextParts(path, contextLength, validationFraction)) {
      Dataset train = parts.TakeTrain();
      validation = parts.TakeValidation();
      return train;
    }
  }
}

}
