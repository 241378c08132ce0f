package org.dptrain;

/**
 * One replica's share of a {@link Trainer}'s last step call ({@link Trainer#replicaTimes(long)}, the C API's
 * {@code dpt_trainer_replica_times}, docs/profiling.md): where the call's wall time went on that device, and how
 * fast its gradient reduction moved the bytes. A snapshot, an immutable value; all 0 before the first step.
 */
public final class ReplicaTimes {
  private final double computeSeconds;
  private final double communicationSeconds;
  private final double updateSeconds;
  private final double idleSeconds;
  private final double busBandwidth;

  /** The four times, in seconds, and the bus bandwidth, in bytes per second, as the library reports them. */
  public ReplicaTimes(double computeSeconds, double communicationSeconds, double updateSeconds, double idleSeconds,
                      double busBandwidth) {
    this.computeSeconds = computeSeconds;
    this.communicationSeconds = communicationSeconds;
    this.updateSeconds = updateSeconds;
    this.idleSeconds = idleSeconds;
    this.busBandwidth = busBandwidth;
  }

  /** Its forward and backward pass, in seconds. */
  public double computeSeconds() {
    return computeSeconds;
  }

  /**
   * Its gradient reduction, in seconds: on its own thread after backward, or (gradient buckets, sharded
   * gradients) on its communication thread during backward; 0 when the call reduced nothing (a micro-batch
   * before the last of its window, without buckets) or on one device.
   */
  public double communicationSeconds() {
    return communicationSeconds;
  }

  /** Its update, in seconds: the norm, the optimizer step and, sharded, the all-gather; 0 without an update. */
  public double updateSeconds() {
    return updateSeconds;
  }

  /**
   * The rest of the call's wall time on this device, in seconds: waiting for slower devices, or for a reduction
   * that backward did not hide.
   */
  public double idleSeconds() {
    return idleSeconds;
  }

  /**
   * Bytes per second of its reduction as NCCL's tests count bus bandwidth: the float32 gradient's bytes times
   * 2 (K - 1) / K for an all-reduce, (K - 1) / K for a reduce-scatter, over {@link #communicationSeconds()}; 0
   * without a reduction.
   */
  public double busBandwidth() {
    return busBandwidth;
  }

  @Override
  public boolean equals(Object other) {
    if (this == other) return true;
    if (!(other instanceof ReplicaTimes)) return false;
    ReplicaTimes t = (ReplicaTimes) other;
    return Double.compare(computeSeconds, t.computeSeconds) == 0
        && Double.compare(communicationSeconds, t.communicationSeconds) == 0
        && Double.compare(updateSeconds, t.updateSeconds) == 0 && Double.compare(idleSeconds, t.idleSeconds) == 0
        && Double.compare(busBandwidth, t.busBandwidth) == 0;
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(computeSeconds, communicationSeconds, updateSeconds, idleSeconds, busBandwidth);
  }

  /**
   * Four significant digits each, e.g. "compute 0.001200 s, communication 0.0003000 s, update 0.0001000 s, idle
   * 0.0002000 s, bus bandwidth 9.100e+07 B/s".
   */
  @Override
  public String toString() {
    return String.format(java.util.Locale.ROOT,
        "compute %.4g s, communication %.4g s, update %.4g s, idle %.4g s, bus bandwidth %.4g B/s", computeSeconds,
        communicationSeconds, updateSeconds, idleSeconds, busBandwidth);
  }
}
