package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/**
 * TrainerOptions.setShard (trainer.h shard, ZeRO stage 1) and Trainer.replicaMemory (dpt_trainer_replica_memory).
 */
class ShardingTest {
  static final int DEVICES = 3;
  static final int SIDE = 8;
  static final int FEATURES = SIDE * SIDE;
  static final int CLASSES = 3;
  static final int SAMPLES = 24; // 8 per device
  /** 64 -> 128 -> 3: three norm blocks of 4096 parameters, so each of the 3 devices owns one range. */
  static final long PARAMETERS = FEATURES * 128 + 128 + 128 * CLASSES + CLASSES;

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

  /** AdamW with decoupled weight decay and gradient clipping (each device clips with the blocked norm). */
  static OptimizerOptions adamw() {
    OptimizerOptions o = new OptimizerOptions();
    o.setKind(OptimizerKind.OPTIMIZER_ADAMW);
    o.setLearningRate(0.01f);
    o.setWeightDecay(0.01f);
    o.setClipNorm(0.5f);
    return o;
  }

  /** What one run leaves: its start, every replica's parameters, the checksum and every replica's memory. */
  static final class Run {
    float[] start;
    float[][] replicas = new float[DEVICES][];
    String checksum;
    ReplicaMemory[] memory = new ReplicaMemory[DEVICES];
  }

  /** The MLP on 3 CPU devices, seed 7, AdamW, 3 steps on one batch, with the given shard mode. */
  static Run train(Context three, Model m, ShardMode shard) {
    TrainerOptions o = Fixtures.seeded(7);
    o.setShard(shard);
    assertEquals(shard, o.getShard());
    float[] x = Fixtures.inputs(SAMPLES, FEATURES, CLASSES);
    int[] y = Fixtures.labels(SAMPLES, CLASSES);
    try (Trainer t = new Trainer(three, m, o, adamw())) {
      assertEquals(DEVICES, t.deviceCount());
      assertEquals(PARAMETERS, t.parameterCount());
      Run run = new Run();
      run.start = t.getParameters();
      for (int i = 0; i < 3; ++i) assertTrue(t.step(x, y).getApplied(), shard + ", step " + (i + 1));
      for (int d = 0; d < DEVICES; ++d) {
        run.replicas[d] = t.getReplicaParameters(d);
        run.memory[d] = t.replicaMemory(d);
      }
      run.checksum = t.parameterChecksum();
      return run;
    }
  }

  /** Parameters and gradients are float32 (4 bytes a parameter), no buffers, and the total is the sum. */
  static void assertParts(ReplicaMemory m, String what) {
    assertEquals(4 * PARAMETERS, m.parameters(), what + ": parameters");
    assertEquals(4 * PARAMETERS, m.gradients(), what + ": gradients");
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
      Run none = train(three, m, ShardMode.SHARD_NONE);
      Run sharded = train(three, m, ShardMode.SHARD_OPTIMIZER);
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
        assertParts(none.memory[d], "SHARD_NONE, device " + d);
        assertParts(sharded.memory[d], "SHARD_OPTIMIZER, device " + d);
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
   * A device past the last (or a negative one) is an InvalidArgumentException with ERROR_OUT_OF_RANGE. A shard
   * mode outside the enum cannot reach the library from Java (the enum refuses 2; C# and Go test the library's
   * INVALID_ARGUMENT), and null is refused before any native call.
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
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ShardMode.swigToEnum(2));
    assertTrue(e.getMessage().contains("2"), e.getMessage());
    assertEquals(ShardMode.SHARD_OPTIMIZER, ShardMode.swigToEnum(1));
    TrainerOptions o = new TrainerOptions();
    o.setShard(ShardMode.SHARD_OPTIMIZER);
    assertThrows(NullPointerException.class, () -> o.setShard(null));
    assertEquals(ShardMode.SHARD_OPTIMIZER, o.getShard(), "a refused null leaves the option as it was");
  }
}
