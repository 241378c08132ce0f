package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.dptrain.*;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Token models (model.h's token builders, trainer.h's token steps), token and text datasets, the weight decay
 * scope and the counted targets.
 */
class TokenModelTest {
  @TempDir Path dir;

  static final int T = 6;
  static final int V = 11;
  static final int C = 8;
  static final int BATCH = 4;
  /** wte 11x8, wpe 6x8, ln_1 8 + 8, c_attn 24x8 + 24, lm_head 11x8 (no bias). */
  static final long PARAMETERS = V * C + T * C + 2 * C + 3 * C * C + 3 * C + V * C;

  /**
   * A one-block GPT in small: tokens [t] -> wte (vocabulary x 8) -> wpe -> layer norm -> linear 24 (queries,
   * keys, values) -> causal self-attention (2 heads) -> lm_head: logits [t, vocabulary].
   */
  static Model tinyGpt(long t, long vocabulary) {
    Model m = Model.createTokens(t);
    long x = m.tokenEmbedding(Model.INPUT, vocabulary, C, "wte");
    x = m.positionEmbedding(x, "wpe");
    x = m.layerNorm(x, "ln_1");
    x = m.linear(x, 3 * C, "c_attn");
    x = m.causalSelfAttention(x, 2, "attn");
    m.linear(x, vocabulary, false, "lm_head");
    return m;
  }

  /** Step {@code step}'s batch: BATCH sequences of T tokens, each target the next token or (some) ignored. */
  static int[][] batch(int step) {
    int[] tokens = new int[BATCH * T];
    int[] targets = new int[BATCH * T];
    for (int s = 0; s < BATCH; ++s) {
      for (int p = 0; p < T; ++p) {
        int i = s * T + p;
        tokens[i] = (3 * s + 5 * p + 7 * step) % V;
        targets[i] = (i + step) % 5 == 2 ? Dptrain.IGNORE_LABEL : (tokens[i] + 1) % V;
      }
    }
    return new int[][] {tokens, targets};
  }

  static long counted(int[] targets) {
    long n = 0;
    for (int y : targets) if (y != Dptrain.IGNORE_LABEL) ++n;
    return n;
  }

  static OptimizerOptions adamw(WeightDecayScope scope) {
    OptimizerOptions o = new OptimizerOptions();
    o.setKind(OptimizerKind.OPTIMIZER_ADAMW);
    o.setLearningRate(0.01f);
    o.setWeightDecay(0.1f);
    o.setWeightDecayScope(scope);
    return o;
  }

  /**
   * A copy of parameters {@code p} of {@link #tinyGpt} without the keys' bias (c_attn.bias[C:2C], set to 0). Its
   * gradient is exactly 0 in exact arithmetic (adding b to every key adds q.b to a whole row of scores, which
   * the softmax ignores), so in floating point it is rounding noise whose sign differs between a 1-device and a
   * 2-device sum, and AdamW's first steps (about lr * sign(g)) make a full step of it either way: 3e-3 relative
   * error on this model. The contract holds for it only to within its noise, as in any framework
   * (tests/core/test_transformer_equivalence.cpp, whose model leaves the bias out instead).
   */
  static float[] withoutKeyBias(Model m, float[] p) {
    NamedTensor bias = m.parameters().stream().filter(t -> t.name().equals("c_attn.bias")).findFirst().get();
    float[] out = p.clone();
    java.util.Arrays.fill(out, (int) bias.offset() + C, (int) bias.offset() + 2 * C, 0f);
    return out;
  }

  static double distance(float[] a, float[] b) {
    double sum = 0;
    for (int i = 0; i < a.length; ++i) sum += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
    return Math.sqrt(sum);
  }

  /** A few KB of English text, the same on every run. */
  static byte[] englishText() {
    String[] sentences = {
      "The quick brown fox jumps over the lazy dog. ",
      "A small model learns the letters of a language before its words. ",
      "Every morning the baker opened the shop and the smell of bread filled the street. ",
      "She wrote the numbers down, checked them twice, and sent the letter. ",
      "Rivers run to the sea, yet the sea is never full. ",
      "He said that the train would leave at seven, but it left at eight. ",
      "When the wind turned, the boats came back to the harbour one by one.\n",
    };
    StringBuilder text = new StringBuilder();
    for (int i = 0; text.length() < 4000; ++i) text.append(sentences[(i * 3 + i / 7) % sentences.length]);
    return text.toString().getBytes(StandardCharsets.UTF_8);
  }

  static void assertStatus(Class<? extends DptrainException> type, Status status, String messagePart, Executable call) {
    DptrainException e = assertThrows(type, call);
    assertEquals(status, e.getStatus(), e.getMessage());
    assertTrue(e.getMessage().contains(messagePart), "'" + e.getMessage() + "' lacks '" + messagePart + "'");
  }

  @Test
  void theTinyGptHasItsShapesNamesAndInputType() {
    try (Model m = tinyGpt(T, V)) {
      assertEquals(InputType.INPUT_TOKENS, m.inputType());
      assertArrayEquals(new int[] {T}, m.tensorShape(Model.INPUT));
      assertArrayEquals(new int[] {T, C}, m.tensorShape(1), "wte");
      assertArrayEquals(new int[] {T, 3 * C}, m.tensorShape(4), "c_attn");
      assertArrayEquals(new int[] {T, C}, m.tensorShape(5), "attn");
      assertArrayEquals(new int[] {T, V}, m.tensorShape(m.outputTensor()), "the logits");
      assertEquals(T * V, m.outputSize());
      assertEquals(PARAMETERS, m.parameterCount());
      List<NamedTensor> p = m.parameters();
      assertEquals("wte.weight", p.get(0).name());
      assertArrayEquals(new int[] {V, C}, p.get(0).shape());
      assertEquals("wpe.weight", p.get(1).name());
      assertArrayEquals(new int[] {T, C}, p.get(1).shape());
      assertEquals("lm_head.weight", p.get(p.size() - 1).name());
      assertArrayEquals(new int[] {V, C}, p.get(p.size() - 1).shape());
    }
    try (Model f = Fixtures.tiny()) {
      assertEquals(InputType.INPUT_FLOAT32, f.inputType());
    }
    try (Model gpt = Model.builtin("gpt-mini")) {
      assertEquals(InputType.INPUT_TOKENS, gpt.inputType());
      assertEquals(3323392, gpt.parameterCount());
      assertArrayEquals(new int[] {128, 256}, gpt.tensorShape(gpt.outputTensor()));
      assertTrue(gpt.parameters().stream().anyMatch(t -> t.name().equals("transformer.h.0.attn.c_attn.weight")
          && java.util.Arrays.equals(t.shape(), new int[] {768, 256})));
    }
    OptimizerOptions o = new OptimizerOptions();
    assertEquals(WeightDecayScope.WEIGHT_DECAY_ALL, o.getWeightDecayScope(), "the library's default");
  }

  @Test
  void twoDevicesTrainAsOneWithIgnoredTargetsAndMatrixWeightDecay() {
    try (Context c = new Context(2, 0); Model m = tinyGpt(T, V);
         Trainer two = new Trainer(c, m, Fixtures.seeded(7), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES));
         Trainer one = new Trainer(c, m, Fixtures.seeded(7), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES),
             new long[] {0});
         Trainer all = new Trainer(c, m, Fixtures.seeded(7), adamw(WeightDecayScope.WEIGHT_DECAY_ALL),
             new long[] {0})) {
      assertEquals(2, two.deviceCount());
      assertEquals(1, one.deviceCount());
      float[] start = one.getParameters();
      assertArrayEquals(start, two.getParameters(), "the same seed, the same initial parameters");
      int[][] first = batch(0);
      EvalResult before = two.evaluateTokens(first[0], first[1], BATCH);
      assertEquals(counted(first[1]), before.getTargets());
      assertEquals(BATCH, before.getSamples());
      for (int step = 0; step < 3; ++step) {
        int[][] b = batch(step);
        long expected = counted(b[1]);
        assertTrue(expected < BATCH * T, "some targets are ignored");
        StepResult r2 = two.stepTokens(b[0], b[1], BATCH);
        StepResult r1 = one.stepTokens(b[0], b[1], BATCH);
        all.stepTokens(b[0], b[1], BATCH);
        assertEquals(expected, r2.getTargets());
        assertEquals(expected, r1.getTargets());
        assertEquals(BATCH, r2.getSamples());
        assertTrue(r2.getApplied());
        assertTrue(Double.isFinite(r2.getLoss()), "loss " + r2.getLoss());
        assertEquals(r1.getLoss(), r2.getLoss(), 1e-5);
        if (step == 0) {
          assertTrue(r2.getLoss() < Math.log(V) + 0.5, "first loss " + r2.getLoss());
          assertEquals(before.getLoss(), r2.getLoss(), 1e-5, "the step reports the loss before its update");
        }
      }
      float[] a = withoutKeyBias(m, two.getParameters());
      float[] b = withoutKeyBias(m, one.getParameters());
      double moved = distance(b, withoutKeyBias(m, start));
      assertTrue(moved > 0, "the parameters moved");
      assertTrue(distance(a, b) / moved < 1e-5, "relative error (all but the keys' bias) " + distance(a, b) / moved);
      GraphModelTest.assertBitwiseEqual(two.getReplicaParameters(0), two.getReplicaParameters(1));
      // Decaying the embeddings and norms too gives other parameters: the scope reaches the library.
      assertTrue(distance(withoutKeyBias(m, all.getParameters()), b) / moved > 1e-3, "WEIGHT_DECAY_ALL trains as MATRICES");

      // Every position's logits: T * V per sample, finite, and causal (position t sees tokens 0..t only).
      int[][] p = batch(5);
      float[] logits = two.predictTokens(p[0], BATCH);
      assertEquals(BATCH * T * V, logits.length);
      for (float v : logits) assertTrue(Float.isFinite(v));
      int[] changed = p[0].clone();
      changed[T - 1] = (changed[T - 1] + 1) % V; // the last token of sample 0
      float[] other = two.predictTokens(changed, BATCH);
      for (int i = 0; i < (T - 1) * V; ++i) assertEquals(logits[i], other[i], 1e-6, "logit " + i);
      boolean differs = false;
      for (int i = (T - 1) * V; i < T * V; ++i) differs |= logits[i] != other[i];
      assertTrue(differs, "the last position sees the changed token");
      float[] viaBuffer = new float[BATCH * T * V];
      java.nio.FloatBuffer out = Fixtures.directFloats(viaBuffer);
      two.predictTokens(Fixtures.directInts(p[0]), BATCH, out);
      for (int i = 0; i < logits.length; ++i) assertEquals(logits[i], out.get(i));
    }
  }

  @Test
  void tokenDatasetsCopyTheirSamples() {
    int[][] b = batch(1);
    try (Dataset d = Dataset.createTokens(b[0], b[1], BATCH, T, V);
         Dataset perSample = Dataset.createTokens(b[0], new int[] {1, 2, Dptrain.IGNORE_LABEL, 4}, BATCH, T, V);
         Dataset fromBuffers = Dataset.createTokens(Fixtures.directInts(b[0]), Fixtures.directInts(b[1]), BATCH, T, V)) {
      assertEquals(InputType.INPUT_TOKENS, d.inputType());
      assertEquals(BATCH, d.sampleCount());
      assertEquals(T, d.targetsPerSample());
      assertEquals(V, d.classCount());
      assertEquals(1, perSample.targetsPerSample());
      assertEquals(BATCH, fromBuffers.sampleCount());
      int[] tokens = new int[2 * T];
      int[] targets = new int[2 * T];
      d.copyTokens(1, 2, tokens, targets);
      assertArrayEquals(java.util.Arrays.copyOfRange(b[0], T, 3 * T), tokens);
      assertArrayEquals(java.util.Arrays.copyOfRange(b[1], T, 3 * T), targets);
      java.nio.IntBuffer bt = Fixtures.directInts(new int[T]);
      java.nio.IntBuffer by = Fixtures.directInts(new int[1]);
      perSample.copyTokens(2, 1, bt, by);
      assertEquals(b[0][2 * T + 3], bt.get(3));
      assertEquals(Dptrain.IGNORE_LABEL, by.get(0));
    }
    try (Dataset f = Fixtures.tinyDataset(4)) {
      assertEquals(InputType.INPUT_FLOAT32, f.inputType());
      assertEquals(1, f.targetsPerSample());
    }
  }

  @Test
  void textLoadsIntoWindowsAndTrainsBelowTheUniformLoss() throws Exception {
    byte[] text = englishText();
    Path file = dir.resolve("english.txt");
    Files.write(file, text);
    final int context = 16;
    int n = text.length;
    int validationBytes = (int) Math.ceil(n * 0.25);
    int trainBytes = n - validationBytes;
    Dataset[] parts = Dataset.loadText(file.toString(), context, 0.25);
    assertEquals(2, parts.length);
    try (Dataset train = parts[0]; Dataset validation = parts[1]; Context c = new Context(2, 0);
         Model m = tinyGpt(context, Dptrain.TEXT_VOCABULARY);
         Trainer t = new Trainer(c, m, Fixtures.seeded(3), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES))) {
      assertEquals((trainBytes - 1) / context, train.sampleCount());
      assertEquals((validationBytes - 1) / context, validation.sampleCount());
      assertEquals(InputType.INPUT_TOKENS, train.inputType());
      assertEquals(context, train.targetsPerSample());
      assertEquals(Dptrain.TEXT_VOCABULARY, train.classCount());
      int[] tokens = new int[context];
      int[] targets = new int[context];
      train.copyTokens(0, 1, tokens, targets);
      for (int i = 0; i < context; ++i) {
        assertEquals(text[i] & 0xff, tokens[i], "token " + i);
        assertEquals(text[i + 1] & 0xff, targets[i], "target " + i);
      }
      validation.copyTokens(0, 1, tokens, targets);
      assertEquals(text[trainBytes] & 0xff, tokens[0], "the validation part starts where the training part ends");

      FitOptions o = new FitOptions();
      o.setEpochs(1);
      o.setBatchSize(8);
      FitResult r = t.fit(train, validation, o);
      assertEquals(1, r.getEpochsCompleted());
      assertTrue(r.getHasTest());
      assertTrue(Double.isFinite(r.getTestLoss()) && r.getTestLoss() < Math.log(Dptrain.TEXT_VOCABULARY),
          "validation loss " + r.getTestLoss());
      EvalResult e = t.evaluateDataset(validation, 0);
      assertEquals(r.getTestLoss(), e.getLoss(), 1e-6);
      assertEquals(validation.sampleCount() * context, e.getTargets(), "every target of a text counts");
    }
  }

  @Test
  void badTokenInputIsRejectedAndTheTrainersStayUsable() {
    try (Context c = new Context(2, 0); Model m = tinyGpt(T, V); Model f = Fixtures.tiny();
         Trainer tokens = new Trainer(c, m, Fixtures.seeded(1), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES));
         Trainer floats = new Trainer(c, f)) {
      int[][] b = batch(0);
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "dpt_trainer_step_tokens",
          () -> floats.stepTokens(b[0], b[1], BATCH));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "dpt_trainer_step",
          () -> tokens.step(new float[BATCH * T], new int[BATCH]));
      int[] badToken = b[0].clone();
      badToken[7] = V;
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, "dpt_trainer_step_tokens",
          () -> tokens.stepTokens(badToken, b[1], BATCH));
      int[] badTarget = b[1].clone();
      badTarget[3] = -2;
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, "dpt_trainer_step_tokens",
          () -> tokens.stepTokens(b[0], badTarget, BATCH));
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, "dpt_trainer_evaluate_tokens",
          () -> tokens.evaluateTokens(b[0], badTarget, BATCH));
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, "dpt_trainer_predict_tokens",
          () -> tokens.predictTokens(badToken, BATCH));
      assertStatus(InvalidArgumentException.class, Status.ERROR_SIZE_MISMATCH, "dpt_trainer_step_tokens",
          () -> tokens.stepTokens(b[0], b[1], BATCH - 1));
      assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, "Trainer.stepTokens: tokens must not be null",
          () -> tokens.stepTokens((int[]) null, b[1], BATCH));
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE,
          "Trainer.stepTokens: batch_size must not be negative", () -> tokens.stepTokens(b[0], b[1], -1));
      assertStatus(IOFormatException.class, Status.ERROR_IO, "dpt_dataset_load_text",
          () -> Dataset.loadText(dir.resolve("missing.txt").toString(), 16, 0.25));
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, "dpt_dataset_create_tokens",
          () -> Dataset.createTokens(badToken, b[1], BATCH, T, V));
      // A linear does not read tokens (only a token embedding does).
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "dpt_model_linear",
          () -> m.linear(Model.INPUT, 4));
      try (Dataset d = Fixtures.tinyDataset(4)) {
        assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "dpt_dataset_copy_tokens",
            () -> d.copyTokens(0, 1, new int[16], new int[1]));
      }

      // Both trainers still train.
      StepResult r = tokens.stepTokens(b[0], b[1], BATCH);
      assertEquals(counted(b[1]), r.getTargets());
      assertEquals(1, r.getOptimizerSteps(), "no failed call took a step");
      assertTrue(Double.isFinite(r.getLoss()));
      for (float v : tokens.getParameters()) assertTrue(Float.isFinite(v));
      StepResult classified = floats.step(Fixtures.inputs(2, 16, 3), new int[] {0, Dptrain.IGNORE_LABEL});
      assertEquals(2, classified.getSamples());
      assertEquals(1, classified.getTargets(), "a classifier ignores the label -1 too");
    }
  }

  /** The parameters of {@link #tiedLm} before the tie: wte, wpe, mid (weight, bias), head (no bias). */
  static final long TIED_LM_UNTIED = V * C + T * C + C * C + C + V * C;

  /**
   * A small language model whose head can be tied to its embedding (GPT-2's tied LM head): tokens [T] -> wte (V x
   * C) -> wpe -> linear C ("mid") -> head (V units, no bias): logits [T, V]. Once head.weight is tied to
   * wte.weight, logits[t] = mid(wte[x_t] + wpe[t]) . wte ({@link #tiedLogits}).
   */
  static Model tiedLm() {
    Model m = Model.createTokens(T);
    long x = m.tokenEmbedding(Model.INPUT, V, C, "wte");
    x = m.positionEmbedding(x, "wpe");
    x = m.linear(x, C, "mid");
    m.linear(x, V, false, "head");
    return m;
  }

  /** The logits of {@link #tiedLm} with the tie, in double, from its parameters {@code p}: the head multiplies by wte. */
  static double[] tiedLogits(List<NamedTensor> named, float[] p, int[] tokens) {
    java.util.Map<String, Integer> at = new java.util.HashMap<>();
    for (NamedTensor t : named) at.put(t.name(), (int) t.offset());
    int wte = at.get("wte.weight"), wpe = at.get("wpe.weight"), w = at.get("mid.weight"), b = at.get("mid.bias");
    double[] out = new double[tokens.length * V];
    double[] e = new double[C];
    double[] h = new double[C];
    for (int i = 0; i < tokens.length; ++i) {
      for (int c = 0; c < C; ++c) e[c] = (double) p[wte + tokens[i] * C + c] + p[wpe + (i % T) * C + c];
      for (int o = 0; o < C; ++o) {
        h[o] = p[b + o];
        for (int c = 0; c < C; ++c) h[o] += (double) p[w + o * C + c] * e[c];
      }
      for (int v = 0; v < V; ++v) {
        for (int c = 0; c < C; ++c) out[i * V + v] += h[c] * p[wte + v * C + c];
      }
    }
    return out;
  }

  /** Checks a trainer's logits of {@code tokens} against {@link #tiedLogits} of the parameters {@code p}. */
  static void assertTiedLogits(Trainer trainer, List<NamedTensor> named, float[] p, int[] tokens) {
    float[] got = trainer.predictTokens(tokens, tokens.length / T);
    double[] want = tiedLogits(named, p, tokens);
    for (int i = 0; i < want.length; ++i) {
      assertEquals(want[i], got[i], 1e-5 + 1e-4 * Math.abs(want[i]), "logit " + i + " (the head multiplies by wte)");
    }
  }

  @Test
  void aTiedHeadLeavesTheParametersAndTrainsOnTwoDevicesAsOnOne() {
    try (Model m = tiedLm()) {
      assertEquals(TIED_LM_UNTIED, m.parameterCount());
      m.tie("head.weight", "wte.weight");
      final long tied = TIED_LM_UNTIED - V * C;
      assertEquals(tied, m.parameterCount(), "the tie takes head.weight's V x C floats out");
      List<NamedTensor> named = m.parameters();
      assertEquals(List.of("wte.weight", "wpe.weight", "mid.weight", "mid.bias"),
          named.stream().map(NamedTensor::name).collect(java.util.stream.Collectors.toList()), "no head.weight");
      NamedTensor last = named.get(named.size() - 1);
      assertEquals(tied, last.offset() + last.size(), "the named parameters cover the flat vector");
      String json = m.toJson();
      assertTrue(json.contains("\"ties\"") && json.contains("\"head.weight\""), json);
      try (Model copy = Model.fromJson(json)) {
        assertEquals(tied, copy.parameterCount(), "the JSON copy keeps the tie");
      }

      // Refusals leave the model as it was.
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "already tied",
          () -> m.tie("head.weight", "wte.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "nowhere.weight",
          () -> m.tie("nowhere.weight", "wte.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "shapes differ",
          () -> m.tie("mid.weight", "wte.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "earlier node",
          () -> m.tie("wpe.weight", "mid.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, "dpt_model_tie",
          () -> m.tie("", "wte.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, "dpt_model_tie",
          () -> m.tie(null, "wte.weight"));
      assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, "dpt_model_tie",
          () -> m.tie("mid.weight", null));
      assertEquals(tied, m.parameterCount());
      assertEquals(json, m.toJson(), "a refused tie changed the model");

      // The model still trains: 3 steps on 2 devices and on 1 from one seed agree.
      try (Context c = new Context(2, 0);
           Trainer two = new Trainer(c, m, Fixtures.seeded(7), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES));
           Trainer one = new Trainer(c, m, Fixtures.seeded(7), adamw(WeightDecayScope.WEIGHT_DECAY_MATRICES),
               new long[] {0})) {
        assertEquals(tied, two.parameterCount());
        float[] start = one.getParameters();
        assertArrayEquals(start, two.getParameters(), "the same seed, the same initial parameters");
        assertTiedLogits(two, named, start, batch(0)[0]);
        for (int step = 0; step < 3; ++step) {
          int[][] b = batch(step);
          StepResult r2 = two.stepTokens(b[0], b[1], BATCH);
          StepResult r1 = one.stepTokens(b[0], b[1], BATCH);
          assertEquals(counted(b[1]), r2.getTargets());
          assertEquals(counted(b[1]), r1.getTargets());
          assertTrue(r2.getApplied());
          assertTrue(Double.isFinite(r2.getLoss()), "loss " + r2.getLoss());
          assertEquals(r1.getLoss(), r2.getLoss(), 1e-5);
        }
        float[] a = two.getParameters();
        float[] b = one.getParameters();
        double moved = distance(b, start);
        assertTrue(moved > 0, "the parameters moved");
        assertTrue(distance(a, b) / moved < 1e-5, "relative error of 2 devices vs 1: " + distance(a, b) / moved);
        assertTiedLogits(one, named, b, batch(5)[0]); // still one tensor after training
      }
    }
    Model closed = tiedLm();
    closed.close();
    assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, "Model.tie: this Model is closed",
        () -> closed.tie("head.weight", "wte.weight"));
  }
}
