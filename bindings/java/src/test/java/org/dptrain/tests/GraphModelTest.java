package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.dptrain.*;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Graph models (the builders of model.h), named tensors, JSON, running statistics and safetensors. */
class GraphModelTest {
  @TempDir Path dir;

  static final int SAMPLES = 8;
  static final int FEATURES = 2 * 8 * 8;
  static final int CLASSES = 3;

  /** model.h's basic block: relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)), torchvision's names. */
  static long basicBlock(Model m, long x, long channels, long stride, String prefix) {
    int[] dims = m.tensorShape(x);
    long y = m.conv2d(x, channels, 3, stride, 1, false, prefix + ".conv1");
    y = m.batchNorm(y, prefix + ".bn1");
    y = m.relu(y);
    y = m.conv2d(y, channels, 3, 1, 1, false, prefix + ".conv2");
    y = m.batchNorm(y, prefix + ".bn2");
    long s = x;
    if (stride != 1 || dims[0] != channels) { // the shortcut: a 1x1 projection
      s = m.conv2d(x, channels, 1, stride, 0, false, prefix + ".downsample.0");
      s = m.batchNorm(s, prefix + ".downsample.1");
    }
    return m.relu(m.add(y, s));
  }

  /** 2x8x8 -> block (2 -> 4 channels, projected) -> block (4, identity) -> gap -> dense 3. */
  static Model residual() {
    Model m = new Model(2, 8, 8);
    long x = basicBlock(m, Model.INPUT, 4, 1, "layer1.0");
    x = basicBlock(m, x, 4, 1, "layer1.1");
    x = m.globalAvgPool(x);
    m.dense(x, CLASSES, "fc");
    return m;
  }

  static final Object[][] PARAMETERS = {
    {"layer1.0.conv1.weight", new int[] {4, 2, 3, 3}}, {"layer1.0.bn1.weight", new int[] {4}},
    {"layer1.0.bn1.bias", new int[] {4}}, {"layer1.0.conv2.weight", new int[] {4, 4, 3, 3}},
    {"layer1.0.bn2.weight", new int[] {4}}, {"layer1.0.bn2.bias", new int[] {4}},
    {"layer1.0.downsample.0.weight", new int[] {4, 2, 1, 1}}, {"layer1.0.downsample.1.weight", new int[] {4}},
    {"layer1.0.downsample.1.bias", new int[] {4}}, {"layer1.1.conv1.weight", new int[] {4, 4, 3, 3}},
    {"layer1.1.bn1.weight", new int[] {4}}, {"layer1.1.bn1.bias", new int[] {4}},
    {"layer1.1.conv2.weight", new int[] {4, 4, 3, 3}}, {"layer1.1.bn2.weight", new int[] {4}},
    {"layer1.1.bn2.bias", new int[] {4}}, {"fc.weight", new int[] {3, 4}}, {"fc.bias", new int[] {3}},
  };
  static final long PARAMETER_COUNT = 72 + 8 + 144 + 8 + 8 + 8 + 144 + 8 + 144 + 8 + 12 + 3;
  static final String[] BATCH_NORMS = {
    "layer1.0.bn1", "layer1.0.bn2", "layer1.0.downsample.1", "layer1.1.bn1", "layer1.1.bn2"};

  static float[] inputs() {
    return Fixtures.inputs(SAMPLES, FEATURES, CLASSES);
  }

  static int[] labels() {
    return Fixtures.labels(SAMPLES, CLASSES);
  }

  static TrainerOptions options(long seed, BatchNormMode mode) {
    TrainerOptions o = Fixtures.seeded(seed);
    o.setBatchNorm(mode);
    return o;
  }

  static TrainerOptions options(long seed, Precision precision) {
    TrainerOptions o = Fixtures.seeded(seed);
    o.setPrecision(precision);
    return o;
  }

  /** The parameters after 3 steps on the 2 devices of {@code two}. */
  static float[] trainedParameters(Context two, Model m, TrainerOptions options) {
    try (Trainer t = new Trainer(two, m, options, null)) {
      assertEquals(2, t.deviceCount());
      for (int i = 0; i < 3; ++i) t.step(inputs(), labels());
      return t.getParameters();
    }
  }

  /** |a - b| / |b| in the Euclidean norm. */
  static double relativeDifference(float[] a, float[] b) {
    assertEquals(b.length, a.length);
    double d = 0, n = 0;
    for (int i = 0; i < a.length; ++i) {
      d += ((double) a[i] - b[i]) * ((double) a[i] - b[i]);
      n += (double) b[i] * b[i];
    }
    return Math.sqrt(d / n);
  }

  /** Offsets back to back from 0, sizes the products of the shapes, ending at total. */
  static void assertCovers(List<NamedTensor> tensors, long total) {
    long offset = 0;
    for (NamedTensor t : tensors) {
      assertEquals(offset, t.offset(), t.toString());
      offset += t.size();
    }
    assertEquals(total, offset);
  }

  static void assertBitwiseEqual(float[] expected, float[] actual) {
    assertEquals(expected.length, actual.length);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), "element " + i);
    }
  }

  static <T extends Throwable> T assertStatus(Class<T> type, Status status, org.junit.jupiter.api.function.Executable call) {
    T e = assertThrows(type, call);
    assertEquals(status, ((DptrainException) e).getStatus(), e.getMessage());
    return e;
  }

  @Test
  void theResidualBlockHasItsTensorsShapesAndOutput() {
    try (Model m = residual()) {
      assertEquals(19, m.tensorCount(), "the input + 18 nodes");
      assertEquals(18, m.outputTensor(), "the last node, fc");
      assertEquals(CLASSES, m.outputSize());
      assertEquals(FEATURES, m.inputSize());
      assertArrayEquals(new int[] {2, 8, 8}, m.tensorShape(Model.INPUT));
      assertArrayEquals(new int[] {4, 8, 8}, m.tensorShape(1));
      assertArrayEquals(new int[] {4}, m.tensorShape(17), "global average pooling");
      assertEquals(PARAMETER_COUNT, m.parameterCount());
      assertEquals(5 * 2 * 4, m.bufferCount());
      m.setOutput(17);
      assertEquals(17, m.outputTensor());
      assertEquals(4, m.outputSize());
      m.setOutput(18);
    }
  }

  @Test
  void namedParametersAndBuffersCoverTheFlatVectors() {
    try (Model m = residual()) {
      List<NamedTensor> parameters = m.parameters();
      assertEquals(PARAMETERS.length, parameters.size());
      assertEquals(PARAMETERS.length, m.namedTensorCount(TensorKind.TENSOR_PARAMETER));
      for (int i = 0; i < PARAMETERS.length; ++i) {
        NamedTensor t = parameters.get(i);
        assertEquals(PARAMETERS[i][0], t.name());
        assertArrayEquals((int[]) PARAMETERS[i][1], t.shape(), t.name());
        assertEquals(TensorKind.TENSOR_PARAMETER, t.kind());
      }
      assertCovers(parameters, m.parameterCount());
      assertEquals("layer1.0.conv1.weight [4, 2, 3, 3] at 0", parameters.get(0).toString());

      List<NamedTensor> buffers = m.buffers();
      List<String> expected = new ArrayList<>();
      for (String bn : BATCH_NORMS) {
        expected.add(bn + ".running_mean");
        expected.add(bn + ".running_var");
      }
      List<String> names = new ArrayList<>();
      for (NamedTensor t : buffers) {
        names.add(t.name());
        assertArrayEquals(new int[] {4}, t.shape(), t.name());
        assertEquals(TensorKind.TENSOR_BUFFER, t.kind());
      }
      assertEquals(expected, names);
      assertCovers(buffers, m.bufferCount());
      assertEquals(buffers, m.namedTensors(TensorKind.TENSOR_BUFFER), "values: equal lists");
      assertThrows(UnsupportedOperationException.class, () -> buffers.clear());
    }
  }

  @Test
  void unnamedNodesAreNamedByTheirIndexAndConcatJoinsChannels() {
    try (Model m = new Model(3, 6, 6)) {
      long a = m.conv2d(Model.INPUT, 2, 3, 1, 1);
      long b = m.conv2d(Model.INPUT, 5, 1, 1, 0);
      assertArrayEquals(new int[] {7, 6, 6}, m.tensorShape(m.concat(a, b)));
      long c = m.concat(a, b, Model.INPUT, "joined");
      assertArrayEquals(new int[] {10, 6, 6}, m.tensorShape(c));
      long p = m.pool(c, PoolKind.POOL_MAX, 2, 2);
      assertArrayEquals(new int[] {10, 3, 3}, m.tensorShape(p));
      long norm = m.layerNorm(p);
      long y = m.dense(m.flatten(m.dropout(norm, 0.25f)), 4);
      assertEquals(y, m.outputTensor());
      // A node without a name is named by its node index, which is its tensor's id - 1 (tensor 0 is the input).
      assertEquals(Arrays.asList(a - 1 + ".weight", a - 1 + ".bias", b - 1 + ".weight", b - 1 + ".bias",
                                 norm - 1 + ".weight", norm - 1 + ".bias", y - 1 + ".weight", y - 1 + ".bias"),
                   m.parameters().stream().map(NamedTensor::name).collect(java.util.stream.Collectors.toList()));
      assertEquals(0, m.bufferCount());
      assertTrue(m.buffers().isEmpty());
    }
  }

  @Test
  void jsonRoundTripGivesTheSameModelAndTheSameTraining() {
    float[] x = inputs();
    int[] y = labels();
    try (Model m = residual(); Model copy = Model.fromJson(m.toJson()); Context c = new Context(2, 0);
         Trainer a = new Trainer(c, m, Fixtures.seeded(5), Fixtures.sgd(0.1f));
         Trainer b = new Trainer(c, copy, Fixtures.seeded(5), Fixtures.sgd(0.1f))) {
      assertTrue(m.toJson().contains("\"dptrain.model\""), m.toJson());
      assertEquals(m.describe(), copy.describe());
      assertEquals(m.toJson(), copy.toJson());
      assertEquals(m.parameters(), copy.parameters());
      assertEquals(m.buffers(), copy.buffers());
      assertEquals(2, a.deviceCount());
      assertEquals(a.parameterChecksum(), b.parameterChecksum(), "the same initial parameters");
      for (int i = 0; i < 2; ++i) assertEquals(a.step(x, y).getLoss(), b.step(x, y).getLoss());
      assertEquals(a.parameterChecksum(), b.parameterChecksum());
      assertBitwiseEqual(a.getBuffers(), b.getBuffers());
    }
  }

  @Test
  void buffersChangeAfterAStepAndRoundTrip() {
    try (Model m = residual(); Context c = new Context(2, 0); Trainer t = new Trainer(c, m, Fixtures.seeded(1), null)) {
      assertEquals(40, t.bufferCount());
      float[] before = t.getBuffers();
      assertEquals(40, before.length);
      for (int i = 0; i < before.length; i += 8) {
        assertEquals(0.0f, before[i], "running_mean starts at 0");
        assertEquals(1.0f, before[i + 4], "running_var starts at 1");
      }
      t.step(inputs(), labels());
      float[] after = t.getBuffers();
      assertFalse(Arrays.equals(before, after), "the step updates the running statistics");
      for (float v : after) assertTrue(Float.isFinite(v));

      float[] set = new float[after.length];
      for (int i = 0; i < set.length; ++i) set[i] = 0.5f + i / 64.0f;
      t.setBuffers(set);
      assertBitwiseEqual(set, t.getBuffers());
      FloatBuffer direct = ByteBuffer.allocateDirect(4 * set.length).order(ByteOrder.nativeOrder()).asFloatBuffer();
      t.getBuffers(direct);
      float[] back = new float[set.length];
      direct.get(back);
      assertBitwiseEqual(set, back);
      t.setBuffers(Fixtures.directFloats(after));
      assertBitwiseEqual(after, t.getBuffers());
      assertStatus(InvalidArgumentException.class, Status.ERROR_SIZE_MISMATCH, () -> t.setBuffers(new float[3]));
      assertStatus(InvalidArgumentException.class, Status.ERROR_SIZE_MISMATCH, () -> t.getBuffers(new float[41]));
    }
  }

  @Test
  void batchNormModeReachesTheTrainer() {
    assertEquals(BatchNormMode.BATCH_NORM_SYNC, new TrainerOptions().getBatchNorm(), "the default");
    float[] x = inputs();
    int[] y = labels();
    try (Model m = residual(); Context one = new Context(1, 0); Context two = new Context(2, 0);
         Trainer single = new Trainer(one, m, Fixtures.seeded(3), null);
         Trainer sync = new Trainer(two, m, options(3, BatchNormMode.BATCH_NORM_SYNC), null);
         Trainer local = new Trainer(two, m, options(3, BatchNormMode.BATCH_NORM_LOCAL), null)) {
      double lossSingle = single.step(x, y).getLoss();
      double lossSync = sync.step(x, y).getLoss();
      double lossLocal = local.step(x, y).getLoss();
      assertEquals(lossSingle, lossSync, 1e-5, "synchronized statistics are the whole batch's");
      assertNotEquals(lossSync, lossLocal, "local statistics are each device's half");
      assertTrue(Double.isFinite(lossLocal));
    }
  }

  /**
   * The default is float32; bf16 matrix products (the model's conv2d and dense) train on 2 devices to other
   * parameters than float32's (not float32 under another name), within 2e-2 of them (relative, over the whole
   * vector), and to the same bits on every run with the same seed. (A Java enum holds no value outside its
   * constants, so the library's refusal of an unknown precision cannot be reached from Java.)
   */
  @Test
  void precisionReachesTheTrainer() {
    assertEquals(Precision.PRECISION_FP32, new TrainerOptions().getPrecision(), "the default");
    try (Model m = residual(); Context two = new Context(2, 0)) {
      float[] byDefault = trainedParameters(two, m, Fixtures.seeded(5));
      float[] fp32 = trainedParameters(two, m, options(5, Precision.PRECISION_FP32));
      float[] bf16 = trainedParameters(two, m, options(5, Precision.PRECISION_BF16));
      float[] again = trainedParameters(two, m, options(5, Precision.PRECISION_BF16));
      assertBitwiseEqual(fp32, byDefault);
      assertFalse(Arrays.equals(fp32, bf16), "PRECISION_BF16 trains to float32's bits");
      double difference = relativeDifference(bf16, fp32);
      assertTrue(difference <= 2e-2, "bf16 differs from float32 by " + difference + " relative");
      assertBitwiseEqual(bf16, again);
    }
  }

  static final int BN_CHANNELS = 2;
  static final int BN_PIXELS = 3 * 3;
  static final int BN_SAMPLES = 10;

  /** 2x3x3 -> batch norm "bn" on the input itself (its statistics are the data's) -> flatten -> dense 3. */
  static Model batchNormFirst() {
    Model m = new Model(BN_CHANNELS, 3, 3);
    m.dense(m.flatten(m.batchNorm(Model.INPUT, "bn")), CLASSES, "fc");
    return m;
  }

  /**
   * 10 samples, channel 0 in [1, 3.5] and channel 1 in [-4, 0] (every mean and variance well away from 0, so
   * that a relative tolerance means something).
   */
  static float[] batchNormInputs() {
    float[] x = new float[BN_SAMPLES * BN_CHANNELS * BN_PIXELS];
    for (int s = 0; s < BN_SAMPLES; ++s) {
      for (int p = 0; p < BN_PIXELS; ++p) {
        x[(s * BN_CHANNELS + 0) * BN_PIXELS + p] = 1 + ((s * 7 + p * 3) % 11) / 4.0f;
        x[(s * BN_CHANNELS + 1) * BN_PIXELS + p] = -4 + ((s * 5 + p * 2 + 1) % 13) / 3.0f;
      }
    }
    return x;
  }

  /**
   * What recomputing leaves, in double: per channel, the average over the batches (the first {@code sampleCount}
   * samples, 0 = all, in batches of {@code batchSize}, 0 = 256) of each batch's mean, then of its unbiased
   * variance over samples and pixels, in the order of the buffers (running_mean [C], then running_var [C]).
   */
  static double[] expectedBatchNormStatistics(float[] x, int batchSize, int sampleCount) {
    int samples = sampleCount == 0 || sampleCount > BN_SAMPLES ? BN_SAMPLES : sampleCount;
    int batch = batchSize == 0 ? 256 : batchSize;
    double[] expected = new double[2 * BN_CHANNELS];
    int batches = 0;
    for (int start = 0; start < samples; start += batch, ++batches) {
      int end = Math.min(start + batch, samples);
      double n = (end - start) * BN_PIXELS;
      for (int c = 0; c < BN_CHANNELS; ++c) {
        double sum = 0;
        double squares = 0;
        for (int s = start; s < end; ++s) {
          for (int p = 0; p < BN_PIXELS; ++p) sum += x[(s * BN_CHANNELS + c) * BN_PIXELS + p];
        }
        double mean = sum / n;
        for (int s = start; s < end; ++s) {
          for (int p = 0; p < BN_PIXELS; ++p) {
            double d = x[(s * BN_CHANNELS + c) * BN_PIXELS + p] - mean;
            squares += d * d;
          }
        }
        expected[c] += mean;
        expected[BN_CHANNELS + c] += squares / (n - 1);
      }
    }
    for (int i = 0; i < expected.length; ++i) expected[i] /= batches;
    return expected;
  }

  static void assertBatchNormStatistics(Trainer t, float[] x, int batchSize, int sampleCount) {
    double[] expected = expectedBatchNormStatistics(x, batchSize, sampleCount);
    float[] actual = t.getBuffers();
    assertEquals(expected.length, actual.length);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(expected[i], actual[i], 1e-5 * Math.abs(expected[i]),
          "batches of " + batchSize + ", " + sampleCount + " samples: buffer " + i);
    }
  }

  /**
   * recomputeBatchNorm (PyTorch's update_bn) sets the running statistics of a batch norm on the input to the
   * average of the batches' means and unbiased variances, on 2 CPU devices; the parameters and the step count
   * do not move; bad input is refused and leaves the trainer usable.
   */
  @Test
  void recomputeBatchNormAveragesTheBatchesStatistics() {
    float[] x = batchNormInputs();
    int[] y = Fixtures.labels(BN_SAMPLES, CLASSES);
    float[] first4 = Arrays.copyOf(x, 4 * BN_CHANNELS * BN_PIXELS);
    try (Model m = batchNormFirst(); Context two = new Context(2, 0);
         Dataset data = new Dataset(x, y, BN_CHANNELS, 3, 3, CLASSES);
         Trainer t = new Trainer(two, m, Fixtures.seeded(3), null)) {
      assertEquals(Arrays.asList("bn.running_mean", "bn.running_var"),
          m.buffers().stream().map(NamedTensor::name).collect(java.util.stream.Collectors.toList()));
      assertEquals(BN_CHANNELS, m.buffers().get(1).offset());
      t.step(first4, Arrays.copyOf(y, 4)); // parameters and statistics that are not the initial ones
      float[] parameters = t.getParameters();
      long steps = t.stepCount();

      // Batches of 4, 4 and 2; 4 and 2 of the first 6 (the sizes are not swapped); one of 256 = all; 3, 3, 3
      // and 1 of "more than the dataset holds" (one device's slice of the last batch is empty).
      for (int[] c : new int[][] {{4, 0}, {4, 6}, {0, 0}, {3, 100}}) {
        t.setBuffers(new float[] {7, 7, 7, 7}); // no recomputation leaves these
        t.recomputeBatchNorm(data, c[0], c[1]);
        assertBatchNormStatistics(t, x, c[0], c[1]);
      }
      assertBitwiseEqual(parameters, t.getParameters());
      assertEquals(steps, t.stepCount());

      // Bad input is refused before anything changes. (An empty dataset cannot be made: the constructor and
      // subset refuse 0 samples.)
      t.recomputeBatchNorm(data, 4, 0);
      float[] before = t.getBuffers();
      InvalidArgumentException e = assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER,
          () -> t.recomputeBatchNorm(null, 4, 0));
      assertTrue(e.getMessage().contains("dpt_trainer_recompute_batch_norm: dataset is NULL"), e.getMessage());
      e = assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, () -> t.recomputeBatchNorm(data, -4, 0));
      assertTrue(e.getMessage().contains("Trainer.recomputeBatchNorm: batch_size must not be negative"), e.getMessage());
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, () -> t.recomputeBatchNorm(data, 4, -1));
      try (Dataset other = Fixtures.tinyDataset(8)) { // 1x4x4 samples
        assertStatus(InvalidArgumentException.class, Status.ERROR_SIZE_MISMATCH, () -> t.recomputeBatchNorm(other, 4, 0));
      }
      try (Dataset tokens = Dataset.createTokens(new int[2 * BN_CHANNELS * BN_PIXELS], new int[] {0, 1}, 2,
               BN_CHANNELS * BN_PIXELS, CLASSES)) {
        assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT,
            () -> t.recomputeBatchNorm(tokens, 4, 0));
      }
      Dataset closed = new Dataset(x, y, BN_CHANNELS, 3, 3, CLASSES);
      closed.close();
      e = assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, () -> t.recomputeBatchNorm(closed, 4, 0));
      assertTrue(e.getMessage().contains("closed"), e.getMessage());
      assertBitwiseEqual(before, t.getBuffers());
      // ... and the trainer stays usable.
      t.setBuffers(new float[] {7, 7, 7, 7});
      t.recomputeBatchNorm(data, 4, 0);
      assertBatchNormStatistics(t, x, 4, 0);
      assertTrue(Double.isFinite(t.step(first4, Arrays.copyOf(y, 4)).getLoss()));

      // A model without batch norm: nothing to do, no error.
      try (Model tiny = Fixtures.tiny(); Dataset tinyData = Fixtures.tinyDataset(8); Trainer plain = new Trainer(two, tiny)) {
        plain.recomputeBatchNorm(tinyData, 4, 0);
      }
      // A pipeline averages its micro-batches' statistics (each batch cut as a training step cuts it): 2
      // stages with 2 micro-batches, over the first 8 samples in batches of 4, see micro-batches of 2, 2, 2
      // and 2, as one device does in batches of 2.
      TrainerOptions pipeline = Fixtures.seeded(3);
      pipeline.setPipelineStages(2);
      pipeline.setMicroBatches(2);
      try (Context one = new Context(1, 0); Trainer p = new Trainer(two, m, pipeline, null);
           Trainer plain = new Trainer(one, m, Fixtures.seeded(3), null)) {
        p.setBuffers(new float[] {7, 7, 7, 7}); // no recomputation leaves these
        p.recomputeBatchNorm(data, 4, 8);
        plain.recomputeBatchNorm(data, 2, 8);
        float[] expected = plain.getBuffers();
        float[] actual = p.getBuffers();
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; ++i) {
          assertEquals(expected[i], actual[i], 1e-6 * Math.abs(expected[i]),
              "pipeline, batches of 4 in 2 micro-batches vs one device's batches of 2: buffer " + i);
        }
      }
    }
  }

  @Test
  void safetensorsRoundTripIsBitwise() throws Exception {
    Path file = dir.resolve("weights.safetensors");
    try (Model m = residual(); Context c = new Context(2, 0);
         Trainer a = new Trainer(c, m, Fixtures.seeded(1), null);
         Trainer b = new Trainer(c, m, Fixtures.seeded(2), null)) {
      for (int i = 0; i < 2; ++i) a.step(inputs(), labels());
      a.saveSafetensors(file);
      byte[] bytes = Files.readAllBytes(file);
      String header = new String(bytes, 8, (int) Math.min(bytes.length - 8,
          ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong()), java.nio.charset.StandardCharsets.UTF_8);
      assertTrue(header.contains("\"layer1.0.downsample.1.running_var\""), header);
      assertTrue(header.contains("\"layer1.1.bn2.num_batches_tracked\""), header);

      assertNotEquals(a.parameterChecksum(), b.parameterChecksum());
      b.loadSafetensors(file);
      assertBitwiseEqual(a.getParameters(), b.getParameters());
      assertBitwiseEqual(a.getReplicaParameters(1), b.getReplicaParameters(1));
      assertBitwiseEqual(a.getBuffers(), b.getBuffers());
      assertEquals(a.parameterChecksum(), b.parameterChecksum());

      try (Model other = Fixtures.tiny(); Trainer t = new Trainer(c, other)) {
        InvalidArgumentException e = assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT,
            () -> t.loadSafetensors(file));
        assertTrue(e.getLibraryMessage().contains("dpt_trainer_load_safetensors"), e.getLibraryMessage());
      }
      assertStatus(IOFormatException.class, Status.ERROR_IO, () -> b.loadSafetensors(dir.resolve("none")));
      assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, () -> b.saveSafetensors((Path) null));
    }
  }

  @Test
  void builtinResnet18HasTorchvisionsNames() {
    try (Model m = Model.builtin("resnet18")) {
      assertEquals(11172810L, m.parameterCount());
      List<NamedTensor> parameters = m.parameters();
      assertCovers(parameters, 11172810L);
      assertEquals("conv1.weight", parameters.get(0).name());
      assertArrayEquals(new int[] {64, 1, 3, 3}, parameters.get(0).shape());
      NamedTensor last = parameters.get(parameters.size() - 1);
      assertEquals("fc.bias", last.name());
      assertArrayEquals(new int[] {10}, last.shape());
      List<NamedTensor> buffers = m.buffers();
      assertCovers(buffers, m.bufferCount());
      NamedTensor mean = buffers.stream().filter(t -> t.name().equals("layer2.0.downsample.1.running_mean"))
          .findFirst().orElseThrow(() -> new AssertionError("no layer2.0.downsample.1.running_mean"));
      assertArrayEquals(new int[] {128}, mean.shape());
      assertEquals(TensorKind.TENSOR_BUFFER, mean.kind());
    }
  }

  @Test
  void badTensorIdsAndNamesAreInvalidArguments() {
    try (Model m = residual()) {
      long tensors = m.tensorCount();
      String json = m.toJson();
      InvalidArgumentException e = assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT,
          () -> m.conv2d(99, 4, 3, 1, 1));
      assertEquals(1000, e.getCategory());
      assertTrue(e.getLibraryMessage().contains("dpt_model_conv2d"), e.getLibraryMessage());
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, () -> m.add(1, 99));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, () -> m.tensorShape(tensors));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, () -> m.setOutput(tensors));
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, () -> m.add(1, 17)); // shapes differ
      assertStatus(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, () -> m.dense(17, 3, "fc")); // a taken name
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, () -> m.relu(-1));
      assertStatus(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, () -> m.dropout(1, 1.0f));
      assertEquals(tensors, m.tensorCount(), "a failed call leaves the model unchanged");
      assertEquals(json, m.toJson());
    }
    assertStatus(IOFormatException.class, Status.ERROR_FORMAT, () -> Model.fromJson("{\"format\": 1"));
    Model closed = residual();
    closed.close();
    assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, () -> closed.parameters());
    assertStatus(InvalidArgumentException.class, Status.ERROR_NULL_POINTER, () -> closed.relu(0));
  }
}
