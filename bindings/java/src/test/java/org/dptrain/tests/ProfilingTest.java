package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.dptrain.*;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Trainer.replicaTimes and replicaTotals (dpt_trainer_replica_times, _totals) and the timeline, Trainer.traceStart / traceWrite
 * (dpt_trainer_trace_start / _write): docs/profiling.md.
 */
class ProfilingTest {
  static final int DEVICES = 3;
  static final int SIDE = 8;
  static final int FEATURES = SIDE * SIDE;
  static final int CLASSES = 3;
  static final int SAMPLES = 24; // 8 per device
  /** 64 -> 128 -> 3. */
  static final long PARAMETERS = FEATURES * 128 + 128 + 128 * CLASSES + CLASSES;

  @TempDir Path tmp;

  /** 1x8x8 -> dense 128 -> relu -> dense 3: 8707 parameters. */
  static Model mlp() {
    Model m = new Model(1, SIDE, SIDE);
    m.addDense(128);
    m.addActivation(Activation.ACTIVATION_RELU);
    m.addDense(CLASSES);
    return m;
  }

  /** Seed 7, one micro-batch per step, no gradient buckets (one all-reduce on each device's thread). */
  static Trainer trainer(Context three, Model m) {
    TrainerOptions o = Fixtures.seeded(7);
    o.setAccumulationSteps(1);
    o.setBucketBytes(0);
    return new Trainer(three, m, o, Fixtures.sgd(0.1f));
  }

  static StepResult step(Trainer t) {
    StepResult r = t.step(Fixtures.inputs(SAMPLES, FEATURES, CLASSES), Fixtures.labels(SAMPLES, CLASSES));
    assertTrue(r.getApplied(), "the step updated the parameters");
    return r;
  }

  /**
   * Before any step every figure of every replica is 0. After a step each replica computed, all-reduced and
   * updated (each > 0), its idle time is not negative, the four add up to the step's total seconds (the reduction
   * ran on the device's own thread: no buckets), and its bus bandwidth times its communication seconds is the
   * all-reduce's bus bytes, parameters * 4 * 2 (K - 1) / K.
   */
  @Test
  void replicaTimesAddUpToTheStep() {
    try (Context three = new Context(DEVICES, 0); Model m = mlp(); Trainer t = trainer(three, m)) {
      assertEquals(DEVICES, t.deviceCount());
      assertEquals(PARAMETERS, t.parameterCount());
      ReplicaTimes zero = new ReplicaTimes(0, 0, 0, 0, 0);
      for (int d = 0; d < DEVICES; ++d) assertEquals(zero, t.replicaTimes(d), "before any step, device " + d);

      StepResult r = step(t);
      double total = r.getTotalSeconds();
      assertTrue(total > 0, "total " + total);
      double busBytes = PARAMETERS * 4.0 * 2.0 * (DEVICES - 1) / DEVICES;
      for (int d = 0; d < DEVICES; ++d) {
        ReplicaTimes times = t.replicaTimes(d);
        String what = "device " + d + ": " + times;
        assertTrue(times.computeSeconds() > 0, what);
        assertTrue(times.communicationSeconds() > 0, what);
        assertTrue(times.updateSeconds() > 0, what);
        assertTrue(times.idleSeconds() >= 0, what);
        double sum = times.computeSeconds() + times.communicationSeconds() + times.updateSeconds()
            + times.idleSeconds();
        assertEquals(total, sum, 1e-9 * total, what + ": the parts against the step's total " + total);
        assertEquals(busBytes, times.busBandwidth() * times.communicationSeconds(), 1e-6 * busBytes,
            what + ": bus bytes");
        assertEquals(times, t.replicaTimes(d), what + ": a second read");
      }
    }
  }

  /**
   * replicaTotals: all 0 before any step; after two steps each figure is the sum of the two steps' (the same
   * additions), the bus bandwidth their bytes over their seconds; an evaluation adds nothing; a device past the
   * last is refused.
   */
  @Test
  void replicaTotalsAddUpTheSteps() {
    try (Context three = new Context(DEVICES, 0); Model m = mlp(); Trainer t = trainer(three, m)) {
      assertEquals(new ReplicaTimes(0, 0, 0, 0, 0), t.replicaTotals(0), "before any step");
      double[][] sum = new double[DEVICES][5];
      for (int s = 0; s < 2; ++s) {
        step(t);
        for (int d = 0; d < DEVICES; ++d) {
          ReplicaTimes times = t.replicaTimes(d);
          sum[d][0] += times.computeSeconds();
          sum[d][1] += times.communicationSeconds();
          sum[d][2] += times.updateSeconds();
          sum[d][3] += times.idleSeconds();
          sum[d][4] += times.busBandwidth() * times.communicationSeconds();
        }
      }
      t.evaluate(Fixtures.inputs(SAMPLES, FEATURES, CLASSES), Fixtures.labels(SAMPLES, CLASSES));
      for (int d = 0; d < DEVICES; ++d) {
        ReplicaTimes totals = t.replicaTotals(d);
        String what = "device " + d + ": " + totals;
        assertEquals(sum[d][0], totals.computeSeconds(), 0.0, what);
        assertEquals(sum[d][1], totals.communicationSeconds(), 0.0, what);
        assertEquals(sum[d][2], totals.updateSeconds(), 0.0, what);
        assertEquals(sum[d][3], totals.idleSeconds(), 0.0, what);
        double bandwidth = sum[d][4] / sum[d][1];
        assertEquals(bandwidth, totals.busBandwidth(), 1e-9 * bandwidth, what);
      }
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> t.replicaTotals(DEVICES));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertTrue(e.getLibraryMessage().contains("dpt_trainer_replica_totals"), e.getLibraryMessage());
    }
  }

  /**
   * A device past the last (or a negative one) is an InvalidArgumentException with ERROR_OUT_OF_RANGE, and the
   * trainer is unharmed.
   */
  @Test
  void anOutOfRangeDeviceIsRefused() {
    try (Context three = new Context(DEVICES, 0); Model m = mlp(); Trainer t = trainer(three, m)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> t.replicaTimes(DEVICES));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertTrue(e.getLibraryMessage().contains("dpt_trainer_replica_times"), e.getLibraryMessage());
      e = assertThrows(InvalidArgumentException.class, () -> t.replicaTimes(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertEquals("Trainer.replicaTimes: device must not be negative (got -1)", e.getLibraryMessage());
      step(t);
      assertTrue(t.replicaTimes(DEVICES - 1).computeSeconds() > 0, "the trainer is unharmed");
    }
  }

  /**
   * traceStart(1000), one step and traceWrite give Chrome trace-event JSON (checked as text: the JDK has no JSON
   * parser) with a compute and a communication row per device and the ops' forward events; the write stops the
   * recording, so a second write is ERROR_INVALID_STATE.
   */
  @Test
  void aTraceOfOneStepIsWritten() throws IOException {
    try (Context three = new Context(DEVICES, 0); Model m = mlp(); Trainer t = trainer(three, m)) {
      t.traceStart(1000);
      step(t);
      Path path = tmp.resolve("trace.json");
      t.traceWrite(path.toString());
      String json = new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
      assertTrue(json.startsWith("{\"displayTimeUnit\""), json.substring(0, Math.min(80, json.length())));
      assertTrue(json.trim().endsWith("]}"), "the document ends");
      assertTrue(json.contains("\"traceEvents\""), "traceEvents");
      for (int d = 0; d < DEVICES; ++d) {
        assertTrue(json.contains("\"cpu:" + d + " compute\""), "device " + d + "'s compute row");
        assertTrue(json.contains("\"cpu:" + d + " communication\""), "device " + d + "'s communication row");
      }
      assertTrue(json.contains("\"ph\":\"X\""), "complete events");
      assertTrue(json.contains("\"cat\":\"forward\""), "forward events");
      assertTrue(json.contains("\"cat\":\"backward\""), "backward events");
      assertTrue(json.contains("\"name\":\"all-reduce\""), "the all-reduce after backward");
      assertTrue(json.contains("\"name\":\"update\""), "the updates");

      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> t.traceWrite(tmp.resolve("again.json").toString()));
      assertEquals(Status.ERROR_INVALID_STATE, e.getStatus());
      assertFalse(Files.exists(tmp.resolve("again.json")), "nothing written");
    }
  }

  /**
   * traceWrite without a recording is ERROR_INVALID_STATE; traceStart(0) ERROR_INVALID_ARGUMENT, above 2^24 (or
   * negative) ERROR_OUT_OF_RANGE; an unwritable path is an IOFormatException (ERROR_IO) that leaves the recording
   * stopped; a null path ERROR_NULL_POINTER. The trainer still trains and traces afterwards.
   */
  @Test
  void traceMisuseIsRefused() throws IOException {
    try (Context three = new Context(DEVICES, 0); Model m = mlp(); Trainer t = trainer(three, m)) {
      String path = tmp.resolve("never.json").toString();
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> t.traceWrite(path));
      assertEquals(Status.ERROR_INVALID_STATE, e.getStatus());
      assertTrue(e.getLibraryMessage().contains("dpt_trainer_trace_write"), e.getLibraryMessage());

      e = assertThrows(InvalidArgumentException.class, () -> t.traceStart(0));
      assertEquals(Status.ERROR_INVALID_ARGUMENT, e.getStatus());
      assertTrue(e.getLibraryMessage().contains("dpt_trainer_trace_start"), e.getLibraryMessage());
      e = assertThrows(InvalidArgumentException.class, () -> t.traceStart((1L << 24) + 1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      e = assertThrows(InvalidArgumentException.class, () -> t.traceStart(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertEquals("Trainer.traceStart: maxEvents must not be negative (got -1)", e.getLibraryMessage());
      e = assertThrows(InvalidArgumentException.class, () -> t.traceWrite(path));
      assertEquals(Status.ERROR_INVALID_STATE, e.getStatus(), "the refused starts started nothing");

      t.traceStart(10);
      e = assertThrows(InvalidArgumentException.class, () -> t.traceWrite(null));
      assertEquals(Status.ERROR_NULL_POINTER, e.getStatus());
      IOFormatException io = assertThrows(IOFormatException.class,
          () -> t.traceWrite(tmp.resolve("no-such-dir").resolve("trace.json").toString()));
      assertEquals(Status.ERROR_IO, io.getStatus());
      e = assertThrows(InvalidArgumentException.class, () -> t.traceWrite(path));
      assertEquals(Status.ERROR_INVALID_STATE, e.getStatus(), "the failed write stopped the recording");

      t.traceStart(10);
      step(t);
      t.traceWrite(path);
      assertTrue(Files.size(Path.of(path)) > 0, "a trace after the refusals");
    }
  }
}
