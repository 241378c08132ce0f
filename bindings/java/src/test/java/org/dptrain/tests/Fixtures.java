package org.dptrain.tests;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import org.dptrain.*;

/** Small models and synthetic, learnable data shared by the tests. */
final class Fixtures {
  private Fixtures() {}

  /** A 1x4x4 -> dense 16 -> relu -> dense 3 classifier: 16 inputs, 3 classes, 323 parameters. */
  static Model tiny() {
    Model m = new Model(1, 4, 4);
    m.addDense(16);
    m.addActivation(Activation.ACTIVATION_RELU);
    m.addDense(3);
    return m;
  }

  static final int TINY_INPUTS = 16;
  static final int TINY_CLASSES = 3;
  static final long TINY_PARAMETERS = 16 * 16 + 16 + 16 * 3 + 3;

  /** Labels 0, 1, 2, 0, 1, ... for {@code classes} classes. */
  static int[] labels(int samples, int classes) {
    int[] y = new int[samples];
    for (int s = 0; s < samples; ++s) y[s] = s % classes;
    return y;
  }

  /**
   * Separable inputs: sample s has a bump on the features j with j % classes == label, plus a small
   * deterministic ripple, so a few SGD steps reduce the loss clearly.
   */
  static float[] inputs(int samples, int features, int classes) {
    float[] x = new float[samples * features];
    for (int s = 0; s < samples; ++s) {
      int label = s % classes;
      for (int j = 0; j < features; ++j) {
        float ripple = (float) (((s * 31L + j * 17L) % 13) / 13.0 - 0.5) * 0.2f;
        x[s * features + j] = (j % classes == label ? 1.0f : 0.0f) + ripple;
      }
    }
    return x;
  }

  static FloatBuffer directFloats(float[] values) {
    FloatBuffer b = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
    b.put(values).flip();
    return b;
  }

  static IntBuffer directInts(int[] values) {
    IntBuffer b = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.nativeOrder()).asIntBuffer();
    b.put(values).flip();
    return b;
  }

  static TrainerOptions seeded(long seed) {
    TrainerOptions o = new TrainerOptions();
    o.setSeed(seed);
    return o;
  }

  static OptimizerOptions sgd(float lr) {
    OptimizerOptions o = new OptimizerOptions();
    o.setKind(OptimizerKind.OPTIMIZER_SGD);
    o.setLearningRate(lr);
    return o;
  }

  /** A dataset of the tiny model's shape. */
  static Dataset tinyDataset(int samples) {
    return new Dataset(inputs(samples, TINY_INPUTS, TINY_CLASSES), labels(samples, TINY_CLASSES), 1, 4, 4,
        TINY_CLASSES);
  }
}
