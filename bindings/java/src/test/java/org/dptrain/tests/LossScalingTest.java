package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/** PRECISION_FP16 and its dynamic loss scaling (trainer.h): options, step and fit results, refusals. */
class LossScalingTest {
  static final double TWO_TO_40 = Math.scalb(1.0, 40);

  static TrainerOptions fp16(long seed, double initialScale) {
    TrainerOptions o = Fixtures.seeded(seed);
    o.setPrecision(Precision.PRECISION_FP16);
    o.setInitialLossScale(initialScale);
    return o;
  }

  static void assertBitwiseEqual(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), what + ", element " + i);
    }
  }

  /**
   * From 2^40 the scaled gradient overflows float16: the first windows are skipped, not failed (even with
   * NONFINITE_ERROR), each with getApplied() false, getSkippedOverflow() true, getOverflowSteps() 1, 2, 3 ...,
   * the scale halved to exactly 2^(40-n) and the parameters bitwise unchanged; then a step applies at the scale
   * that fits, which stays.
   */
  @Test
  void overflowingWindowsAreSkippedAndHalveTheScale() {
    final int n = 16;
    float[] x = Fixtures.inputs(n, Fixtures.TINY_INPUTS, Fixtures.TINY_CLASSES);
    int[] y = Fixtures.labels(n, Fixtures.TINY_CLASSES);
    TrainerOptions options = fp16(3, TWO_TO_40);
    options.setNonfinite(NonfinitePolicy.NONFINITE_ERROR);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m, options, null)) {
      assertEquals(2, t.deviceCount());
      float[] start = t.getParameters();
      int skipped = 0;
      StepResult r = null;
      for (int i = 0; i < 64; ++i) {
        r = t.step(x, y);
        if (r.getApplied()) break;
        ++skipped;
        String where = "skipped window " + skipped;
        assertTrue(r.getSkippedOverflow(), where);
        assertEquals(0, r.getSkippedNonfinite(), where);
        assertEquals(skipped, r.getOverflowSteps(), where);
        assertEquals(0, r.getOptimizerSteps(), where);
        assertEquals(Math.scalb(1.0, 40 - skipped), r.getLossScale(), 0.0, where);
        assertTrue(Double.isFinite(r.getLoss()), where + ": the forward pass's loss");
        assertBitwiseEqual(start, t.getParameters(), where);
      }
      assertTrue(r.getApplied(), "no step applied after " + skipped + " skipped windows");
      assertFalse(r.getSkippedOverflow());
      assertEquals(1, r.getOptimizerSteps());
      assertEquals(skipped, r.getOverflowSteps());
      // The tiny MLP's per-logit gradient (2/3 at the start) times 2^20 / 16 fits float16; times 2^24 / 16 not.
      assertTrue(skipped >= 16 && skipped <= 24, skipped + " windows skipped");
      assertEquals(Math.scalb(1.0, 40 - skipped), r.getLossScale(), 0.0);
      assertFalse(Arrays.equals(start, t.getParameters()), "the applied step left the parameters unchanged");
      StepResult next = t.step(x, y);
      assertTrue(next.getApplied());
      assertEquals(skipped, next.getOverflowSteps());
      assertEquals(Math.scalb(1.0, 40 - skipped), next.getLossScale(), 0.0);
    }
  }

  /** {@code steps} loss scales: {@code from}, doubled after each {@code interval} steps (0: never). */
  static double[] growing(double from, int interval, int steps) {
    double[] scales = new double[steps];
    for (int i = 0; i < steps; ++i) scales[i] = interval == 0 ? from : Math.scalb(from, (i + 1) / interval);
    return scales;
  }

  /**
   * The defaults are GradScaler's (65536, doubling after 2000 applied windows in a row), also in the trainer;
   * the setters reach the trainer: from 8 with an interval of 2 the scale doubles every second step, with 0 it
   * never grows (not even after 2000 steps); float32 reports a scale of 1.
   */
  @Test
  void optionsHaveGradScalersDefaultsAndReachTheTrainer() {
    TrainerOptions defaults = new TrainerOptions();
    assertEquals(65536.0, defaults.getInitialLossScale(), 0.0);
    assertEquals(2000, defaults.getLossScaleGrowthInterval());
    float[] x = Fixtures.inputs(16, Fixtures.TINY_INPUTS, Fixtures.TINY_CLASSES);
    int[] y = Fixtures.labels(16, Fixtures.TINY_CLASSES);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny()) {
      TrainerOptions byDefault = Fixtures.seeded(3);
      byDefault.setPrecision(Precision.PRECISION_FP16);
      TrainerOptions growing = fp16(3, 8);
      growing.setLossScaleGrowthInterval(2);
      assertEquals(2, growing.getLossScaleGrowthInterval());
      TrainerOptions fixed = fp16(3, 8);
      fixed.setLossScaleGrowthInterval(0);
      TrainerOptions fp32 = Fixtures.seeded(3);
      fp32.setInitialLossScale(1024);
      double[][] expected = {growing(65536, 2000, 2001), {8, 16, 16, 32, 32}, growing(8, 0, 2001), {1, 1}};
      assertEquals(65536, expected[0][1998]);
      assertEquals(131072, expected[0][1999]);
      TrainerOptions[] all = {byDefault, growing, fixed, fp32};
      for (int k = 0; k < all.length; ++k) {
        try (Trainer t = new Trainer(c, m, all[k], null)) {
          for (int i = 0; i < expected[k].length; ++i) {
            StepResult r = t.step(x, y);
            // (messages built only on failure: thousands of steps)
            final int index = k, step = i + 1;
            assertTrue(r.getApplied(), () -> "options " + index + ", step " + step);
            assertFalse(r.getSkippedOverflow());
            assertEquals(0, r.getOverflowSteps());
            assertEquals(expected[k][i], r.getLossScale(), 0.0, () -> "options " + index + ", step " + step);
          }
        }
      }
    }
  }

  /** A scale that is not a power of two from 1 to 2^64 is refused, whatever the precision. */
  @Test
  void aScaleThatIsNotAPowerOfTwoIsRefused() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny()) {
      for (Precision p : new Precision[] {Precision.PRECISION_FP16, Precision.PRECISION_FP32}) {
        for (double bad : new double[] {3, 0.5, 0, Math.scalb(1.0, 65), Double.POSITIVE_INFINITY, Double.NaN}) {
          TrainerOptions o = new TrainerOptions();
          o.setPrecision(p);
          o.setInitialLossScale(bad);
          InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> new Trainer(c, m, o, null),
              p + ", initial loss scale " + bad);
          assertEquals(Status.ERROR_INVALID_ARGUMENT, e.getStatus());
          assertEquals(1000, e.getCategory());
          assertTrue(e.getLibraryMessage().contains("initial loss scale"), e.getLibraryMessage());
        }
      }
      TrainerOptions top = fp16(0, Math.scalb(1.0, 64));
      try (Trainer t = new Trainer(c, m, top, null)) {
        assertEquals(2, t.deviceCount());
      }
    }
  }

  /** A fit from 2^40 reports its skipped windows and the scale they leave, in its result and its reports. */
  @Test
  void fitReportsOverflowStepsAndTheScale() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(64);
         Trainer t = new Trainer(c, m, fp16(3, TWO_TO_40), null)) {
      FitOptions o = new FitOptions();
      o.setEpochs(10);
      o.setBatchSize(16);
      List<Double> reported = new ArrayList<>();
      FitResult r = t.fit(d, null, o, p -> {
        reported.add(p.getLossScale());
        return false;
      });
      long skipped = r.getOverflowSteps();
      assertTrue(skipped >= 16 && skipped <= 24, skipped + " windows skipped");
      assertEquals(40, r.getOptimizerSteps() + skipped);
      assertEquals(0, r.getNonfiniteSteps());
      assertEquals(Math.scalb(1.0, 40 - (int) skipped), r.getLossScale(), 0.0);
      assertEquals(10, reported.size());
      assertEquals(r.getLossScale(), reported.get(9), 0.0);
      assertTrue(reported.get(0) > reported.get(9), reported.toString());
    }
  }
}
