package org.dptrain;

/**
 * The bytes one replica of a {@link Trainer} holds in its device's memory, by what they are for
 * ({@link Trainer#replicaMemory(long)}, the C API's {@code dpt_trainer_replica_memory}): a snapshot, an
 * immutable value. Each count is an unsigned 64-bit number held in a {@code long}.
 */
public final class ReplicaMemory {
  private final long parameters;
  private final long gradients;
  private final long optimizerState;
  private final long buffers;
  private final long activations;
  private final long total;

  /** The six counts, in bytes ({@code total} is their sum as the library reports it). */
  public ReplicaMemory(long parameters, long gradients, long optimizerState, long buffers, long activations,
                       long total) {
    this.parameters = parameters;
    this.gradients = gradients;
    this.optimizerState = optimizerState;
    this.buffers = buffers;
    this.activations = activations;
    this.total = total;
  }

  /**
   * The parameters (float32): 4 bytes per parameter; with {@link ShardMode#SHARD_PARAMETERS}, those of the
   * replica's own range only (about 1/K of them over K devices) plus the gather buffer each pass copies the
   * buckets of the parameters into.
   */
  public long parameters() {
    return parameters;
  }

  /**
   * The summed gradient (float32, one per parameter): 4 bytes per parameter; with
   * {@link ShardMode#SHARD_GRADIENTS} or {@link ShardMode#SHARD_PARAMETERS}, that of the replica's own range of
   * the parameters only (about 1/K of it over K devices) plus the two staging buckets backward writes the
   * gradient buckets into.
   */
  public long gradients() {
    return gradients;
  }

  /**
   * Momentum or Adam's moments (AdamW: 8 bytes per parameter): with {@link ShardMode#SHARD_OPTIMIZER},
   * {@link ShardMode#SHARD_GRADIENTS} or {@link ShardMode#SHARD_PARAMETERS}, those of the replica's own range of
   * the parameters only, about 1/K of them over K devices.
   */
  public long optimizerState() {
    return optimizerState;
  }

  /** The running statistics (batch norm); 0 without batch norm. */
  public long buffers() {
    return buffers;
  }

  /**
   * Everything the replica's passes allocate: inputs, activations, what ops keep for backward, gradient slots and
   * scratch; it grows with the largest slice seen so far.
   */
  public long activations() {
    return activations;
  }

  /** The sum of the five counts above. */
  public long total() {
    return total;
  }

  @Override
  public boolean equals(Object other) {
    if (this == other) return true;
    if (!(other instanceof ReplicaMemory)) return false;
    ReplicaMemory m = (ReplicaMemory) other;
    return parameters == m.parameters && gradients == m.gradients && optimizerState == m.optimizerState
        && buffers == m.buffers && activations == m.activations && total == m.total;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(parameters, gradients, optimizerState, buffers, activations, total);
  }

  /** E.g. "parameters 1292, gradients 1292, optimizer state 2584, buffers 0, activations 4096, total 9264". */
  @Override
  public String toString() {
    return "parameters " + Long.toUnsignedString(parameters) + ", gradients " + Long.toUnsignedString(gradients)
        + ", optimizer state " + Long.toUnsignedString(optimizerState) + ", buffers "
        + Long.toUnsignedString(buffers) + ", activations " + Long.toUnsignedString(activations) + ", total "
        + Long.toUnsignedString(total);
  }
}
