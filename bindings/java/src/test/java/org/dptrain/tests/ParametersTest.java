package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.FloatBuffer;
import java.util.Random;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

class ParametersTest {
  private static float[] randomParameters(int n, long seed) {
    Random r = new Random(seed);
    float[] p = new float[n];
    for (int i = 0; i < n; ++i) p[i] = (float) r.nextGaussian();
    p[0] = -0.0f;
    p[1] = Float.MIN_VALUE; // a subnormal
    p[2] = Float.MAX_VALUE;
    return p;
  }

  private static void assertBitwiseEqual(float[] expected, float[] actual) {
    assertEquals(expected.length, actual.length);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), "parameter " + i);
    }
  }

  @Test
  void setThenGetIsBitwiseEqualOnEveryReplica() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      assertEquals(Fixtures.TINY_PARAMETERS, t.parameterCount());
      float[] p = randomParameters((int) t.parameterCount(), 7);
      t.setParameters(p);
      assertBitwiseEqual(p, t.getParameters());
      assertBitwiseEqual(p, t.getReplicaParameters(0));
      assertBitwiseEqual(p, t.getReplicaParameters(1));
      float[] out = new float[p.length];
      t.getParameters(out);
      assertBitwiseEqual(p, out);
    }
  }

  @Test
  void roundTripThroughDirectBuffers() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      float[] p = randomParameters((int) t.parameterCount(), 11);
      t.setParameters(Fixtures.directFloats(p));
      FloatBuffer out = Fixtures.directFloats(new float[p.length]);
      t.getParameters(out);
      float[] back = new float[p.length];
      out.get(back);
      assertBitwiseEqual(p, back);
    }
  }

  @Test
  void equalParametersGiveEqualChecksumsAndSteps() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny();
         Trainer a = new Trainer(c, m, Fixtures.seeded(1), null);
         Trainer b = new Trainer(c, m, Fixtures.seeded(2), null)) {
      assertNotEquals(a.parameterChecksum(), b.parameterChecksum(), "different seeds, different weights");
      b.setParameters(a.getParameters());
      assertEquals(a.parameterChecksum(), b.parameterChecksum());
      float[] x = Fixtures.inputs(9, 16, 3);
      int[] y = Fixtures.labels(9, 3);
      assertEquals(a.step(x, y).getLoss(), b.step(x, y).getLoss());
      assertBitwiseEqual(a.getParameters(), b.getParameters());
    }
  }

  @Test
  void setParametersChangesThePredictions() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      float[] zeros = new float[(int) t.parameterCount()];
      t.setParameters(zeros);
      float[] logits = t.predict(Fixtures.inputs(2, 16, 3), 2);
      for (float v : logits) assertEquals(0.0f, v);
      assertEquals(Math.log(3), t.evaluate(Fixtures.inputs(2, 16, 3), Fixtures.labels(2, 3)).getLoss(), 1e-6);
    }
  }
}
