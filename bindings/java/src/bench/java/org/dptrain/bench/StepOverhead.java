package org.dptrain.bench;

import java.util.Arrays;
import java.util.Locale;
import org.dptrain.Context;
import org.dptrain.Model;
import org.dptrain.OptimizerOptions;
import org.dptrain.Trainer;

/**
 * The Java side of the bindings' overhead benchmark: repeats tests/bench/step_overhead.c exactly, through
 * the Java binding. Context with 2 CPU devices; builtin "lenet"; default trainer options (seed 0); SGD lr
 * 0.01; batch 256 of synthetic data x[i] = ((i * 2654435761) mod 1000) / 1000, label[s] = s mod 10; 5
 * warm-up steps, then STEPS timed steps (default 40); prints median and mean ms per step. The arrays are
 * passed to Trainer.step as float[] / int[] (pinned, no copy).
 *
 * <p>Usage: java -cp dptrain.jar:dptrain-bench.jar org.dptrain.bench.StepOverhead [STEPS]
 */
public final class StepOverhead {
  private static final int BATCH = 256;

  private StepOverhead() {}

  public static void main(String[] args) {
    final int steps = args.length > 0 ? Integer.parseInt(args[0]) : 40;
    if (steps <= 0) System.exit(2);
    try (Context ctx = new Context(2, 0); Model model = Model.builtin("lenet")) {
      OptimizerOptions oo = new OptimizerOptions();
      oo.setLearningRate(0.01f);
      try (Trainer trainer = new Trainer(ctx, model, null, oo)) {
        final int in = (int) model.inputSize();
        float[] x = new float[BATCH * in];
        int[] y = new int[BATCH];
        double[] ms = new double[steps];
        // size_t arithmetic in C: i * 2654435761u is computed in 64 bits, which a long holds exactly here.
        for (int i = 0; i < BATCH * in; ++i) x[i] = (float) ((i * 2654435761L) % 1000L) / 1000.0f;
        for (int s = 0; s < BATCH; ++s) y[s] = s % 10;
        for (int i = 0; i < 5; ++i) trainer.step(x, y);
        double total = 0;
        for (int i = 0; i < steps; ++i) {
          final long t0 = System.nanoTime();
          trainer.step(x, y);
          ms[i] = (System.nanoTime() - t0) / 1e6;
          total += ms[i];
        }
        Arrays.sort(ms);
        System.out.printf(Locale.ROOT, "java: %d steps, median %.3f ms, mean %.3f ms per step%n", steps,
            ms[steps / 2], total / steps);
      }
    }
  }
}
