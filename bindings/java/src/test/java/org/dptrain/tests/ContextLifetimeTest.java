package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import org.dptrain.*;
import org.junit.jupiter.api.Test;

/** A trainer's lifetime is its own: as in the C API, its context may be closed (or dropped) first. */
class ContextLifetimeTest {
  /** Bytes the context's devices hold (trainers' replicas live there): counts native trainers still alive. */
  private static long memoryInUse(Context context) {
    long bytes = 0;
    for (DeviceInfo d : context.devices()) bytes += d.getMemoryInUse();
    return bytes;
  }

  /** Creates trainers and drops them unclosed; returns the devices' bytes while they were alive. */
  private static long createAndDrop(Context context, Model model, int count) {
    for (int i = 0; i < count; ++i) new Trainer(context, model).step(Fixtures.inputs(2, 16, 3), Fixtures.labels(2, 3));
    return memoryInUse(context);
  }

  @Test
  void droppedTrainersOfALongLivedContextAreReclaimed() throws Exception {
    try (Context context = new Context(2, 0); Model model = Fixtures.tiny()) {
      long baseline = memoryInUse(context);
      long alive = createAndDrop(context, model, 50);
      assertTrue(alive > baseline, "50 live trainers hold " + alive + " bytes, baseline " + baseline);
      // The finalizers of the unreachable trainers free them (the context must not keep them reachable).
      long now = alive;
      for (int i = 0; i < 100 && now != baseline; ++i) {
        System.gc();
        System.runFinalization();
        Thread.sleep(20);
        now = memoryInUse(context);
      }
      assertEquals(baseline, now, "bytes still held by dropped trainers (alive: " + alive + ")");
      assertEquals(2, context.deviceCount());
    }
  }

  @Test
  void closingTheContextLeavesItsTrainersTraining() {
    float[] x = Fixtures.inputs(12, 16, 3);
    int[] y = Fixtures.labels(12, 3);
    try (Model model = Fixtures.tiny(); Context kept = new Context(2, 0);
         Trainer reference = new Trainer(kept, model, Fixtures.seeded(5), Fixtures.sgd(0.3f))) {
      Context closed = new Context(2, 0);
      try (Trainer orphan = new Trainer(closed, model, Fixtures.seeded(5), Fixtures.sgd(0.3f))) {
        closed.close();
        assertTrue(closed.isClosed());
        assertFalse(orphan.isClosed());
        assertEquals(2, orphan.deviceCount());
        // Same seed, same batches: the trainer whose context was closed trains exactly like the other one.
        for (int i = 0; i < 5; ++i) {
          assertEquals(reference.step(x, y).getLoss(), orphan.step(x, y).getLoss(), "step " + i);
        }
        try (Dataset data = Fixtures.tinyDataset(24)) {
          FitOptions options = new FitOptions();
          options.setEpochs(2);
          options.setBatchSize(8);
          assertEquals(2, orphan.fit(data, null, options).getEpochsCompleted());
          assertEquals(2, reference.fit(data, null, options).getEpochsCompleted());
        }
        assertEquals(reference.parameterChecksum(), orphan.parameterChecksum());
      }
    }
  }
}
