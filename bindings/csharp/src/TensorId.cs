// The id of a tensor of a graph model, and the named parameters and buffers of a model.
using System;

namespace DPTrain {

/// <summary>The id of a tensor of a <see cref="Model"/>: <see cref="Input"/> (0) is the input; each node the
/// graph builders add makes one new tensor, numbered in the order of the calls.</summary>
/// <remarks>An id is only a number: it means a tensor of the model that returned it. An id that does not exist
/// in a model is refused by its builders with an <see cref="InvalidArgumentException"/>
/// (<see cref="DPTrain.Status.InvalidArgument"/>).</remarks>
public struct TensorId : IEquatable<TensorId> {
  readonly ulong value;

  /// <summary>The tensor with this number.</summary>
  public TensorId(ulong value) { this.value = value; }

  /// <summary>Tensor 0, the model's input.</summary>
  public static TensorId Input { get { return new TensorId(0); } }

  /// <summary>The number (0 .. <see cref="Model.TensorCount"/> - 1).</summary>
  public ulong Value { get { return value; } }

  /// <summary>Whether both ids have the same number.</summary>
  public bool Equals(TensorId other) { return value == other.value; }
  /// <summary>Whether <paramref name="obj"/> is a TensorId with the same number.</summary>
  public override bool Equals(object obj) { return obj is TensorId && Equals((TensorId)obj); }
  /// <summary>The number's hash code.</summary>
  public override int GetHashCode() { return value.GetHashCode(); }
  /// <summary>Whether both ids have the same number.</summary>
  public static bool operator ==(TensorId a, TensorId b) { return a.value == b.value; }
  /// <summary>Whether the ids have different numbers.</summary>
  public static bool operator !=(TensorId a, TensorId b) { return a.value != b.value; }

  /// <summary>The number, e.g. 3 (ids are numbers in the C API and in JSON model files).</summary>
  public static explicit operator ulong(TensorId id) { return id.value; }
  /// <summary>The tensor with this number.</summary>
  public static explicit operator TensorId(ulong value) { return new TensorId(value); }

  /// <summary>"tensor N".</summary>
  public override string ToString() { return "tensor " + value; }
}

/// <summary>A named parameter or buffer of a model: where it lies in the flat vector of its kind
/// (<see cref="Trainer.GetParameters()"/> or <see cref="Trainer.GetBuffers()"/>) and its shape, in PyTorch's
/// layout (conv2d weight [out, in, k, k], dense weight [out, in]).</summary>
public sealed class NamedTensor {
  internal NamedTensor(string name, TensorKind kind, int[] shape, ulong offset) {
    Name = name;
    Kind = kind;
    this.shape = shape;
    Offset = offset;
    ulong size = 1;
    foreach (int d in shape) size = checked(size * (ulong)d);
    Size = size;
  }

  readonly int[] shape;

  /// <summary>"&lt;node&gt;.&lt;tensor&gt;", e.g. "layer1.0.bn1.running_mean" (a node without a name is named by
  /// its index: "3.weight").</summary>
  public string Name { get; private set; }

  /// <summary>Parameter (trainable) or buffer (running statistics).</summary>
  public TensorKind Kind { get; private set; }

  /// <summary>A copy of its dimensions, e.g. {64, 3, 3, 3}.</summary>
  public int[] Shape { get { return (int[])shape.Clone(); } }

  /// <summary>The index of its first float in the flat vector of its kind.</summary>
  public ulong Offset { get; private set; }

  /// <summary>Its number of floats, the product of <see cref="Shape"/>.</summary>
  public ulong Size { get; private set; }

  /// <summary>e.g. "conv1.weight [64,3,3,3] @0".</summary>
  /// <summary>"tensor N".</summary>
  public override string ToString() { return Name + " [" + string.Join(",", shape) + "] @" + Offset; }
}

}
