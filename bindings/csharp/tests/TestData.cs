// Shared fixtures of the C# tests: a small, learnable synthetic problem and a tiny MLP, so that the suite
// stays fast (a few seconds) while every assertion is on real values.
using System;
using DPTrain;

namespace DPTrain.Tests {

static class TestData {
  public const int Classes = 4;
  public const int Side = 4;                      // samples are 1 x 4 x 4
  public const int SampleSize = Side * Side;

  /// Sample s has label s % 4; its row (s % 4) is bright, the rest is deterministic low noise.
  public static void Make(int samples, out float[] inputs, out int[] labels) {
    inputs = new float[samples * SampleSize];
    labels = new int[samples];
    uint state = 12345;
    for (int s = 0; s < samples; ++s) {
      int label = s % Classes;
      labels[s] = label;
      for (int j = 0; j < SampleSize; ++j) {
        state = state * 1664525u + 1013904223u;
        float noise = (state >> 8) / (float)(1 << 24) * 0.3f;
        inputs[s * SampleSize + j] = (j / Side == label ? 1.0f : 0.0f) + noise;
      }
    }
  }

  public static Dataset MakeDataset(int samples) {
    float[] x;
    int[] y;
    Make(samples, out x, out y);
    return new Dataset(x, y, 1, Side, Side, Classes);
  }

  /// 1x4x4 -> dense 16 -> relu -> dense 4.
  public static Model MakeModel() {
    var model = new Model(1, Side, Side);
    model.AddDense(16);
    model.AddActivation(Activation.Relu);
    model.AddDense(Classes);
    return model;
  }

  public static Trainer MakeTrainer(Context context, ulong seed = 1, float learningRate = 0.5f) {
    using (var model = MakeModel())
    using (var options = new TrainerOptions())
    using (var optimizer = new OptimizerOptions()) {
      options.Seed = seed;
      optimizer.LearningRate = learningRate;
      return new Trainer(context, model, options, optimizer);
    }
  }

  public static int Bits(float f) { return BitConverter.ToInt32(BitConverter.GetBytes(f), 0); }
}

}
