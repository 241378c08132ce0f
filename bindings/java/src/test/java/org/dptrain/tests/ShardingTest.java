package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/**
 * TrainerOptions.setShard (trainer.h shard, ZeRO stages 1, 2 and 3) and Trainer.replicaMemory
 * (dpt_trainer_replica_memory).
 */
class ShardingTest {
  static final int DEVICES = 3;
  static final int SIDE = 8;
  static final int FEATURES = SIDE * SIDE;
  static final int CLASSES = 3;
  static final int SAMPLES = 24; // 8 per device
  /** 64 -> 128 -> 3: three norm blocks of 4096 parameters, so each of the 3 devices owns one range. */
  static final long PARAMETERS = FEATURES * 128 + 128 + 128 * CLASSES + CLASSES;
  /** Hidden layers of 64 units in {@link #deepMlp}: alike, so that small buckets hold about one layer each. */
  static final int DEEP_LAYERS = 6;
  static final long DEEP_PARAMETERS =
      FEATURES * 64 + 64 + (DEEP_LAYERS - 1) * (64 * 64 + 64) + 64 * CLASSES + CLASSES;
  /**
   * SHARD_GRADIENTS' and SHARD_PARAMETERS' runs use buckets of 4096 bytes (whole layers, each at least this size).
   */
  static final long BUCKET_BYTES = 4096;

  static void assertBitwiseEqual(float[] expected, float[] actual, String what) {
    assertEquals(expected.length, actual.length, what);
    for (int i = 0; i < expected.length; ++i) {
      assertEquals(Float.floatToRawIntBits(expected[i]), Float.floatToRawIntBits(actual[i]), what + ", element " + i);
    }
  }

  /** 1x8x8 -> dense 128 -> relu -> dense 3: 8707 parameters. */
  static Model mlp() {
    Model m = new Model(1, SIDE, SIDE);
    m.addDense(128);
    m.addActivation(Activation.ACTIVATION_RELU);
    m.addDense(CLASSES);
    return m;
  }

  /**
   * 1x8x8 -> 6 x (dense 64 -> relu) -> dense 3: 25155 parameters, six buckets of 4096 bytes (the head's 195
   * parameters join the last hidden layer's bucket).
   */
  static Model deepMlp() {
    Model m = new Model(1, SIDE, SIDE);
    for (int i = 0; i < DEEP_LAYERS; ++i) {
      m.addDense(64);
      m.addActivation(Activation.ACTIVATION_RELU);
    }
    m.addDense(CLASSES);
    return m;
  }

  /** AdamW with decoupled weight decay and gradient clipping (each device clips with the blocked norm). */
  static OptimizerOptions adamw() {
    OptimizerOptions o = new OptimizerOptions();
    o.setKind(OptimizerKind.OPTIMIZER_ADAMW);
    o.setLearningRate(0.01f);
    o.setWeightDecay(0.01f);
    o.setClipNorm(0.5f);
    return o;
  }

  /**
   * What one run leaves: its start, every replica's parameters, the checksum, every replica's memory and an
   * evaluation of the batch after the steps.
   */
  static final class Run {
    float[] start;
    float[][] replicas = new float[DEVICES][];
    String checksum;
    ReplicaMemory[] memory = new ReplicaMemory[DEVICES];
    double loss;
    double accuracy;
  }

  /**
   * The model on 3 CPU devices, seed 7, AdamW, 3 steps on one batch, with the given shard mode and bucket size
   * (0: the default), then an evaluation of the batch.
   */
  static Run train(Context three, Model m, ShardMode shard, long bucketBytes) {
    TrainerOptions o = Fixtures.seeded(7);
    o.setShard(shard);
    assertEquals(shard, o.getShard());
    if (bucketBytes != 0) o.setBucketBytes(bucketBytes);
    float[] x = Fixtures.inputs(SAMPLES, FEATURES, CLASSES);
    int[] y = Fixtures.labels(SAMPLES, CLASSES);
    try (Trainer t = new Trainer(three, m, o, adamw())) {
      assertEquals(DEVICES, t.deviceCount());
      assertEquals(m.parameterCount(), t.parameterCount());
      Run run = new Run();
      run.start = t.getParameters();
      for (int i = 0; i < 3; ++i) assertTrue(t.step(x, y).getApplied(), shard + ", step " + (i + 1));
      for (int d = 0; d < DEVICES; ++d) {
        run.replicas[d] = t.getReplicaParameters(d);
        run.memory[d] = t.replicaMemory(d);
      }
      run.checksum = t.parameterChecksum();
      EvalResult e = t.evaluate(x, y);
      assertEquals(SAMPLES, e.getSamples(), shard + ": evaluated samples");
      run.loss = e.getLoss();
      run.accuracy = e.getAccuracy();
      return run;
    }
  }

  /**
   * Parameters (and, unless the gradient is sharded, gradients) are float32 (4 bytes a parameter), no buffers,
   * and the total is the sum.
   */
  static void assertParts(ReplicaMemory m, long parameters, boolean wholeGradient, String what) {
    assertEquals(4 * parameters, m.parameters(), what + ": parameters");
    if (wholeGradient) assertEquals(4 * parameters, m.gradients(), what + ": gradients");
    assertEquals(0, m.buffers(), what + ": buffers (no batch norm)");
    assertTrue(m.activations() > 0, what + ": activations " + m.activations());
    assertEquals(m.parameters() + m.gradients() + m.optimizerState() + m.buffers() + m.activations(), m.total(),
        what + ": total");
  }

  /**
   * The default is SHARD_NONE. SHARD_OPTIMIZER trains to the very bits of SHARD_NONE (every replica, and the
   * checksum), while each device keeps a part of AdamW's state (8 bytes per parameter): the parts add up to the
   * state of one unsharded replica, each smaller than it.
   */
  @Test
  void shardingTheOptimizerKeepsTheBitsAndSplitsTheState() {
    assertEquals(ShardMode.SHARD_NONE, new TrainerOptions().getShard(), "the default");
    try (Context three = new Context(DEVICES, 0); Model m = mlp()) {
      Run none = train(three, m, ShardMode.SHARD_NONE, 0);
      Run sharded = train(three, m, ShardMode.SHARD_OPTIMIZER, 0);
      assertBitwiseEqual(none.start, sharded.start, "the same seed starts alike");
      assertFalse(Arrays.equals(none.start, none.replicas[0]), "3 steps left the parameters unchanged");
      for (int d = 0; d < DEVICES; ++d) {
        assertBitwiseEqual(none.replicas[0], none.replicas[d], "SHARD_NONE: replica " + d + " against replica 0");
        assertBitwiseEqual(none.replicas[d], sharded.replicas[d],
            "SHARD_OPTIMIZER against SHARD_NONE, replica " + d);
      }
      assertEquals(none.checksum, sharded.checksum, "the checksums");

      long whole = none.memory[0].optimizerState();
      assertEquals(8 * PARAMETERS, whole, "AdamW's state of an unsharded replica");
      long sum = 0;
      for (int d = 0; d < DEVICES; ++d) {
        assertParts(none.memory[d], PARAMETERS, true, "SHARD_NONE, device " + d);
        assertParts(sharded.memory[d], PARAMETERS, true, "SHARD_OPTIMIZER, device " + d);
        assertEquals(whole, none.memory[d].optimizerState(), "SHARD_NONE, device " + d + ": the whole state");
        long part = sharded.memory[d].optimizerState();
        assertTrue(part > 0 && part < whole,
            "SHARD_OPTIMIZER, device " + d + ": " + part + " of " + whole + " bytes");
        sum += part;
      }
      assertEquals(whole, sum, "the devices' parts add up to the unsharded state");
    }
  }

  /**
   * SHARD_GRADIENTS with buckets of 4096 bytes and one micro-batch per step trains to the very bits of SHARD_NONE
   * (every replica, and the checksum) on the MLP and on a deeper one. Each device keeps the optimizer state of
   * the same range as with SHARD_OPTIMIZER (the parts add up to the unsharded state) and the summed gradient of
   * that range (AdamW: half its state's bytes) plus two staging buckets, the same on every device: over the
   * devices the ranges add up to one unsharded gradient. The MLP's 8320-parameter layer fills its buckets, so
   * there sharding the gradient saves nothing; on the deeper MLP (six alike layers, six buckets) each device
   * reports less than an unsharded replica's gradient, and the three together less than three unsharded
   * replicas'.
   */
  @Test
  void shardingTheGradientsKeepsTheBitsAndSplitsTheGradient() {
    try (Context three = new Context(DEVICES, 0); Model mlp = mlp(); Model deep = deepMlp()) {
      for (Model m : new Model[] {mlp, deep}) {
        boolean saves = m == deep; // sharding the gradient saves memory
        long parameters = saves ? DEEP_PARAMETERS : PARAMETERS;
        assertEquals(parameters, m.parameterCount());
        String name = saves ? "deep MLP" : "MLP";
        Run none = train(three, m, ShardMode.SHARD_NONE, 0);
        Run optimizer = train(three, m, ShardMode.SHARD_OPTIMIZER, 0);
        Run gradients = train(three, m, ShardMode.SHARD_GRADIENTS, BUCKET_BYTES);
        assertFalse(Arrays.equals(none.start, none.replicas[0]), name + ": 3 steps left the parameters unchanged");
        for (int d = 0; d < DEVICES; ++d) {
          assertBitwiseEqual(none.replicas[d], gradients.replicas[d],
              name + ": SHARD_GRADIENTS against SHARD_NONE, replica " + d);
        }
        assertEquals(none.checksum, gradients.checksum, name + ": the checksums");

        long whole = none.memory[0].gradients();
        assertEquals(4 * parameters, whole, name + ": the gradient of an unsharded replica");
        long staging = gradients.memory[0].gradients() - gradients.memory[0].optimizerState() / 2;
        assertTrue(staging > 0, name + ": staging buckets " + staging);
        long state = 0, ranges = 0, sum = 0;
        for (int d = 0; d < DEVICES; ++d) {
          String what = name + ", SHARD_GRADIENTS, device " + d;
          ReplicaMemory mem = gradients.memory[d];
          assertParts(mem, parameters, false, what);
          assertEquals(optimizer.memory[d].optimizerState(), mem.optimizerState(),
              what + ": the optimizer state of SHARD_OPTIMIZER's range");
          // The range's gradient takes 4 bytes per parameter, its AdamW state 8.
          assertEquals(mem.optimizerState() / 2 + staging, mem.gradients(),
              what + ": the range's gradient plus device 0's staging buckets");
          if (saves) {
            assertTrue(mem.gradients() < whole,
                what + ": gradients " + mem.gradients() + " bytes, not less than the unsharded " + whole);
          }
          state += mem.optimizerState();
          ranges += mem.gradients() - staging;
          sum += mem.gradients();
        }
        assertEquals(none.memory[0].optimizerState(), state, name + ": the devices' optimizer states add up");
        assertEquals(whole, ranges, name + ": the devices' ranges of the gradient add up to the unsharded one");
        if (saves) {
          assertTrue(sum < DEVICES * whole,
              name + ": the devices' gradients take " + sum + " bytes, not less than " + DEVICES * whole);
        }
      }
    }
  }

  /**
   * SHARD_PARAMETERS with buckets of 4096 bytes and one micro-batch per step trains the deeper MLP (six alike
   * layers, six buckets) to the very bits of SHARD_NONE: every replica's parameters (each gathered from the
   * devices' ranges), the checksum, and the loss and accuracy of an evaluation after the steps (whose passes
   * gather the parameters as training does); the start gathers to SHARD_NONE's too. Each device keeps
   * SHARD_GRADIENTS' optimizer state and gradient, and of the parameters its range (AdamW: half its state's
   * bytes) plus a gather buffer, the same on every device: over the devices the ranges add up to one unsharded
   * replica's parameters, and each device's parameters take less than an unsharded replica's.
   */
  @Test
  void shardingTheParametersKeepsTheBitsAndSplitsTheParameters() {
    try (Context three = new Context(DEVICES, 0); Model deep = deepMlp()) {
      assertEquals(DEEP_PARAMETERS, deep.parameterCount());
      Run none = train(three, deep, ShardMode.SHARD_NONE, 0);
      Run gradients = train(three, deep, ShardMode.SHARD_GRADIENTS, BUCKET_BYTES);
      Run parameters = train(three, deep, ShardMode.SHARD_PARAMETERS, BUCKET_BYTES);
      assertBitwiseEqual(none.start, parameters.start, "the same seed starts alike");
      assertFalse(Arrays.equals(none.start, none.replicas[0]), "3 steps left the parameters unchanged");
      for (int d = 0; d < DEVICES; ++d) {
        assertBitwiseEqual(none.replicas[d], parameters.replicas[d],
            "SHARD_PARAMETERS against SHARD_NONE, replica " + d);
      }
      assertEquals(none.checksum, parameters.checksum, "the checksums");
      assertEquals(Double.doubleToRawLongBits(none.loss), Double.doubleToRawLongBits(parameters.loss),
          "the evaluation's loss: SHARD_NONE " + none.loss + ", SHARD_PARAMETERS " + parameters.loss);
      assertEquals(none.accuracy, parameters.accuracy, "the evaluation's accuracy");

      long whole = none.memory[0].parameters();
      assertEquals(4 * DEEP_PARAMETERS, whole, "the parameters of an unsharded replica");
      long gather = parameters.memory[0].parameters() - parameters.memory[0].optimizerState() / 2;
      assertTrue(gather > 0, "gather buffer " + gather);
      long ranges = 0, sum = 0;
      for (int d = 0; d < DEVICES; ++d) {
        String what = "SHARD_PARAMETERS, device " + d;
        ReplicaMemory mem = parameters.memory[d];
        assertEquals(gradients.memory[d].optimizerState(), mem.optimizerState(),
            what + ": the optimizer state of SHARD_GRADIENTS' range");
        assertEquals(gradients.memory[d].gradients(), mem.gradients(),
            what + ": SHARD_GRADIENTS' range of the gradient and staging buckets");
        // The range's parameters take 4 bytes per parameter, its AdamW state 8.
        assertEquals(mem.optimizerState() / 2 + gather, mem.parameters(),
            what + ": the range's parameters plus device 0's gather buffer");
        assertTrue(mem.parameters() < whole,
            what + ": parameters " + mem.parameters() + " bytes, not less than the unsharded " + whole);
        assertEquals(0, mem.buffers(), what + ": buffers (no batch norm)");
        assertTrue(mem.activations() > 0, what + ": activations " + mem.activations());
        assertEquals(mem.parameters() + mem.gradients() + mem.optimizerState() + mem.buffers() + mem.activations(),
            mem.total(), what + ": total");
        ranges += mem.parameters() - gather;
        sum += mem.parameters();
      }
      assertEquals(whole, ranges, "the devices' ranges of the parameters add up to the unsharded ones");
      assertTrue(sum < DEVICES * whole,
          "the devices' parameters take " + sum + " bytes, not less than " + DEVICES * whole);
    }
  }

  /**
   * The deep MLP with its third hidden layer's weight tied to its second's ({@link Model#tie}: one parameter,
   * two writers of its gradient, in different buckets): SHARD_GRADIENTS and SHARD_PARAMETERS train to the very
   * bits of SHARD_NONE (every replica, the checksum and the evaluation).
   */
  @Test
  void shardingTheGradientsOrTheParametersKeepsTiedParametersExact() {
    try (Context three = new Context(DEVICES, 0); Model deep = deepMlp()) {
      deep.tie("4.weight", "2.weight");
      Run none = train(three, deep, ShardMode.SHARD_NONE, BUCKET_BYTES);
      for (ShardMode mode : new ShardMode[] {ShardMode.SHARD_GRADIENTS, ShardMode.SHARD_PARAMETERS}) {
        Run sharded = train(three, deep, mode, BUCKET_BYTES);
        for (int d = 0; d < DEVICES; ++d)
          assertBitwiseEqual(none.replicas[0], sharded.replicas[d], mode + ", tied: replica " + d);
        assertEquals(none.checksum, sharded.checksum, mode + ", tied: checksum");
        assertEquals(none.loss, sharded.loss, mode + ", tied: evaluation loss");
      }
    }
  }

  /**
   * A device past the last (or a negative one) is an InvalidArgumentException with ERROR_OUT_OF_RANGE. A shard
   * mode outside the enum cannot reach the library from Java (the enum refuses 4; C# and Go test the library's
   * INVALID_ARGUMENT), and null is refused before any native call. The three sharded modes are taken. The
   * shard scope is PROCESS by default, WORLD reaches the library (in one process it shards within it), and the
   * enum refuses 2.
   */
  @Test
  void anOutOfRangeDeviceAndAnUnknownModeAreRefused() {
    try (Context three = new Context(DEVICES, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(three, m)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> t.replicaMemory(DEVICES));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertTrue(e.getLibraryMessage().contains("dpt_trainer_replica_memory"), e.getLibraryMessage());
      e = assertThrows(InvalidArgumentException.class, () -> t.replicaMemory(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertEquals("Trainer.replicaMemory: device must not be negative (got -1)", e.getLibraryMessage());
      assertEquals(4 * Fixtures.TINY_PARAMETERS, t.replicaMemory(DEVICES - 1).parameters(),
          "the trainer is unharmed");
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ShardMode.swigToEnum(4));
    assertTrue(e.getMessage().contains("4"), e.getMessage());
    assertEquals(ShardMode.SHARD_OPTIMIZER, ShardMode.swigToEnum(1));
    assertEquals(ShardMode.SHARD_GRADIENTS, ShardMode.swigToEnum(2));
    assertEquals(2, ShardMode.SHARD_GRADIENTS.swigValue());
    assertEquals(ShardMode.SHARD_PARAMETERS, ShardMode.swigToEnum(3));
    assertEquals(3, ShardMode.SHARD_PARAMETERS.swigValue());
    TrainerOptions o = new TrainerOptions();
    o.setShard(ShardMode.SHARD_OPTIMIZER);
    assertThrows(NullPointerException.class, () -> o.setShard(null));
    assertEquals(ShardMode.SHARD_OPTIMIZER, o.getShard(), "a refused null leaves the option as it was");
    assertEquals(ShardScope.SHARD_SCOPE_PROCESS, o.getShardScope(), "the default scope");
    assertThrows(IllegalArgumentException.class, () -> ShardScope.swigToEnum(2));
    assertEquals(1, ShardScope.SHARD_SCOPE_WORLD.swigValue());
    o.setShardScope(ShardScope.SHARD_SCOPE_WORLD);
    assertThrows(NullPointerException.class, () -> o.setShardScope(null));
    assertEquals(ShardScope.SHARD_SCOPE_WORLD, o.getShardScope(), "a refused null leaves the scope as it was");
    try (Context three = new Context(DEVICES, 0); Model m = Fixtures.tiny();
         Trainer t = new Trainer(three, m, o, adamw())) {
      long parts = 0;
      for (int d = 0; d < DEVICES; ++d) parts += t.replicaMemory(d).optimizerState();
      assertEquals(8 * Fixtures.TINY_PARAMETERS, parts,
          "SHARD_SCOPE_WORLD in one process: the devices' parts of AdamW's state add up to the whole");
    }
  }
}
