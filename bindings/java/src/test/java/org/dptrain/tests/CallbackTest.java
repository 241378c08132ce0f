package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

class CallbackTest {
  private static FitOptions options(long epochs, long batch, long every) {
    FitOptions o = new FitOptions();
    o.setEpochs(epochs);
    o.setBatchSize(batch);
    o.setProgressEvery(every);
    return o;
  }

  @Test
  void reportsArriveOnTheFitThreadEvenWhenItIsNotMain() throws Exception {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(40);
         Trainer t = new Trainer(c, m)) {
      List<Progress> reports = new ArrayList<>();
      List<Thread> threads = new ArrayList<>();
      AtomicReference<FitResult> result = new AtomicReference<>();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread worker = new Thread(() -> {
        try {
          result.set(t.fit(d, d, options(2, 8, 1), p -> {
            reports.add(p);
            threads.add(Thread.currentThread());
            return false;
          }));
        } catch (Throwable e) {
          failure.set(e);
        }
      }, "fit-worker");
      worker.start();
      worker.join();
      assertNull(failure.get());
      assertEquals(2, result.get().getEpochsCompleted());
      // 5 batches per epoch: a batch report after each but the last, then the epoch report.
      assertEquals(2 * (4 + 1), reports.size());
      for (Thread th : threads) assertSame(worker, th);
      long epochReports = reports.stream().filter(p -> p.getKind() == ProgressKind.PROGRESS_EPOCH).count();
      assertEquals(2, epochReports);
      // Reports are owned copies: still readable after fit, with their own values.
      Progress first = reports.get(0);
      assertEquals(ProgressKind.PROGRESS_BATCH, first.getKind());
      assertEquals(1, first.getEpoch());
      assertEquals(2, first.getEpochs());
      assertEquals(1, first.getBatch());
      assertEquals(5, first.getBatches());
      assertEquals(8, first.getSamples());
      Progress lastEpoch = reports.get(reports.size() - 1);
      assertEquals(ProgressKind.PROGRESS_EPOCH, lastEpoch.getKind());
      assertEquals(2, lastEpoch.getEpoch());
      assertTrue(lastEpoch.getHasTest());
      assertEquals(result.get().getTestAccuracy(), lastEpoch.getTestAccuracy());
    }
  }

  @Test
  void returningTrueStopsTraining() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(40);
         Trainer t = new Trainer(c, m)) {
      int[] calls = {0};
      FitResult r = t.fit(d, null, options(3, 8, 1), p -> ++calls[0] == 2);
      assertTrue(r.getStopped());
      assertEquals(2, calls[0]);
      assertEquals(0, r.getEpochsCompleted());
      assertEquals(2, r.getOptimizerSteps());
    }
  }

  @Test
  void anExceptionInTheCallbackStopsTrainingAndSurfacesFromFit() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(40);
         Trainer t = new Trainer(c, m)) {
      IllegalStateException thrown = new IllegalStateException("listener failed on purpose");
      int[] calls = {0};
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.fit(d, null, options(3, 8, 1), p -> {
        ++calls[0];
        throw thrown;
      }));
      assertSame(thrown, e);
      assertEquals(1, calls[0], "no report after the failing one");
      // The trainer is still usable and stopped after the first batch.
      StepResult r = t.step(Fixtures.inputs(4, 16, 3), Fixtures.labels(4, 3));
      assertEquals(2, r.getOptimizerSteps());
      FitResult again = t.fit(d, null, options(1, 8, 0));
      assertEquals(1, again.getEpochsCompleted());
    }
  }

  @Test
  void anErrorInTheCallbackSurfacesToo() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(16);
         Trainer t = new Trainer(c, m)) {
      AssertionError e = assertThrows(AssertionError.class, () -> t.fit(d, null, options(1, 8, 1), p -> {
        throw new AssertionError("boom");
      }));
      assertEquals("boom", e.getMessage());
    }
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> void sneakyThrow(Throwable e) throws E {
    throw (E) e;
  }

  @Test
  void aCheckedExceptionIsWrapped() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(16);
         Trainer t = new Trainer(c, m)) {
      java.io.IOException io = new java.io.IOException("disk full");
      UndeclaredThrowableException e = assertThrows(UndeclaredThrowableException.class,
          () -> t.fit(d, null, options(1, 8, 1), p -> {
            CallbackTest.<RuntimeException>sneakyThrow(io);
            return false;
          }));
      assertSame(io, e.getCause());
    }
  }

  @Test
  void aDirectorSubclassWorksAsACallback() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(16);
         Trainer t = new Trainer(c, m)) {
      int[] epochs = {0};
      ProgressListener listener = new ProgressListener() {
        @Override
        public boolean onProgress(Progress p) {
          if (p.getKind() == ProgressKind.PROGRESS_EPOCH) ++epochs[0];
          return false;
        }
      };
      t.fit(d, null, options(2, 8, 0), listener);
      assertEquals(2, epochs[0]);
      listener.delete();
    }
  }

  @Test
  void garbageCollectionDuringFitIsHarmless() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(64);
         Trainer t = new Trainer(c, m)) {
      int[] calls = {0};
      FitResult r = t.fit(d, null, options(2, 8, 1), p -> {
        ++calls[0];
        System.gc();
        return false;
      });
      assertEquals(2, r.getEpochsCompleted());
      assertEquals(2 * (7 + 1), calls[0]);
    }
  }

  @Test
  void trainersOnSeparateThreadsEachGetTheirOwnReports() throws Exception {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny(); Dataset d = Fixtures.tinyDataset(48)) {
      Thread[] workers = new Thread[3];
      Throwable[] failures = new Throwable[3];
      for (int i = 0; i < workers.length; ++i) {
        final int id = i;
        workers[i] = new Thread(() -> {
          try (Trainer t = new Trainer(c, m)) {
            Thread self = Thread.currentThread();
            int[] calls = {0};
            t.fit(d, null, options(2, 8, 1), p -> {
              if (Thread.currentThread() != self) throw new IllegalStateException("wrong thread");
              ++calls[0];
              return false;
            });
            if (calls[0] != 2 * (5 + 1)) throw new IllegalStateException("calls " + calls[0]);
          } catch (Throwable e) {
            failures[id] = e;
          }
        });
        workers[i].start();
      }
      for (Thread w : workers) w.join();
      for (Throwable f : failures) assertNull(f);
    }
  }

  @Test
  void closingWhatFitUsesFromTheCallbackIsRefusedNotACrash() {
    Context c = new Context(2, 0);
    Model m = Fixtures.tiny();
    Dataset d = Fixtures.tinyDataset(24);
    Trainer t = new Trainer(c, m);
    try {
      for (AutoCloseable victim : new AutoCloseable[] {t, d}) {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
            () -> t.fit(d, null, options(1, 8, 1), p -> {
              try {
                victim.close();
              } catch (Exception x) {
                if (x instanceof RuntimeException) throw (RuntimeException) x;
                throw new IllegalStateException(x);
              }
              return false;
            }));
        assertEquals(Status.ERROR_INVALID_STATE, e.getStatus(), e.getMessage());
        assertTrue(e.getMessage().contains("return true from the progress callback"), e.getMessage());
      }
      assertFalse(t.isClosed());
      assertFalse(d.isClosed());
      // The context may be closed from the callback: the trainer does not need it (the C API's contract).
      int[] reports = {0};
      FitResult r = t.fit(d, null, options(2, 8, 1), p -> {
        if (++reports[0] == 1) c.close();
        return false;
      });
      assertTrue(c.isClosed());
      assertEquals(2, r.getEpochsCompleted());
      // 3 batches per epoch, the last one's report being the epoch report; the two refused fits above each
      // trained the epoch's first batch, so this one goes on from its third (an epoch report only), then a
      // whole epoch (two batch reports and the epoch report).
      assertEquals(1 + (2 + 1), reports[0]);
      // Everything else still works, and closes normally once fit has returned.
      assertEquals(1, t.fit(d, null, options(1, 8, 0), p -> false).getEpochsCompleted());
      d.close();
      assertFalse(t.isClosed());
    } finally {
      t.close();
      d.close();
      m.close();
      c.close();
    }
  }
}
