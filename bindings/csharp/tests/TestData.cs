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

  /// Sample s of 1 x side x side has label s % 3; the pixels j with j % 3 == label are bright, plus a
  /// deterministic ripple (the precision, sharding and profiling fixtures' problem).
  public static void MakeRipple(int side, int samples, out float[] inputs, out int[] labels) {
    const int classes = 3;
    int size = side * side;
    inputs = new float[samples * size];
    labels = new int[samples];
    for (int s = 0; s < samples; ++s) {
      int label = s % classes;
      labels[s] = label;
      for (int j = 0; j < size; ++j) {
        float ripple = (float)(((s * 31L + j * 17L) % 13) / 13.0 - 0.5) * 0.2f;
        inputs[s * size + j] = (j % classes == label ? 1.0f : 0.0f) + ripple;
      }
    }
  }

  /// 1 x side x side -> dense 128 -> relu -> dense 3 (side 8: 8707 parameters).
  public static Model MakeRippleMlp(int side) {
    var model = new Model(1, (ulong)side, (ulong)side);
    model.AddDense(128);
    model.AddActivation(Activation.Relu);
    model.AddDense(3);
    return model;
  }

  public static int Bits(float f) { return BitConverter.ToInt32(BitConverter.GetBytes(f), 0); }
}

}
