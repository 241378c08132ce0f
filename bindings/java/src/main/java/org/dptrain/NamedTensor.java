package org.dptrain;

import java.util.Arrays;
import java.util.Objects;

/**
 * A named parameter or buffer of a {@link Model} ({@link Model#parameters()}, {@link Model#buffers()}): its
 * name ("layer1.0.conv1.weight"), kind, offset in the flat vector ({@code Trainer.getParameters()} or
 * {@code Trainer.getBuffers()}) and shape in PyTorch's layout ({@code conv2d} [out, in, k, k], {@code dense}
 * [out, in]). An immutable value.
 */
public final class NamedTensor {
  private final String name;
  private final TensorKind kind;
  private final long offset;
  private final int[] shape;

  public NamedTensor(String name, TensorKind kind, long offset, int[] shape) {
    this.name = Objects.requireNonNull(name, "name");
    this.kind = Objects.requireNonNull(kind, "kind");
    this.offset = offset;
    this.shape = Objects.requireNonNull(shape, "shape").clone();
  }

  /** The name, e.g. "bn1.running_mean". */
  public String name() {
    return name;
  }

  /** TENSOR_PARAMETER or TENSOR_BUFFER. */
  public TensorKind kind() {
    return kind;
  }

  /** The index of its first float in the flat parameter (or buffer) vector. */
  public long offset() {
    return offset;
  }

  /** Its dimensions (a copy). */
  public int[] shape() {
    return shape.clone();
  }

  /** Its number of floats: the product of the dimensions. */
  public long size() {
    long n = 1;
    for (int d : shape) n = Math.multiplyExact(n, (long) d);
    return n;
  }

  @Override
  public boolean equals(Object other) {
    if (this == other) return true;
    if (!(other instanceof NamedTensor)) return false;
    NamedTensor t = (NamedTensor) other;
    return name.equals(t.name) && kind == t.kind && offset == t.offset && Arrays.equals(shape, t.shape);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, kind, offset, Arrays.hashCode(shape));
  }

  /** E.g. "conv1.weight [64, 1, 3, 3] at 0". */
  @Override
  public String toString() {
    return name + " " + Arrays.toString(shape) + " at " + offset;
  }

  /** "64,3,3,3" (the SWIG layer's text) -> {64, 3, 3, 3}; "" -> {}. */
  static int[] parseShape(String text) {
    if (text.isEmpty()) return new int[0];
    String[] parts = text.split(",");
    int[] dims = new int[parts.length];
    for (int i = 0; i < parts.length; ++i) dims[i] = Math.toIntExact(Long.parseLong(parts[i]));
    return dims;
  }
}
