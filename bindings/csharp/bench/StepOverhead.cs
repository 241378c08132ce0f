// StepOverhead: the C# side of the bindings' overhead benchmark. Repeats tests/bench/step_overhead.c exactly:
//   context with 2 CPU devices; builtin "lenet"; default trainer options (seed 0); SGD lr 0.01;
//   batch 256 of synthetic data x[i] = ((i * 2654435761) mod 1000) / 1000, label[s] = s mod 10;
//   5 warm-up steps, then STEPS timed steps (default 40, argv[0]); prints median and mean ms per step.
// Each timed step is one Trainer.Step call (pinned arrays, result object included), timed like the C loop.
// A second line reports the wall time of each call minus the library's own StepResult.TotalSeconds: the time
// spent in the binding (P/Invoke, pinning, result object), which machine noise cannot hide or inflate much.
// Usage: mono StepOverhead.exe [STEPS]
using System;
using System.Diagnostics;
using DPTrain;

static class StepOverhead {
  const int Batch = 256;

  static int Main(string[] args) {
    int steps = args.Length > 0 ? int.Parse(args[0]) : 40;
    if (steps <= 0) return 2;
    using (var context = new Context(2))
    using (var model = Model.Builtin("lenet"))
    using (var optimizer = new OptimizerOptions()) {
      optimizer.LearningRate = 0.01f;
      using (var trainer = new Trainer(context, model, null, optimizer)) {
        ulong inputSize = model.InputSize;
        var x = new float[Batch * (long)inputSize];
        var y = new int[Batch];
        // As in C, where i is a size_t: a 64-bit product.
        for (ulong i = 0; i < (ulong)x.LongLength; ++i) x[i] = (float)((i * 2654435761UL) % 1000UL) / 1000.0f;
        for (int s = 0; s < Batch; ++s) y[s] = s % 10;
        for (int i = 0; i < 5; ++i) trainer.Step(x, y).Dispose();
        var ms = new double[steps];
        var overheadUs = new double[steps];
        double total = 0;
        for (int i = 0; i < steps; ++i) {
          long t0 = Stopwatch.GetTimestamp();
          StepResult r = trainer.Step(x, y);
          double library = r.TotalSeconds;  // the library's own timing of the whole C call
          r.Dispose();                      // the result (native struct + proxy) is part of the binding's cost
          ms[i] = (Stopwatch.GetTimestamp() - t0) * 1000.0 / Stopwatch.Frequency;
          overheadUs[i] = (ms[i] - library * 1000.0) * 1000.0;
          total += ms[i];
        }
        Array.Sort(ms);
        Array.Sort(overheadUs);
        var inv = System.Globalization.CultureInfo.InvariantCulture;
        Console.WriteLine(string.Format(inv, "csharp: {0} steps, median {1:F3} ms, mean {2:F3} ms per step", steps,
                                        ms[steps / 2], total / steps));
        // Machine noise hits both sides of this difference alike: it isolates what the binding adds.
        Console.WriteLine(string.Format(inv, "csharp: binding time outside the library: median {0:F1} us per step " +
                                        "({1:F4}% of the median step)", overheadUs[steps / 2],
                                        overheadUs[steps / 2] / 10.0 / ms[steps / 2]));
      }
    }
    return 0;
  }
}
