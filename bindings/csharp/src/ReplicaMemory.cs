// The memory one replica of a trainer holds on its device (Trainer.GetReplicaMemory).
using System;

namespace DPTrain {

/// <summary>The bytes one replica of a <see cref="Trainer"/> holds in its device's memory, by what they are for
/// (<see cref="Trainer.GetReplicaMemory"/>, the C API's <c>dpt_trainer_replica_memory</c>): a snapshot, an
/// immutable value.</summary>
public struct ReplicaMemory : IEquatable<ReplicaMemory> {
  /// <summary>The six counts, in bytes (<paramref name="total"/> is their sum as the library reports
  /// it).</summary>
  public ReplicaMemory(ulong parameters, ulong gradients, ulong optimizerState, ulong buffers, ulong activations,
                       ulong total) {
    Parameters = parameters;
    Gradients = gradients;
    OptimizerState = optimizerState;
    Buffers = buffers;
    Activations = activations;
    Total = total;
  }

  /// <summary>The parameters (float32): 4 bytes per parameter; with <see cref="ShardMode.Parameters"/>, those of
  /// the replica's own range only (about 1/K of them over K devices) plus the gather buffer each pass copies the
  /// buckets of the parameters into.</summary>
  public ulong Parameters { get; }

  /// <summary>The summed gradient (float32, one per parameter): 4 bytes per parameter; with
  /// <see cref="ShardMode.Gradients"/> or <see cref="ShardMode.Parameters"/>, that of the replica's own range of
  /// the parameters only (about 1/K of it over K devices) plus the two staging buckets backward writes the
  /// gradient buckets into.</summary>
  public ulong Gradients { get; }

  /// <summary>Momentum or Adam's moments (AdamW: 8 bytes per parameter): with
  /// <see cref="ShardMode.Optimizer"/>, <see cref="ShardMode.Gradients"/> or <see cref="ShardMode.Parameters"/>,
  /// those of the replica's own range of the parameters only, about 1/K of them over K devices.</summary>
  public ulong OptimizerState { get; }

  /// <summary>The running statistics (batch norm); 0 without batch norm.</summary>
  public ulong Buffers { get; }

  /// <summary>Everything the replica's passes allocate: inputs, activations, what ops keep for backward, gradient
  /// slots and scratch; it grows with the largest slice seen so far.</summary>
  public ulong Activations { get; }

  /// <summary>The sum of the five counts above.</summary>
  public ulong Total { get; }

  /// <summary>True when all six counts are equal.</summary>
  public bool Equals(ReplicaMemory other) {
    return Parameters == other.Parameters && Gradients == other.Gradients && OptimizerState == other.OptimizerState
        && Buffers == other.Buffers && Activations == other.Activations && Total == other.Total;
  }

  /// <summary>True for an equal <see cref="ReplicaMemory"/>.</summary>
  public override bool Equals(object obj) { return obj is ReplicaMemory && Equals((ReplicaMemory)obj); }

  /// <summary>A hash of the six counts.</summary>
  public override int GetHashCode() {
    ulong h = Parameters;
    foreach (ulong v in new[] { Gradients, OptimizerState, Buffers, Activations, Total }) h = h * 31 + v;
    return h.GetHashCode();
  }

  /// <summary>True when all six counts are equal.</summary>
  public static bool operator ==(ReplicaMemory a, ReplicaMemory b) { return a.Equals(b); }

  /// <summary>True when a count differs.</summary>
  public static bool operator !=(ReplicaMemory a, ReplicaMemory b) { return !a.Equals(b); }

  /// <summary>e.g. "parameters 1292, gradients 1292, optimizer state 2584, buffers 0, activations 4096, total
  /// 9264".</summary>
  public override string ToString() {
    return string.Format(
        "parameters {0}, gradients {1}, optimizer state {2}, buffers {3}, activations {4}, total {5}", Parameters,
        Gradients, OptimizerState, Buffers, Activations, Total);
  }
}

}
