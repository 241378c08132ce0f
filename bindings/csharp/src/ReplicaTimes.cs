// One replica's share of a trainer's last step call (Trainer.GetReplicaTimes).
using System;
using System.Globalization;

namespace DPTrain {

/// <summary>One replica's share of a <see cref="Trainer"/>'s last step call (<see cref="Trainer.GetReplicaTimes"/>,
/// the C API's <c>dpt_trainer_replica_times</c>, docs/profiling.md): where the call's wall time went on that
/// device, and how fast its gradient reduction moved the bytes. A snapshot, an immutable value; all 0 before the
/// first step.</summary>
public struct ReplicaTimes : IEquatable<ReplicaTimes> {
  /// <summary>The four times, in seconds, and the bus bandwidth, in bytes per second, as the library reports
  /// them.</summary>
  public ReplicaTimes(double computeSeconds, double communicationSeconds, double updateSeconds, double idleSeconds,
                      double busBandwidth) {
    ComputeSeconds = computeSeconds;
    CommunicationSeconds = communicationSeconds;
    UpdateSeconds = updateSeconds;
    IdleSeconds = idleSeconds;
    BusBandwidth = busBandwidth;
  }

  /// <summary>Its forward and backward pass, in seconds.</summary>
  public double ComputeSeconds { get; }

  /// <summary>Its gradient reduction, in seconds: on its own thread after backward, or (gradient buckets, sharded
  /// gradients) on its communication thread during backward; 0 when the call reduced nothing (a micro-batch before
  /// the last of its window, without buckets) or on one device.</summary>
  public double CommunicationSeconds { get; }

  /// <summary>Its update, in seconds: the norm, the optimizer step and, sharded, the all-gather; 0 without an
  /// update.</summary>
  public double UpdateSeconds { get; }

  /// <summary>The rest of the call's wall time on this device, in seconds: waiting for slower devices, or for a
  /// reduction that backward did not hide.</summary>
  public double IdleSeconds { get; }

  /// <summary>Bytes per second of its reduction as NCCL's tests count bus bandwidth: the float32 gradient's bytes
  /// times 2 (K - 1) / K for an all-reduce, (K - 1) / K for a reduce-scatter, over
  /// <see cref="CommunicationSeconds"/>; 0 without a reduction.</summary>
  public double BusBandwidth { get; }

  /// <summary>True when all five figures are equal.</summary>
  public bool Equals(ReplicaTimes other) {
    return ComputeSeconds.Equals(other.ComputeSeconds) && CommunicationSeconds.Equals(other.CommunicationSeconds)
        && UpdateSeconds.Equals(other.UpdateSeconds) && IdleSeconds.Equals(other.IdleSeconds)
        && BusBandwidth.Equals(other.BusBandwidth);
  }

  /// <summary>True for an equal <see cref="ReplicaTimes"/>.</summary>
  public override bool Equals(object obj) { return obj is ReplicaTimes && Equals((ReplicaTimes)obj); }

  /// <summary>A hash of the five figures.</summary>
  public override int GetHashCode() {
    int h = ComputeSeconds.GetHashCode();
    foreach (double v in new[] { CommunicationSeconds, UpdateSeconds, IdleSeconds, BusBandwidth })
      h = unchecked(h * 31 + v.GetHashCode());
    return h;
  }

  /// <summary>True when all five figures are equal.</summary>
  public static bool operator ==(ReplicaTimes a, ReplicaTimes b) { return a.Equals(b); }

  /// <summary>True when a figure differs.</summary>
  public static bool operator !=(ReplicaTimes a, ReplicaTimes b) { return !a.Equals(b); }

  /// <summary>Four significant digits each, e.g. "compute 0.0012 s, communication 0.0003 s, update 0.0001 s, idle
  /// 0.0002 s, bus bandwidth 9.1E+07 B/s".</summary>
  public override string ToString() {
    return string.Format(CultureInfo.InvariantCulture,
                         "compute {0:G4} s, communication {1:G4} s, update {2:G4} s, idle {3:G4} s, bus bandwidth " +
                         "{4:G4} B/s", ComputeSeconds, CommunicationSeconds, UpdateSeconds, IdleSeconds,
                         BusBandwidth);
  }
}

}
