// Hand-written half of Model: properties, and the graph builders over TensorId.
using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Globalization;

namespace DPTrain {

/// <summary>A model description (a graph of ops and the shapes of its tensors, no weights). Build one layer
/// after layer with the Add* methods, as a graph with the builders that name their inputs (<see cref="Conv2d"/>,
/// <see cref="Add"/> ...), read one from JSON with <see cref="FromJson"/>, or take a built-in with
/// <see cref="Builtin"/> ("lenet", "mlp", "resnet18" or "gpt-mini"). A token model (<see cref="CreateTokens"/>)
/// reads int32 tokens through <see cref="TokenEmbedding"/>. Trainers copy it, so it may be disposed after
/// creating them.</summary>
/// <remarks>
/// Graph builders read tensors by <see cref="TensorId"/> (<see cref="Input"/> is the input) and return the id of
/// the tensor they make, which becomes the model's <see cref="Output"/> (the logits); a null name names the node
/// by its index. A failed call (a tensor that does not exist, a bad or taken name, shapes the op does not take)
/// throws <see cref="InvalidArgumentException"/> and leaves the model unchanged.
/// <code>
/// TensorId BasicBlock(Model m, TensorId x, ulong channels, ulong stride, string name) {
///   TensorId y = m.Conv2d(x, channels, 3, stride, 1, false, name + ".conv1");
///   y = m.Activation(m.BatchNorm(y, name: name + ".bn1"), DPTrain.Activation.Relu, name + ".relu1");
///   y = m.BatchNorm(m.Conv2d(y, channels, 3, 1, 1, false, name + ".conv2"), name: name + ".bn2");
///   TensorId s = x;
///   if (stride != 1 || (ulong)m.GetTensorShape(x)[0] != channels)
///     s = m.BatchNorm(m.Conv2d(x, channels, 1, stride, 0, false, name + ".downsample.0"), name: name + ".downsample.1");
///   return m.Activation(m.Add(y, s, name + ".add"), DPTrain.Activation.Relu, name + ".relu2");
/// }
/// </code>
/// Builders are refused with <see cref="DPTrain.Status.Busy"/> while another thread is in a call on the same
/// model; queries may run on several threads at once.
/// </remarks>
public partial class Model {
  /// <summary>Floats per input sample (channels * height * width); a token model: tokens per sample.</summary>
  public ulong InputSize { get { return GetInputSize(); } }

  /// <summary>Whether the model reads float32 values (<see cref="DPTrain.InputType.Float32"/>) or int32 tokens
  /// (<see cref="DPTrain.InputType.Tokens"/>, a model made by <see cref="CreateTokens"/>: train it with
  /// <see cref="Trainer.StepTokens"/>).</summary>
  public InputType InputType { get { return GetInputType(); } }

  /// <summary>Number of outputs (classes): the floats of one sample of the output tensor.</summary>
  public ulong OutputSize { get { return GetOutputSize(); } }

  /// <summary>Number of trainable parameters (floats).</summary>
  public ulong ParameterCount { get { return GetParameterCount(); } }

  /// <summary>Number of floats of buffers (running statistics of batch norms) of one replica; 0 without
  /// batch norm.</summary>
  public ulong BufferCount { get { return GetBufferCount(); } }

  /// <summary>Number of layers (nodes).</summary>
  public ulong LayerCount { get { return GetLayerCount(); } }

  /// <summary>Number of tensors: 1 (the input) + the number of nodes; ids are 0 .. TensorCount - 1.</summary>
  public ulong TensorCount { get { return GetTensorCount(); } }

  /// <summary>Tensor 0, the input.</summary>
  public TensorId Input { get { return TensorId.Input; } }

  /// <summary>The output tensor, the logits of the loss (<see cref="Input"/> while the model has no node). Each
  /// added node becomes the output; setting it picks another tensor (the next added node moves it again).</summary>
  /// <exception cref="InvalidArgumentException">Set to a tensor that does not exist.</exception>
  public TensorId Output {
    get { return new TensorId(GetOutputTensor()); }
    set { SetOutputTensor(value.Value); }
  }

  /// <summary>The dimensions of one sample of a tensor, e.g. {64, 28, 28} (1 to 4 of them).</summary>
  /// <exception cref="InvalidArgumentException">The tensor does not exist.</exception>
  public int[] GetTensorShape(TensorId tensor) { return ParseDims(GetTensorShapeText(tensor.Value)); }

  // ---- Graph builders (each returns the id of the tensor it makes) ----

  /// <summary>A 2-D convolution of <paramref name="input"/> ([c, h, w]) with square kernels; bias false: no
  /// bias per output channel (before a batch norm).</summary>
  public TensorId Conv2d(TensorId input, ulong outChannels, ulong kernel, ulong stride = 1, ulong padding = 0,
                         bool bias = true, string name = null) {
    return new TensorId(Conv2dNative(input.Value, outChannels, kernel, stride, padding, bias, name));
  }

  /// <summary>A fully connected layer with <paramref name="units"/> outputs over <paramref name="input"/>
  /// (flattened).</summary>
  public TensorId Dense(TensorId input, ulong units, bool bias = true, string name = null) {
    return new TensorId(DenseNative(input.Value, units, bias, name));
  }

  /// <summary>A fully connected layer over the last dimension of <paramref name="input"/> ([..., in] -> [...,
  /// units], every row by one weight [units, in]), as PyTorch's nn.Linear.</summary>
  public TensorId Linear(TensorId input, ulong units, bool bias = true, string name = null) {
    return new TensorId(LinearNative(input.Value, units, bias, name));
  }

  /// <summary>A token embedding: the tokens [T] of a token model's <see cref="Input"/> -> [T, features], row t
  /// the table row of token t (parameter weight [vocabulary, features], GPT-2's wte).</summary>
  /// <exception cref="InvalidArgumentException">The input is not the model's token input, or a size is out of
  /// range.</exception>
  public TensorId TokenEmbedding(TensorId input, ulong vocabulary, ulong features, string name = null) {
    return new TensorId(TokenEmbeddingNative(input.Value, vocabulary, features, name));
  }

  /// <summary>A learned position embedding added to <paramref name="input"/> [T, C]: y[t] = x[t] + weight[t]
  /// (parameter weight [T, C], GPT-2's wpe).</summary>
  public TensorId PositionEmbedding(TensorId input, string name = null) {
    return new TensorId(PositionEmbeddingNative(input.Value, name));
  }

  /// <summary>Multi-head causal self-attention over <paramref name="input"/> [T, 3C] (queries, keys and values
  /// side by side, as a <see cref="Linear"/> to 3C makes them) -> [T, C]; <paramref name="heads"/> divides
  /// C; <paramref name="dropout"/> drops attention probabilities in training (keyed by the global sample, as
  /// Dropout), 0 = none.</summary>
  public TensorId CausalSelfAttention(TensorId input, ulong heads, string name = null, float dropout = 0.0f) {
    return new TensorId(CausalSelfAttentionNative(input.Value, heads, dropout, name));
  }

  /// <summary>A batch norm over the channels of <paramref name="input"/> ([c] or [c, h, w]), as PyTorch's
  /// BatchNorm2d: parameters weight and bias, buffers running_mean and running_var; running = (1 - momentum) *
  /// running + momentum * batch.</summary>
  public TensorId BatchNorm(TensorId input, float eps = 1e-5f, float momentum = 0.1f, string name = null) {
    return new TensorId(BatchNormNative(input.Value, eps, momentum, name));
  }

  /// <summary>A layer norm over the last dimension of each sample (parameters weight and bias).</summary>
  public TensorId LayerNorm(TensorId input, float eps = 1e-5f, string name = null) {
    return new TensorId(LayerNormNative(input.Value, eps, name));
  }

  /// <summary>An elementwise activation of <paramref name="input"/>.</summary>
  public TensorId Activation(TensorId input, Activation activation, string name = null) {
    return new TensorId(ActivationNative(input.Value, activation, name));
  }

  /// <summary>Pooling over square windows of <paramref name="input"/> ([c, h, w]; no padding, the output size
  /// rounds down).</summary>
  public TensorId Pool(TensorId input, PoolKind kind, ulong window, ulong stride, string name = null) {
    return new TensorId(PoolNative(input.Value, kind, window, stride, name));
  }

  /// <summary>Global average pooling: [c, h, w] -> [c].</summary>
  public TensorId GlobalAvgPool(TensorId input, string name = null) {
    return new TensorId(GlobalAvgPoolNative(input.Value, name));
  }

  /// <summary>A flatten: any shape -> its size.</summary>
  public TensorId Flatten(TensorId input, string name = null) {
    return new TensorId(FlattenNative(input.Value, name));
  }

  /// <summary>Inverted dropout of <paramref name="input"/> (0 &lt;= rate &lt; 1; identity in evaluation).</summary>
  /// <exception cref="InvalidArgumentException">Status OutOfRange for a rate outside [0, 1).</exception>
  public TensorId Dropout(TensorId input, float rate, string name = null) {
    return new TensorId(DropoutNative(input.Value, rate, name));
  }

  /// <summary>The elementwise sum of two tensors of one shape (a residual join).</summary>
  public TensorId Add(TensorId a, TensorId b, string name = null) {
    return new TensorId(AddNative(a.Value, b.Value, name));
  }

  /// <summary>The concatenation of two tensors along dimension 0 (channels); their other dimensions must
  /// agree.</summary>
  public TensorId Concat(TensorId a, TensorId b, string name = null) {
    return new TensorId(Concat2Native(a.Value, b.Value, name));
  }

  /// <summary>The concatenation of three tensors along dimension 0 (channels).</summary>
  public TensorId Concat(TensorId a, TensorId b, TensorId c, string name = null) {
    return new TensorId(Concat3Native(a.Value, b.Value, c.Value, name));
  }

  /// <summary>Ties the parameter named <paramref name="parameter"/> (e.g. "lm_head.weight") to the parameter
  /// named <paramref name="source"/> of an earlier node ("transformer.wte.weight"): one tensor, as PyTorch's
  /// <c>lm_head.weight = wte.weight</c> (GPT-2's tied LM head). Both nodes read the source's values; its gradient
  /// is the sum of both nodes' contributions. The tied parameter leaves the flat parameter vector and
  /// <see cref="NamedParameters"/> (<see cref="ParameterCount"/> drops by its size, the offsets of later
  /// parameters move down); the description, <see cref="ToJson"/> ("ties") and checkpoints name the tie. A source
  /// that is itself tied stands for the parameter it is tied to.</summary>
  /// <param name="parameter">"&lt;node name&gt;.&lt;parameter&gt;" of a later node than the source's.</param>
  /// <param name="source">"&lt;node name&gt;.&lt;parameter&gt;" of the same shape.</param>
  /// <exception cref="InvalidArgumentException">Status InvalidArgument (the model unchanged) for a name that is
  /// not "&lt;node&gt;.&lt;parameter&gt;" of the model, a parameter already tied or the source of a tie, shapes
  /// that differ, or a source whose node is not before the parameter's; Status NullPointer for a null
  /// name.</exception>
  public void Tie(string parameter, string source) {
    TieNative(parameter, source);
  }

  // ---- Named parameters and buffers ----

  /// <summary>The named tensors of one kind, in the order of the flat vector: parameters in node order (each
  /// node's weight, then bias), back to back, so that their offsets and sizes cover
  /// <see cref="ParameterCount"/> (buffers: <see cref="BufferCount"/>) exactly. A snapshot: building on the
  /// model does not change a list already returned.</summary>
  public IReadOnlyList<NamedTensor> GetNamedTensors(TensorKind kind) {
    ulong n = GetNamedTensorCount(kind);
    var list = new List<NamedTensor>(checked((int)n));
    for (ulong i = 0; i < n; ++i)
      list.Add(new NamedTensor(GetNamedTensorName(kind, i), kind, ParseDims(GetNamedTensorShapeText(kind, i)),
                               GetNamedTensorOffset(kind, i)));
    return new ReadOnlyCollection<NamedTensor>(list);
  }

  /// <summary>The named parameters ("conv1.weight" ...), as <see cref="GetNamedTensors"/> gives them.</summary>
  public IReadOnlyList<NamedTensor> NamedParameters { get { return GetNamedTensors(TensorKind.Parameter); } }

  /// <summary>The named buffers ("bn1.running_mean" ...), as <see cref="GetNamedTensors"/> gives them.</summary>
  public IReadOnlyList<NamedTensor> NamedBuffers { get { return GetNamedTensors(TensorKind.Buffer); } }

  static int[] ParseDims(string text) {
    if (text.Length == 0) return new int[0];
    string[] parts = text.Split(',');
    var dims = new int[parts.Length];
    for (int i = 0; i < parts.Length; ++i) dims[i] = int.Parse(parts[i], NumberStyles.None, CultureInfo.InvariantCulture);
    return dims;
  }

  /// <summary>A one-line description of the model (its layers and sizes), or "Model (disposed)".</summary>
  public override string ToString() { return IsDisposed ? "Model (disposed)" : Describe(); }
}

}
