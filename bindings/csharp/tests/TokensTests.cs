// Token models through the binding: the token builders, the token steps, token and text datasets, the weight
// decay scope, the counted targets and the errors of bad token input.
using System;
using System.IO;
using System.Linq;
using System.Text;
using NUnit.Framework;
using DPTrain;

namespace DPTrain.Tests {

[TestFixture]
public class TokensTests {
  const int T = 6, V = 11, C = 8, Batch = 4;
  /// wte 11x8, wpe 6x8, ln_1 8 + 8, c_attn 24x8 + 24, lm_head 11x8 (no bias).
  const ulong Parameters = V * C + T * C + 2 * C + 3 * C * C + 3 * C + V * C;

  Context context;
  string dir;

  [TestFixtureSetUp]
  public void Create() {
    context = new Context(2);
    dir = Path.Combine(Path.GetTempPath(), "dptrain-csharp-tokens-" + Guid.NewGuid().ToString("N"));
    Directory.CreateDirectory(dir);
  }

  [TestFixtureTearDown]
  public void Release() {
    context.Dispose();
    Directory.Delete(dir, true);
  }

  /// A one-block GPT in small: tokens [t] -> wte (vocabulary x 8) -> wpe -> layer norm -> linear 24 (queries,
  /// keys, values) -> causal self-attention (2 heads) -> lm_head: logits [t, vocabulary].
  static Model MakeTinyGpt(ulong t, ulong vocabulary) {
    Model m = Model.CreateTokens(t);
    TensorId x = m.TokenEmbedding(m.Input, vocabulary, C, "wte");
    x = m.PositionEmbedding(x, "wpe");
    x = m.LayerNorm(x, name: "ln_1");
    x = m.Linear(x, 3 * C, name: "c_attn");
    x = m.CausalSelfAttention(x, 2, "attn");
    m.Linear(x, vocabulary, false, "lm_head");
    return m;
  }

  /// Step <paramref name="step"/>'s batch: Batch sequences of T tokens, each target the next token or (some)
  /// ignored.
  static void MakeBatch(int step, out int[] tokens, out int[] targets) {
    tokens = new int[Batch * T];
    targets = new int[Batch * T];
    for (int s = 0; s < Batch; ++s) {
      for (int p = 0; p < T; ++p) {
        int i = s * T + p;
        tokens[i] = (3 * s + 5 * p + 7 * step) % V;
        targets[i] = (i + step) % 5 == 2 ? Library.IgnoreLabel : (tokens[i] + 1) % V;
      }
    }
  }

  static ulong Counted(int[] targets) { return (ulong)targets.Count(y => y != Library.IgnoreLabel); }

  Trainer MakeTrainer(Model model, ulong seed, WeightDecayScope scope, ulong[] devices = null) {
    using (var options = new TrainerOptions())
    using (var optimizer = new OptimizerOptions()) {
      options.Seed = seed;
      optimizer.Kind = OptimizerKind.AdamW;
      optimizer.LearningRate = 0.01f;
      optimizer.WeightDecay = 0.1f;
      optimizer.WeightDecayScope = scope;
      if (devices == null) return new Trainer(context, model, options, optimizer);
      return new Trainer(context, model, options, optimizer, devices, new float[0]);
    }
  }

  /// A copy of parameters <paramref name="p"/> of MakeTinyGpt without the keys' bias (c_attn.bias[C:2C], set to
  /// 0). Its gradient is exactly 0 in exact arithmetic (adding b to every key adds q.b to a whole row of scores,
  /// which the softmax ignores), so in floating point it is rounding noise whose sign differs between a 1-device
  /// and a 2-device sum, and AdamW's first steps (about lr * sign(g)) make a full step of it either way: 3e-3
  /// relative error on this model. The contract holds for it only to within its noise, as in any framework
  /// (tests/core/test_transformer_equivalence.cpp, whose model leaves the bias out instead).
  static float[] WithoutKeyBias(Model m, float[] p) {
    NamedTensor bias = m.NamedParameters.First(t => t.Name == "c_attn.bias");
    var copy = (float[])p.Clone();
    for (ulong i = bias.Offset + C; i < bias.Offset + 2 * C; ++i) copy[i] = 0;
    return copy;
  }

  static double Distance(float[] a, float[] b) {
    double sum = 0;
    for (int i = 0; i < a.Length; ++i) sum += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return Math.Sqrt(sum);
  }

  static bool IsFinite(double v) { return !double.IsNaN(v) && !double.IsInfinity(v); }

  /// A few KB of English text, the same on every run.
  static byte[] EnglishText() {
    string[] sentences = {
      "The quick brown fox jumps over the lazy dog. ",
      "A small model learns the letters of a language before its words. ",
      "Every morning the baker opened the shop and the smell of bread filled the street. ",
      "She wrote the numbers down, checked them twice, and sent the letter. ",
      "Rivers run to the sea, yet the sea is never full. ",
      "He said that the train would leave at seven, but it left at eight. ",
      "When the wind turned, the boats came back to the harbour one by one.\n",
    };
    var text = new StringBuilder();
    for (int i = 0; text.Length < 4000; ++i) text.Append(sentences[(i * 3 + i / 7) % sentences.Length]);
    return Encoding.UTF8.GetBytes(text.ToString());
  }

  static E AssertStatus<E>(Status status, string message, TestDelegate call) where E : DptrainException {
    var e = Assert.Throws<E>(call);
    Assert.AreEqual(status, e.Status, e.Message);
    StringAssert.Contains(message, e.Message);
    return e;
  }

  [Test]
  public void TheTinyGptHasItsShapesNamesAndInputType() {
    using (Model m = MakeTinyGpt(T, V)) {
      Assert.AreEqual(InputType.Tokens, m.InputType);
      CollectionAssert.AreEqual(new[] { T }, m.GetTensorShape(m.Input));
      CollectionAssert.AreEqual(new[] { T, C }, m.GetTensorShape(new TensorId(1)), "wte");
      CollectionAssert.AreEqual(new[] { T, 3 * C }, m.GetTensorShape(new TensorId(4)), "c_attn");
      CollectionAssert.AreEqual(new[] { T, C }, m.GetTensorShape(new TensorId(5)), "attn");
      CollectionAssert.AreEqual(new[] { T, V }, m.GetTensorShape(m.Output), "the logits");
      Assert.AreEqual((ulong)(T * V), m.OutputSize);
      Assert.AreEqual(Parameters, m.ParameterCount);
      var p = m.NamedParameters;
      Assert.AreEqual("wte.weight", p[0].Name);
      CollectionAssert.AreEqual(new[] { V, C }, p[0].Shape);
      Assert.AreEqual("wpe.weight", p[1].Name);
      Assert.AreEqual("lm_head.weight", p[p.Count - 1].Name);
      CollectionAssert.AreEqual(new[] { V, C }, p[p.Count - 1].Shape);
    }
    using (Model f = TestData.MakeModel()) Assert.AreEqual(InputType.Float32, f.InputType);
    using (Model gpt = Model.Builtin("gpt-mini")) {
      Assert.AreEqual(InputType.Tokens, gpt.InputType);
      Assert.AreEqual(3323392UL, gpt.ParameterCount);
      CollectionAssert.AreEqual(new[] { 128, 256 }, gpt.GetTensorShape(gpt.Output));
      Assert.IsTrue(gpt.NamedParameters.Any(t => t.Name == "transformer.h.0.attn.c_attn.weight" &&
                                                 t.Shape.SequenceEqual(new[] { 768, 256 })));
    }
    using (var o = new OptimizerOptions()) Assert.AreEqual(WeightDecayScope.AllParameters, o.WeightDecayScope);
  }

  [Test]
  public void TwoDevicesTrainAsOneWithIgnoredTargetsAndMatrixWeightDecay() {
    using (Model m = MakeTinyGpt(T, V))
    using (Trainer two = MakeTrainer(m, 7, WeightDecayScope.Matrices))
    using (Trainer one = MakeTrainer(m, 7, WeightDecayScope.Matrices, new ulong[] { 0 }))
    using (Trainer all = MakeTrainer(m, 7, WeightDecayScope.AllParameters, new ulong[] { 0 })) {
      Assert.AreEqual(2UL, two.DeviceCount);
      Assert.AreEqual(1UL, one.DeviceCount);
      float[] start = one.GetParameters();
      CollectionAssert.AreEqual(start, two.GetParameters(), "the same seed, the same initial parameters");
      int[] x, y;
      MakeBatch(0, out x, out y);
      double before;
      using (EvalResult e = two.EvaluateTokens(x, y, Batch)) {
        Assert.AreEqual(Counted(y), e.Targets);
        Assert.AreEqual((ulong)Batch, e.Samples);
        before = e.Loss;
      }
      for (int step = 0; step < 3; ++step) {
        MakeBatch(step, out x, out y);
        ulong expected = Counted(y);
        Assert.Less(expected, (ulong)(Batch * T), "some targets are ignored");
        using (StepResult r2 = two.StepTokens(x, y, Batch))
        using (StepResult r1 = one.StepTokens(x, y, Batch)) {
          all.StepTokens(x, y, Batch).Dispose();
          Assert.AreEqual(expected, r2.Targets);
          Assert.AreEqual(expected, r1.Targets);
          Assert.AreEqual((ulong)Batch, r2.Samples);
          Assert.AreEqual(1, r2.Applied);
          Assert.IsTrue(IsFinite(r2.Loss), "loss " + r2.Loss);
          Assert.AreEqual(r1.Loss, r2.Loss, 1e-5);
          if (step == 0) {
            Assert.Less(r2.Loss, Math.Log(V) + 0.5, "first loss");
            Assert.AreEqual(before, r2.Loss, 1e-5, "the step reports the loss before its update");
          }
        }
      }
      float[] a = WithoutKeyBias(m, two.GetParameters()), b = WithoutKeyBias(m, one.GetParameters());
      double moved = Distance(b, WithoutKeyBias(m, start));
      Assert.Greater(moved, 0.0, "the parameters moved");
      Assert.Less(Distance(a, b) / moved, 1e-5, "relative error of 2 devices vs 1 (all but the keys' bias)");
      float[] replica0 = two.GetReplicaParameters(0), replica1 = two.GetReplicaParameters(1);
      for (int i = 0; i < replica0.Length; ++i)
        Assert.AreEqual(TestData.Bits(replica0[i]), TestData.Bits(replica1[i]), "replica parameter " + i);
      // Decaying the embeddings and norms too gives other parameters: the scope reaches the library.
      Assert.Greater(Distance(WithoutKeyBias(m, all.GetParameters()), b) / moved, 1e-3, "AllParameters trains as Matrices");

      // Every position's logits: T * V per sample, finite, and causal (position t sees tokens 0..t only).
      MakeBatch(5, out x, out y);
      float[] logits = two.PredictTokens(x, Batch, m.OutputSize);
      Assert.AreEqual(Batch * T * V, logits.Length);
      Assert.IsTrue(logits.All(v => IsFinite(v)));
      var changed = (int[])x.Clone();
      changed[T - 1] = (changed[T - 1] + 1) % V;  // the last token of sample 0
      var other = new float[logits.Length];
      two.PredictTokens(changed, Batch, other);
      for (int i = 0; i < (T - 1) * V; ++i) Assert.AreEqual(logits[i], other[i], 1e-6, "logit " + i);
      bool differs = false;
      for (int i = (T - 1) * V; i < T * V; ++i) differs |= logits[i] != other[i];
      Assert.IsTrue(differs, "the last position sees the changed token");
    }
  }

  [Test]
  public void TokenDatasetsCopyTheirSamples() {
    int[] x, y;
    MakeBatch(1, out x, out y);
    using (Dataset d = Dataset.CreateTokens(x, y, Batch, T, V))
    using (Dataset perSample = Dataset.CreateTokens(x, new[] { 1, 2, Library.IgnoreLabel, 4 }, Batch, T, V)) {
      Assert.AreEqual(InputType.Tokens, d.InputType);
      Assert.AreEqual((ulong)Batch, d.SampleCount);
      Assert.AreEqual((ulong)T, d.TargetsPerSample);
      Assert.AreEqual((ulong)V, d.ClassCount);
      Assert.AreEqual(1UL, perSample.TargetsPerSample);
      var tokens = new int[2 * T];
      var targets = new int[2 * T];
      d.CopyTokens(1, 2, tokens, targets);
      CollectionAssert.AreEqual(x.Skip(T).Take(2 * T).ToArray(), tokens);
      CollectionAssert.AreEqual(y.Skip(T).Take(2 * T).ToArray(), targets);
      var one = new int[1];
      perSample.CopyTokens(2, 1, new int[T], one);
      Assert.AreEqual(Library.IgnoreLabel, one[0]);
    }
    using (Dataset f = TestData.MakeDataset(4)) {
      Assert.AreEqual(InputType.Float32, f.InputType);
      Assert.AreEqual(1UL, f.TargetsPerSample);
    }
  }

  [Test]
  public void TextLoadsIntoWindowsAndTrainsBelowTheUniformLoss() {
    byte[] text = EnglishText();
    string file = Path.Combine(dir, "english.txt");
    File.WriteAllBytes(file, text);
    const int context = 16;
    int n = text.Length;
    int validationBytes = (int)Math.Ceiling(n * 0.25);
    int trainBytes = n - validationBytes;
    Dataset validation;
    using (Dataset train = Dataset.LoadText(file, context, 0.25, out validation))
    using (validation)
    using (Model m = MakeTinyGpt(context, (ulong)Library.TextVocabulary))
    using (Trainer t = MakeTrainer(m, 3, WeightDecayScope.Matrices))
    using (var options = new FitOptions { Epochs = 1, BatchSize = 8 }) {
      Assert.AreEqual((ulong)((trainBytes - 1) / context), train.SampleCount);
      Assert.AreEqual((ulong)((validationBytes - 1) / context), validation.SampleCount);
      Assert.AreEqual(InputType.Tokens, train.InputType);
      Assert.AreEqual((ulong)context, train.TargetsPerSample);
      Assert.AreEqual((ulong)Library.TextVocabulary, train.ClassCount);
      var tokens = new int[context];
      var targets = new int[context];
      train.CopyTokens(0, 1, tokens, targets);
      for (int i = 0; i < context; ++i) {
        Assert.AreEqual((int)text[i], tokens[i], "token " + i);
        Assert.AreEqual((int)text[i + 1], targets[i], "target " + i);
      }
      validation.CopyTokens(0, 1, tokens, targets);
      Assert.AreEqual((int)text[trainBytes], tokens[0], "the validation part starts where the training part ends");

      using (FitResult r = t.Fit(train, validation, options)) {
        Assert.AreEqual(1UL, r.EpochsCompleted);
        Assert.AreEqual(1, r.HasTest);
        Assert.IsTrue(IsFinite(r.TestLoss), "validation loss " + r.TestLoss);
        Assert.Less(r.TestLoss, Math.Log(Library.TextVocabulary), "validation loss");
        using (EvalResult e = t.EvaluateDataset(validation, 0)) {
          Assert.AreEqual(r.TestLoss, e.Loss, 1e-6);
          Assert.AreEqual(validation.SampleCount * context, e.Targets, "every target of a text counts");
        }
      }
    }
  }

  [Test]
  public void BadTokenInputIsRejectedAndTheTrainersStayUsable() {
    using (Model m = MakeTinyGpt(T, V))
    using (Trainer tokens = MakeTrainer(m, 1, WeightDecayScope.Matrices))
    using (Trainer floats = TestData.MakeTrainer(context)) {
      int[] x, y;
      MakeBatch(0, out x, out y);
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "dpt_trainer_step_tokens",
                                             () => floats.StepTokens(x, y, Batch));
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "dpt_trainer_step",
                                             () => tokens.Step(new float[Batch * T], new int[Batch]));
      var badToken = (int[])x.Clone();
      badToken[7] = V;
      AssertStatus<InvalidArgumentException>(Status.OutOfRange, "dpt_trainer_step_tokens",
                                             () => tokens.StepTokens(badToken, y, Batch));
      var badTarget = (int[])y.Clone();
      badTarget[3] = -2;
      AssertStatus<InvalidArgumentException>(Status.OutOfRange, "dpt_trainer_step_tokens",
                                             () => tokens.StepTokens(x, badTarget, Batch));
      AssertStatus<InvalidArgumentException>(Status.OutOfRange, "dpt_trainer_evaluate_tokens",
                                             () => tokens.EvaluateTokens(x, badTarget, Batch));
      AssertStatus<InvalidArgumentException>(Status.OutOfRange, "dpt_trainer_predict_tokens",
                                             () => tokens.PredictTokens(badToken, Batch, new float[Batch * T * V]));
      AssertStatus<InvalidArgumentException>(Status.SizeMismatch, "dpt_trainer_step_tokens",
                                             () => tokens.StepTokens(x, y, Batch - 1));
      var nullTokens = Assert.Throws<ArgumentNullException>(() => tokens.StepTokens(null, y, Batch));
      Assert.AreEqual("tokens", nullTokens.ParamName);
      Dataset validation = null;
      AssertStatus<IOFormatException>(Status.IO, "dpt_dataset_load_text",
                                      () => Dataset.LoadText(Path.Combine(dir, "missing.txt"), 16, 0.25, out validation));
      Assert.IsNull(validation);
      AssertStatus<InvalidArgumentException>(Status.OutOfRange, "dpt_dataset_create_tokens",
                                             () => Dataset.CreateTokens(badToken, y, Batch, T, V));
      // A linear does not read tokens (only a token embedding does).
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "dpt_model_linear",
                                             () => m.Linear(m.Input, 4));
      using (Dataset f = TestData.MakeDataset(4))
        AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "dpt_dataset_copy_tokens",
                                               () => f.CopyTokens(0, 1, new int[16], new int[1]));

      // Both trainers still train.
      using (StepResult r = tokens.StepTokens(x, y, Batch)) {
        Assert.AreEqual(Counted(y), r.Targets);
        Assert.AreEqual(1UL, r.OptimizerSteps, "no failed call took a step");
        Assert.IsTrue(IsFinite(r.Loss));
      }
      Assert.IsTrue(tokens.GetParameters().All(v => IsFinite(v)));
      float[] fx;
      int[] fy;
      TestData.Make(2, out fx, out fy);
      using (StepResult c = floats.Step(fx, new[] { 0, Library.IgnoreLabel })) {
        Assert.AreEqual(2UL, c.Samples);
        Assert.AreEqual(1UL, c.Targets, "a classifier ignores the label -1 too");
      }
    }
  }

  /// The parameters of MakeTiedLm before the tie: wte, wpe, mid (weight, bias), head (no bias).
  const ulong TiedLmUntied = V * C + T * C + C * C + C + V * C;

  /// A small language model whose head can be tied to its embedding (GPT-2's tied LM head): tokens [T] -> wte
  /// (V x C) -> wpe -> linear C ("mid") -> head (V units, no bias): logits [T, V]. Once head.weight is tied to
  /// wte.weight, logits[t] = mid(wte[x_t] + wpe[t]) . wte (TiedLogits).
  static Model MakeTiedLm() {
    Model m = Model.CreateTokens(T);
    TensorId x = m.TokenEmbedding(m.Input, V, C, "wte");
    x = m.PositionEmbedding(x, "wpe");
    x = m.Linear(x, C, name: "mid");
    m.Linear(x, V, false, "head");
    return m;
  }

  /// The logits of MakeTiedLm with the tie, in double, from its parameters <paramref name="p"/>: the head
  /// multiplies by wte.
  static double[] TiedLogits(Model m, float[] p, int[] tokens) {
    var at = m.NamedParameters.ToDictionary(t => t.Name, t => (int)t.Offset);
    int wte = at["wte.weight"], wpe = at["wpe.weight"], w = at["mid.weight"], b = at["mid.bias"];
    var output = new double[tokens.Length * V];
    var e = new double[C];
    var h = new double[C];
    for (int i = 0; i < tokens.Length; ++i) {
      for (int c = 0; c < C; ++c) e[c] = (double)p[wte + tokens[i] * C + c] + p[wpe + (i % T) * C + c];
      for (int o = 0; o < C; ++o) {
        h[o] = p[b + o];
        for (int c = 0; c < C; ++c) h[o] += (double)p[w + o * C + c] * e[c];
      }
      for (int v = 0; v < V; ++v)
        for (int c = 0; c < C; ++c) output[i * V + v] += h[c] * p[wte + v * C + c];
    }
    return output;
  }

  /// Checks a trainer's logits of <paramref name="tokens"/> against TiedLogits of the parameters
  /// <paramref name="p"/>.
  static void AssertTiedLogits(Trainer trainer, Model m, float[] p, int[] tokens) {
    float[] got = trainer.PredictTokens(tokens, (ulong)(tokens.Length / T), m.OutputSize);
    double[] want = TiedLogits(m, p, tokens);
    for (int i = 0; i < want.Length; ++i)
      Assert.AreEqual(want[i], got[i], 1e-5 + 1e-4 * Math.Abs(want[i]), "logit " + i + " (the head multiplies by wte)");
  }

  [Test]
  public void ATiedHeadLeavesTheParametersAndTrainsOnTwoDevicesAsOnOne() {
    using (Model m = MakeTiedLm()) {
      Assert.AreEqual(TiedLmUntied, m.ParameterCount);
      m.Tie("head.weight", "wte.weight");
      const ulong tied = TiedLmUntied - V * C;
      Assert.AreEqual(tied, m.ParameterCount, "the tie takes head.weight's V x C floats out");
      CollectionAssert.AreEqual(new[] { "wte.weight", "wpe.weight", "mid.weight", "mid.bias" },
                                m.NamedParameters.Select(t => t.Name).ToArray(), "no head.weight");
      NamedTensor last = m.NamedParameters.Last();
      Assert.AreEqual(tied, last.Offset + last.Size, "the named parameters cover the flat vector");
      string json = m.ToJson();
      StringAssert.Contains("\"ties\"", json);
      StringAssert.Contains("\"head.weight\"", json);
      using (Model copy = Model.FromJson(json)) Assert.AreEqual(tied, copy.ParameterCount, "the JSON copy keeps the tie");

      // Refusals leave the model as it was.
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "already tied",
                                             () => m.Tie("head.weight", "wte.weight"));
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "nowhere.weight",
                                             () => m.Tie("nowhere.weight", "wte.weight"));
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "shapes differ",
                                             () => m.Tie("mid.weight", "wte.weight"));
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "earlier node",
                                             () => m.Tie("wpe.weight", "mid.weight"));
      AssertStatus<InvalidArgumentException>(Status.InvalidArgument, "dpt_model_tie", () => m.Tie("", "wte.weight"));
      AssertStatus<InvalidArgumentException>(Status.NullPointer, "dpt_model_tie", () => m.Tie(null, "wte.weight"));
      AssertStatus<InvalidArgumentException>(Status.NullPointer, "dpt_model_tie", () => m.Tie("mid.weight", null));
      Assert.AreEqual(tied, m.ParameterCount);
      Assert.AreEqual(json, m.ToJson(), "a refused tie changed the model");

      // The model still trains: 3 steps on 2 devices and on 1 from one seed agree.
      using (Trainer two = MakeTrainer(m, 7, WeightDecayScope.Matrices))
      using (Trainer one = MakeTrainer(m, 7, WeightDecayScope.Matrices, new ulong[] { 0 })) {
        Assert.AreEqual(tied, two.ParameterCount);
        float[] start = one.GetParameters();
        CollectionAssert.AreEqual(start, two.GetParameters(), "the same seed, the same initial parameters");
        int[] x, y;
        MakeBatch(0, out x, out y);
        AssertTiedLogits(two, m, start, x);
        for (int step = 0; step < 3; ++step) {
          MakeBatch(step, out x, out y);
          using (StepResult r2 = two.StepTokens(x, y, Batch))
          using (StepResult r1 = one.StepTokens(x, y, Batch)) {
            Assert.AreEqual(Counted(y), r2.Targets);
            Assert.AreEqual(Counted(y), r1.Targets);
            Assert.AreEqual(1, r2.Applied);
            Assert.IsTrue(IsFinite(r2.Loss), "loss " + r2.Loss);
            Assert.AreEqual(r1.Loss, r2.Loss, 1e-5);
          }
        }
        float[] a = two.GetParameters(), b = one.GetParameters();
        double moved = Distance(b, start);
        Assert.Greater(moved, 0.0, "the parameters moved");
        Assert.Less(Distance(a, b) / moved, 1e-5, "relative error of 2 devices vs 1");
        MakeBatch(5, out x, out y);
        AssertTiedLogits(one, m, b, x);  // still one tensor after training
      }
    }
    Assert.Throws<ObjectDisposedException>(() => {
      var m = MakeTiedLm();
      m.Dispose();
      m.Tie("head.weight", "wte.weight");
    });
  }
}

}
