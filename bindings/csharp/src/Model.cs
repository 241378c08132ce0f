// Hand-written half of Model.
namespace DPTrain {

/// <summary>A sequential model description (layers, no parameters): build one with the Add* methods or
/// take a built-in with <see cref="Builtin"/>. Trainers copy it, so it may be disposed after creating them.</summary>
public partial class Model {
  /// <summary>Floats per input sample (channels * height * width).</summary>
  public ulong InputSize { get { return GetInputSize(); } }

  /// <summary>Number of outputs (classes) of the last layer.</summary>
  public ulong OutputSize { get { return GetOutputSize(); } }

  /// <summary>Number of trainable parameters (floats).</summary>
  public ulong ParameterCount { get { return GetParameterCount(); } }

  /// <summary>Number of layers.</summary>
  public ulong LayerCount { get { return GetLayerCount(); } }

  public override string ToString() { return IsDisposed ? "Model (disposed)" : Describe(); }
}

}
