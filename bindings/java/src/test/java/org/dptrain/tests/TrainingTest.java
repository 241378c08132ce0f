package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

class TrainingTest {
  @Test
  void stepsReduceTheLossOnTwoDevices() {
    final int n = 64;
    float[] x = Fixtures.inputs(n, 16, 3);
    int[] y = Fixtures.labels(n, 3);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny();
         Trainer t = new Trainer(c, m, Fixtures.seeded(1), Fixtures.sgd(0.5f))) {
      assertEquals(2, t.deviceCount());
      EvalResult before = t.evaluate(x, y);
      StepResult first = t.step(x, y);
      assertEquals(n, first.getSamples());
      assertTrue(first.getApplied());
      assertEquals(1, first.getOptimizerSteps());
      assertEquals(0.5, first.getLearningRate(), 1e-6);
      assertEquals(before.getLoss(), first.getLoss(), 1e-5, "the step reports the loss before its update");
      StepResult last = first;
      for (int i = 0; i < 40; ++i) last = t.step(x, y);
      assertEquals(41, last.getOptimizerSteps());
      EvalResult after = t.evaluate(x, y);
      assertTrue(after.getLoss() < 0.5 * before.getLoss(),
          "loss " + before.getLoss() + " -> " + after.getLoss());
      assertTrue(after.getAccuracy() > 0.9, "accuracy " + after.getAccuracy());
      assertEquals(n, after.getSamples());
    }
  }

  @Test
  void lenetStepReducesLossOnSyntheticImages() {
    final int n = 32;
    float[] x = Fixtures.inputs(n, 784, 10);
    int[] y = Fixtures.labels(n, 10);
    try (Context c = new Context(2, 0); Model m = Model.builtin("lenet");
         Trainer t = new Trainer(c, m, Fixtures.seeded(0), Fixtures.sgd(0.05f))) {
      double first = t.step(x, y).getLoss();
      double last = first;
      for (int i = 0; i < 15; ++i) last = t.step(x, y).getLoss();
      assertTrue(last < first, "loss " + first + " -> " + last);
    }
  }

  @Test
  void replicasStayBitwiseIdentical() {
    float[] x = Fixtures.inputs(30, 16, 3);
    int[] y = Fixtures.labels(30, 3);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      for (int i = 0; i < 5; ++i) t.step(x, y);
      assertArrayEquals(t.getReplicaParameters(0), t.getReplicaParameters(1));
      assertArrayEquals(t.getParameters(), t.getReplicaParameters(1));
    }
  }

  @Test
  void directBuffersGiveTheSameStepsAsArrays() {
    float[] x = Fixtures.inputs(24, 16, 3);
    int[] y = Fixtures.labels(24, 3);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny();
         Trainer arrays = new Trainer(c, m, Fixtures.seeded(5), null);
         Trainer buffers = new Trainer(c, m, Fixtures.seeded(5), null)) {
      assertEquals(arrays.parameterChecksum(), buffers.parameterChecksum());
      FloatBuffer bx = Fixtures.directFloats(x);
      IntBuffer by = Fixtures.directInts(y);
      for (int i = 0; i < 3; ++i) {
        StepResult a = arrays.step(x, y);
        StepResult b = buffers.step(bx, by);
        assertEquals(a.getLoss(), b.getLoss());
        assertEquals(0, bx.position(), "the buffer's position is not moved");
      }
      assertEquals(arrays.parameterChecksum(), buffers.parameterChecksum());
      assertEquals(arrays.evaluate(x, y).getLoss(), buffers.evaluate(bx, by).getLoss());

      // A buffer's remaining elements are used: skip the first 4 samples through the position.
      FloatBuffer tail = Fixtures.directFloats(x);
      tail.position(4 * 16);
      IntBuffer tailLabels = Fixtures.directInts(y);
      tailLabels.position(4);
      float[] xs = java.util.Arrays.copyOfRange(x, 4 * 16, x.length);
      int[] ys = java.util.Arrays.copyOfRange(y, 4, y.length);
      assertEquals(arrays.evaluate(xs, ys).getLoss(), buffers.evaluate(tail, tailLabels).getLoss());
      assertEquals(20, buffers.evaluate(tail, tailLabels).getSamples());
    }
  }

  @Test
  void predictReturnsLogitsConsistentWithEvaluate() {
    float[] x = Fixtures.inputs(12, 16, 3);
    int[] y = Fixtures.labels(12, 3);
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      for (int i = 0; i < 20; ++i) t.step(x, y);
      float[] logits = t.predict(x, 12);
      assertEquals(12 * 3, logits.length);
      int correct = 0;
      for (int s = 0; s < 12; ++s) {
        int best = 0;
        for (int k = 1; k < 3; ++k) if (logits[s * 3 + k] > logits[s * 3 + best]) best = k;
        if (best == y[s]) ++correct;
      }
      assertEquals(t.evaluate(x, y).getAccuracy(), correct / 12.0, 1e-9);
      FloatBuffer out = Fixtures.directFloats(new float[36]);
      t.predict(Fixtures.directFloats(x), 12, out);
      for (int i = 0; i < 36; ++i) assertEquals(logits[i], out.get(i));
    }
  }

  @Test
  void fitOnADatasetImprovesAndReportsResults() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset train = Fixtures.tinyDataset(96);
         Dataset test = train.subset(0, 30);
         Trainer t = new Trainer(c, m, Fixtures.seeded(2), Fixtures.sgd(0.3f))) {
      EvalResult before = t.evaluateDataset(test, 0);
      FitOptions o = new FitOptions();
      o.setEpochs(8);
      o.setBatchSize(16);
      FitResult r = t.fit(train, test, o);
      assertEquals(8, r.getEpochsCompleted());
      assertFalse(r.getStopped());
      assertTrue(r.getHasTest());
      assertEquals(8 * 6, r.getOptimizerSteps());
      assertTrue(r.getTestLoss() < before.getLoss(), before.getLoss() + " -> " + r.getTestLoss());
      assertEquals(t.evaluateDataset(test, 7).getLoss(), r.getTestLoss(), 1e-6);
      assertTrue(r.getSamplesPerSecond() > 0);
    }
  }

  @Test
  void sameSeedSameRun() {
    String[] sums = new String[2];
    for (int run = 0; run < 2; ++run) {
      try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(50);
           Trainer t = new Trainer(c, m, Fixtures.seeded(42), null)) {
        FitOptions o = new FitOptions();
        o.setEpochs(2);
        o.setBatchSize(8);
        t.fit(d, null, o);
        sums[run] = t.parameterChecksum();
      }
    }
    assertEquals(16, sums[0].length());
    assertEquals(sums[0], sums[1]);
  }

  @Test
  void datasetCopiesBatchesIntoArraysAndBuffers() {
    float[] x = Fixtures.inputs(10, 16, 3);
    int[] y = Fixtures.labels(10, 3);
    try (Dataset d = new Dataset(x, y, 1, 4, 4, 3)) {
      assertEquals(10, d.sampleCount());
      assertEquals(1, d.channels());
      assertEquals(4, d.height());
      assertEquals(4, d.width());
      assertEquals(3, d.classCount());
      float[] bx = new float[3 * 16];
      int[] by = new int[3];
      d.copyBatch(2, 3, bx, by);
      assertArrayEquals(java.util.Arrays.copyOfRange(x, 32, 80), bx);
      assertArrayEquals(new int[] {2, 0, 1}, by);
      FloatBuffer fx = Fixtures.directFloats(new float[16]);
      IntBuffer fy = Fixtures.directInts(new int[1]);
      d.copyBatch(9, 1, fx, fy);
      assertEquals(x[9 * 16 + 5], fx.get(5));
      assertEquals(0, fy.get(0));
      try (Dataset fromBuffers = new Dataset(Fixtures.directFloats(x), Fixtures.directInts(y), 1, 4, 4, 3)) {
        assertEquals(10, fromBuffers.sampleCount());
      }
    }
  }

  @Test
  void fashionMnistSubsetTrains() {
    java.io.File dataDir = new java.io.File(System.getenv().getOrDefault("DPTRAIN_DATA_DIR",
        Dptrain.FASHION_MNIST_DEFAULT_DIR));
    org.junit.jupiter.api.Assumptions.assumeTrue(new java.io.File(dataDir, "t10k-images-idx3-ubyte.gz").isFile(),
        "Fashion-MNIST not installed");
    try (Dataset all = Dataset.loadFashionMnist(null, DatasetPart.DATASET_TEST);
         Dataset part = all.subset(0, 512);
         Context c = new Context(2, 0); Model m = Model.builtin("mlp");
         Trainer t = new Trainer(c, m, Fixtures.seeded(0), Fixtures.sgd(0.1f))) {
      assertEquals(10000, all.sampleCount());
      assertEquals(28, all.height());
      assertEquals(10, all.classCount());
      double before = t.evaluateDataset(part, 0).getLoss();
      FitOptions o = new FitOptions();
      o.setEpochs(3);
      o.setBatchSize(64);
      FitResult r = t.fit(part, part, o);
      assertTrue(r.getTestLoss() < before, before + " -> " + r.getTestLoss());
      assertTrue(r.getTestAccuracy() > 0.5, "accuracy " + r.getTestAccuracy());
    }
  }
}
