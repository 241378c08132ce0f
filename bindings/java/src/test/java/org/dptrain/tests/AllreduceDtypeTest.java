package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/** TrainerOptions.setAllreduceDtype (trainer.h allreduce_dtype): the 16-bit gradient all-reduce. */
class AllreduceDtypeTest {
  static final int SAMPLES = 16; // 8 per device

  static void assertBitwiseEqual(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), what + ", element " + i);
    }
  }

  /** |(a - start) - (b - start)| / |b - start| in the Euclidean norm: how far a's movement is from b's. */
  static double relativeMovementDifference(float[] a, float[] b, float[] start) {
    assertEquals(start.length, a.length);
    assertEquals(start.length, b.length);
    double d = 0, n = 0;
    for (int i = 0; i < start.length; ++i) {
      double moveA = (double) a[i] - start[i], moveB = (double) b[i] - start[i];
      d += (moveA - moveB) * (moveA - moveB);
      n += moveB * moveB;
    }
    assertTrue(n > 0, "the reference did not move");
    return Math.sqrt(d / n);
  }

  /**
   * The tiny MLP on 2 CPU devices, seed 5, the given all-reduce dtype, after 3 steps: its start, then the
   * parameters of replica 0 and of replica 1.
   */
  static float[][] train(Context two, Model m, Precision wire) {
    TrainerOptions o = Fixtures.seeded(5);
    o.setAllreduceDtype(wire);
    assertEquals(wire, o.getAllreduceDtype());
    float[] x = Fixtures.inputs(SAMPLES, Fixtures.TINY_INPUTS, Fixtures.TINY_CLASSES);
    int[] y = Fixtures.labels(SAMPLES, Fixtures.TINY_CLASSES);
    try (Trainer t = new Trainer(two, m, o, null)) {
      assertEquals(2, t.deviceCount());
      float[] start = t.getParameters();
      for (int i = 0; i < 3; ++i) assertTrue(t.step(x, y).getApplied(), wire + ", step " + (i + 1));
      return new float[][] {start, t.getReplicaParameters(0), t.getReplicaParameters(1)};
    }
  }

  /**
   * The default is float32. Over a bf16 (and an fp16) wire the two replicas stay bitwise identical after 3
   * steps, and end on other bits than the float32 wire's (so the option reaches the library, and bf16 is not
   * fp16), while their movement from the start stays within 2e-2 of the float32 wire's (relative, Euclidean
   * norm over the whole vector), bf16's further than fp16's.
   */
  @Test
  void a16BitWireKeepsReplicasIdenticalAndCloseToFloat32() {
    assertEquals(Precision.PRECISION_FP32, new TrainerOptions().getAllreduceDtype(), "the default");
    try (Context two = new Context(2, 0); Model m = Fixtures.tiny()) {
      float[][] fp32 = train(two, m, Precision.PRECISION_FP32);
      float[][] bf16 = train(two, m, Precision.PRECISION_BF16);
      float[][] fp16 = train(two, m, Precision.PRECISION_FP16);
      assertBitwiseEqual(fp32[0], bf16[0], "the same seed starts alike");
      assertBitwiseEqual(fp32[0], fp16[0], "the same seed starts alike");
      assertBitwiseEqual(fp32[1], fp32[2], "float32 wire: replica 1 against replica 0");
      assertBitwiseEqual(bf16[1], bf16[2], "bf16 wire: replica 1 against replica 0");
      assertBitwiseEqual(fp16[1], fp16[2], "fp16 wire: replica 1 against replica 0");
      assertFalse(Arrays.equals(fp32[0], fp32[1]), "3 steps left the parameters unchanged");
      assertFalse(Arrays.equals(fp32[1], bf16[1]), "the bf16 wire trains to the float32 wire's bits");
      assertFalse(Arrays.equals(fp32[1], fp16[1]), "the fp16 wire trains to the float32 wire's bits");
      assertFalse(Arrays.equals(bf16[1], fp16[1]), "the bf16 and fp16 wires train to the same bits");
      double bf16Difference = relativeMovementDifference(bf16[1], fp32[1], fp32[0]);
      assertTrue(bf16Difference <= 2e-2, "the bf16 wire's movement differs by " + bf16Difference + " relative");
      double fp16Difference = relativeMovementDifference(fp16[1], fp32[1], fp32[0]);
      assertTrue(fp16Difference <= 2e-2, "the fp16 wire's movement differs by " + fp16Difference + " relative");
      // bfloat16 keeps 8 significant bits, float16 11: the bf16 wire strays further (about 8 times here).
      assertTrue(bf16Difference > fp16Difference,
          "the bf16 wire (" + bf16Difference + ") strays less than the fp16 wire (" + fp16Difference + ")");
    }
  }

  /**
   * A value outside the enum (3) cannot reach the library from Java: the enum refuses it (the library's own
   * refusal, INVALID_ARGUMENT, is C#'s and Go's test). A null dtype is refused before any native call.
   */
  @Test
  void anUnknownDtypeIsRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Precision.swigToEnum(3));
    assertTrue(e.getMessage().contains("3"), e.getMessage());
    assertEquals(Precision.PRECISION_FP16, Precision.swigToEnum(2));
    TrainerOptions o = new TrainerOptions();
    assertThrows(NullPointerException.class, () -> o.setAllreduceDtype(null));
    assertEquals(Precision.PRECISION_FP32, o.getAllreduceDtype());
  }
}
