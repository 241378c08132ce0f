package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/** TrainerOptions.setActivationDtype (trainer.h activation_dtype): activations kept as 16-bit copies. */
class ActivationDtypeTest {
  static final int SIDE = 12;
  static final int FEATURES = SIDE * SIDE;
  static final int CLASSES = 3;
  static final int SAMPLES = 16; // 8 per device

  static void assertBitwiseEqual(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), what + ", element " + i);
    }
  }

  /** |a - b| / |b| in the Euclidean norm. */
  static double relativeDifference(float[] a, float[] b) {
    assertEquals(b.length, a.length);
    double d = 0, n = 0;
    for (int i = 0; i < a.length; ++i) {
      d += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
      n += (double) b[i] * b[i];
    }
    assertTrue(n > 0, "the reference is zero");
    return Math.sqrt(d / n);
  }

  /** A 3x3 convolution to 4 channels (no bias) and a batch norm. */
  static long convBn(Model m, long x) {
    return m.batchNorm(m.conv2d(x, 4, 3, 1, 1, false));
  }

  /**
   * 1x12x12 -> conv 4 -> bn -> relu -> 3 blocks relu(x + bn(conv(relu(bn(conv(x)))))) -> gap -> dense 3. Its
   * 24 activations of 4x12x12 are nearly all of its activation bytes, so the store keeps them as 16-bit
   * copies (they save more than the float32 working slots cost), and batch norm's backward reads them.
   */
  static Model residual() {
    Model m = new Model(1, SIDE, SIDE);
    long x = m.relu(convBn(m, Model.INPUT));
    for (int block = 0; block < 3; ++block) x = m.relu(m.add(x, convBn(m, m.relu(convBn(m, x)))));
    m.dense(m.globalAvgPool(x), CLASSES);
    return m;
  }

  /**
   * The residual model on 2 CPU devices, seed 5, bf16 matrix products and the given activation dtype (null:
   * the options' default), after 2 steps: its start, then the parameters of replica 0 and of replica 1.
   */
  static float[][] train(Context two, Model m, Precision activations) {
    TrainerOptions o = Fixtures.seeded(5);
    o.setPrecision(Precision.PRECISION_BF16);
    if (activations != null) {
      o.setActivationDtype(activations);
      assertEquals(activations, o.getActivationDtype());
    }
    float[] x = Fixtures.inputs(SAMPLES, FEATURES, CLASSES);
    int[] y = Fixtures.labels(SAMPLES, CLASSES);
    try (Trainer t = new Trainer(two, m, o, null)) {
      assertEquals(2, t.deviceCount());
      float[] start = t.getParameters();
      for (int i = 0; i < 2; ++i) assertTrue(t.step(x, y).getApplied(), activations + ", step " + (i + 1));
      return new float[][] {start, t.getReplicaParameters(0), t.getReplicaParameters(1)};
    }
  }

  /**
   * The default is float32 (and trains to the bits of an explicit PRECISION_FP32). With bf16 (and fp16)
   * activations the two replicas stay bitwise identical after 2 steps and end on other bits than with float32
   * activations (batch norm's backward reads the rounded copies: the option reaches the library, and bf16 is
   * not fp16), within 1e-2 of them (relative, Euclidean norm over the whole vector).
   */
  @Test
  void sixteenBitActivationsKeepReplicasIdenticalAndCloseToFloat32() {
    assertEquals(Precision.PRECISION_FP32, new TrainerOptions().getActivationDtype(), "the default");
    try (Context two = new Context(2, 0); Model m = residual()) {
      float[][] byDefault = train(two, m, null);
      float[][] fp32 = train(two, m, Precision.PRECISION_FP32);
      float[][] bf16 = train(two, m, Precision.PRECISION_BF16);
      float[][] fp16 = train(two, m, Precision.PRECISION_FP16);
      assertBitwiseEqual(fp32[0], byDefault[0], "the same seed starts alike");
      assertBitwiseEqual(fp32[0], bf16[0], "the same seed starts alike");
      assertBitwiseEqual(fp32[0], fp16[0], "the same seed starts alike");
      assertBitwiseEqual(fp32[1], byDefault[1], "the default trains as PRECISION_FP32");
      assertBitwiseEqual(fp32[1], fp32[2], "float32 activations: replica 1 against replica 0");
      assertBitwiseEqual(bf16[1], bf16[2], "bf16 activations: replica 1 against replica 0");
      assertBitwiseEqual(fp16[1], fp16[2], "fp16 activations: replica 1 against replica 0");
      assertFalse(Arrays.equals(fp32[0], fp32[1]), "2 steps left the parameters unchanged");
      assertFalse(Arrays.equals(fp32[1], bf16[1]), "bf16 activations train to float32's bits");
      assertFalse(Arrays.equals(fp32[1], fp16[1]), "fp16 activations train to float32's bits");
      assertFalse(Arrays.equals(bf16[1], fp16[1]), "bf16 and fp16 activations train to the same bits");
      double bf16Difference = relativeDifference(bf16[1], fp32[1]);
      assertTrue(bf16Difference <= 1e-2, "bf16 activations differ by " + bf16Difference + " relative");
      double fp16Difference = relativeDifference(fp16[1], fp32[1]);
      assertTrue(fp16Difference <= 1e-2, "fp16 activations differ by " + fp16Difference + " relative");
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
    TrainerOptions o = new TrainerOptions();
    o.setActivationDtype(Precision.PRECISION_BF16);
    assertThrows(NullPointerException.class, () -> o.setActivationDtype(null));
    assertEquals(Precision.PRECISION_BF16, o.getActivationDtype(), "a refused null leaves the option as it was");
  }
}
