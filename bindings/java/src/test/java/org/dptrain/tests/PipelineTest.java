package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Arrays;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

/**
 * TrainerOptions.setPipelineStages, setMicroBatches, setPipelineSchedule and setPipelineCuts (trainer.h pipeline
 * model parallel).
 */
class PipelineTest {
  static final int STAGES = 2;
  static final int MICRO_BATCHES = 4;
  static final int BATCH = 16; // four micro-batches of 4 samples
  static final int STEPS = 2;
  static final int FEATURES = Fixtures.TINY_INPUTS;
  static final int CLASSES = Fixtures.TINY_CLASSES;
  /** The parameters of {@link #mlp}'s layers. */
  static final long FC1 = FEATURES * 24 + 24;
  static final long FC2 = 24 * 24 + 24;
  static final long HEAD = 24 * CLASSES + CLASSES;

  /**
   * 1x4x4 -> dense 24 "fc1" -> relu "relu1" -> dense 24 "fc2" -> relu "relu2" -> dense 3 "head" (1083 parameters):
   * four places to cut (before relu1, fc2, relu2 and head).
   */
  static Model mlp() {
    Model m = new Model(1, 4, 4);
    long x = m.dense(Model.INPUT, 24, true, "fc1");
    x = m.activation(x, Activation.ACTIVATION_RELU, "relu1");
    x = m.dense(x, 24, true, "fc2");
    x = m.activation(x, Activation.ACTIVATION_RELU, "relu2");
    m.dense(x, CLASSES, true, "head");
    return m;
  }

  /** Seed 7. */
  static TrainerOptions options() {
    return Fixtures.seeded(7);
  }

  /**
   * SGD with momentum and weight decay (no clip norm: with one, a pipeline's gradient norm may differ in its last
   * bits).
   */
  static OptimizerOptions sgd() {
    OptimizerOptions o = Fixtures.sgd(0.1f);
    o.setMomentum(0.9f);
    o.setWeightDecay(0.01f);
    return o;
  }

  /** Batch s (0, 1, ...) of the tiny problem: BATCH samples, inputs shifted by s so that the batches differ. */
  static float[] inputs(int s) {
    float[] x = Fixtures.inputs(BATCH + s, FEATURES, CLASSES);
    return Arrays.copyOfRange(x, s * FEATURES, (s + BATCH) * FEATURES);
  }

  static int[] labels(int s) {
    return Arrays.copyOfRange(Fixtures.labels(BATCH + s, CLASSES), s, s + BATCH);
  }

  /** What one run leaves: the checksum and every device's memory. */
  static final class Run {
    String checksum;
    ReplicaMemory[] memory;
  }

  /**
   * Trains m with o on context for STEPS batches of BATCH samples, each stepped as {@code slices} consecutive
   * slices of equal size (and checks that the parameters moved).
   */
  static Run train(Context context, Model m, TrainerOptions o, int slices) {
    try (Trainer t = new Trainer(context, m, o, sgd())) {
      float[] start = t.getParameters();
      int per = BATCH / slices;
      for (int s = 0; s < STEPS; ++s) {
        float[] x = inputs(s);
        int[] y = labels(s);
        for (int i = 0; i < slices; ++i) {
          StepResult r = t.step(Arrays.copyOfRange(x, i * per * FEATURES, (i + 1) * per * FEATURES),
              Arrays.copyOfRange(y, i * per, (i + 1) * per));
          assertEquals(per, r.getSamples(), "step " + (s + 1) + ", slice " + i);
          assertEquals(i == slices - 1 || o.getAccumulationSteps() <= 1, r.getApplied(),
              "step " + (s + 1) + ", slice " + i + ": applied");
        }
      }
      assertFalse(Arrays.equals(start, t.getParameters()), STEPS + " steps left the parameters unchanged");
      Run run = new Run();
      run.checksum = t.parameterChecksum();
      run.memory = new ReplicaMemory[(int) t.deviceCount()];
      for (int d = 0; d < run.memory.length; ++d) run.memory[d] = t.replicaMemory(d);
      return run;
    }
  }

  /**
   * The default is no pipeline. The MLP cut into 2 stages on 2 CPU devices, 4 micro-batches per step, trains to
   * the checksum of one device with accumulationSteps 4 stepped on the four consecutive 4-sample slices of each
   * 16-sample batch: with PIPELINE_1F1B (the default) and PIPELINE_GPIPE, with the balanced cut and with cuts
   * named "fc2" and "head". Stepping the slices without accumulation (an update each) gives another checksum:
   * the comparison sees a difference. Each stage holds the parameters of its layers (4 bytes each: fc1 before
   * "fc2", fc1 and fc2 before "head"), and with PIPELINE_GPIPE, which keeps every micro-batch's activations, each
   * stage holds more activations than with PIPELINE_1F1B.
   */
  @Test
  void aPipelineHasTheBitsOfOneDeviceAccumulatingItsMicroBatches() {
    TrainerOptions defaults = new TrainerOptions();
    assertEquals(0, defaults.getPipelineStages(), "the default: no pipeline");
    assertEquals(0, defaults.getMicroBatches(), "the default: four per stage");
    assertEquals(PipelineSchedule.PIPELINE_1F1B, defaults.getPipelineSchedule(), "the default schedule");
    assertNull(defaults.getPipelineCuts(), "the default: balanced cuts");
    assertEquals(PipelineScope.PIPELINE_SCOPE_PROCESS, defaults.getPipelineScope(), "the default scope");
    assertEquals(0, defaults.getPipelineCopies(), "the default copies");
    try (Context one = new Context(1, 0); Context two = new Context(STAGES, 0); Model m = mlp()) {
      TrainerOptions accumulate = options();
      accumulate.setAccumulationSteps(MICRO_BATCHES);
      String expected = train(one, m, accumulate, MICRO_BATCHES).checksum;
      assertNotEquals(expected, train(one, m, options(), MICRO_BATCHES).checksum, "an update per slice");

      // schedule, cuts, the first stage's parameters (0: the balanced cut's, not checked)
      Object[][] cases = {
        {PipelineSchedule.PIPELINE_1F1B, null, 0L}, {PipelineSchedule.PIPELINE_GPIPE, null, 0L},
        {PipelineSchedule.PIPELINE_1F1B, "fc2", FC1}, {PipelineSchedule.PIPELINE_GPIPE, "head", FC1 + FC2},
      };
      Run[] runs = new Run[cases.length];
      for (int i = 0; i < cases.length; ++i) {
        Object[] c = cases[i];
        String what = c[0] + ", cuts " + c[1];
        TrainerOptions o = options();
        o.setPipelineStages(STAGES);
        o.setMicroBatches(MICRO_BATCHES);
        o.setPipelineSchedule((PipelineSchedule) c[0]);
        o.setPipelineCuts((String) c[1]);
        assertEquals(STAGES, o.getPipelineStages());
        assertEquals(MICRO_BATCHES, o.getMicroBatches());
        assertEquals(c[0], o.getPipelineSchedule());
        assertEquals(c[1], o.getPipelineCuts());
        runs[i] = train(two, m, o, 1);
        assertEquals(expected, runs[i].checksum, what);
        assertEquals(STAGES, runs[i].memory.length, what);
        long first = runs[i].memory[0].parameters(), second = runs[i].memory[1].parameters();
        assertEquals(4 * (FC1 + FC2 + HEAD), first + second, what + ": the stages' parameters");
        if ((long) c[2] != 0) assertEquals(4 * (long) c[2], first, what + ": the first stage's parameters");
      }
      // The world scope without a communicator is the process scope: the same bits.
      TrainerOptions world = options();
      world.setPipelineStages(STAGES);
      world.setMicroBatches(MICRO_BATCHES);
      world.setPipelineScope(PipelineScope.PIPELINE_SCOPE_WORLD);
      assertEquals(PipelineScope.PIPELINE_SCOPE_WORLD, world.getPipelineScope());
      assertEquals(expected, train(two, m, world, 1).checksum, "PIPELINE_SCOPE_WORLD without a communicator");
      // Copies of the pipeline divide the processes: no effect without a communicator, refused in the process
      // scope (where every process is a copy).
      world.setPipelineCopies(2);
      assertEquals(2, world.getPipelineCopies());
      assertEquals(expected, train(two, m, world, 1).checksum, "pipeline copies without a communicator");
      TrainerOptions copies = options();
      copies.setPipelineStages(STAGES);
      copies.setPipelineCopies(2);
      assertRefused(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, two, m, copies, "process scope");
      InvalidArgumentException negative =
          assertThrows(InvalidArgumentException.class, () -> copies.setPipelineCopies(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, negative.getStatus());
      for (int s = 0; s < STAGES; ++s) {
        long oneFOneB = runs[0].memory[s].activations(), gpipe = runs[1].memory[s].activations();
        assertTrue(gpipe > oneFOneB, "stage " + s + ": GPipe's activations " + gpipe + " bytes, 1F1B's " + oneFOneB);
      }
    }
  }

  /**
   * The cuts a balance chose come back from pipelineCuts in the form setPipelineCuts takes: by parameters the
   * MLP's two stages begin at "relu1" (408 | 675 parameters), by the estimated work at "fc2" (432 | 699
   * operations per sample); by measured time at one of its four places, which, named, gives a trainer the same
   * cuts. No pipeline: "". The defaults are PIPELINE_BALANCE_WORK and 0; named cuts with another balance are an
   * InvalidArgumentException, a negative batch ERROR_OUT_OF_RANGE, a null balance a NullPointerException.
   */
  @Test
  void theCutsABalanceChoseCanBeNamed() {
    TrainerOptions defaults = new TrainerOptions();
    assertEquals(PipelineBalance.PIPELINE_BALANCE_WORK, defaults.getPipelineBalance(), "the default balance");
    assertEquals(0, defaults.getPipelineBalanceBatch(), "the default: 16 samples");
    try (Context two = new Context(STAGES, 0); Model m = mlp()) {
      TrainerOptions o = pipeline();
      o.setPipelineBalance(PipelineBalance.PIPELINE_BALANCE_PARAMETERS);
      assertEquals(PipelineBalance.PIPELINE_BALANCE_PARAMETERS, o.getPipelineBalance());
      try (Trainer t = new Trainer(two, m, o, sgd())) {
        assertEquals("relu1", t.pipelineCuts(), "by parameters");
      }
      o.setPipelineBalance(PipelineBalance.PIPELINE_BALANCE_WORK);
      try (Trainer t = new Trainer(two, m, o, sgd())) {
        assertEquals("fc2", t.pipelineCuts(), "by the estimated work");
      }
      o.setPipelineBalance(PipelineBalance.PIPELINE_BALANCE_TIME);
      o.setPipelineBalanceBatch(BATCH);
      assertEquals(BATCH, o.getPipelineBalanceBatch());
      String measured;
      try (Trainer t = new Trainer(two, m, o, sgd())) {
        measured = t.pipelineCuts();
      }
      assertTrue(Arrays.asList("relu1", "fc2", "relu2", "head").contains(measured), "by measured time: " + measured);
      TrainerOptions named = pipeline();
      named.setPipelineCuts(measured);
      try (Trainer t = new Trainer(two, m, named, sgd())) {
        assertEquals(measured, t.pipelineCuts(), "the measured cut, named");
      }
      try (Trainer t = new Trainer(two, m, options(), sgd())) {
        assertEquals("", t.pipelineCuts(), "no pipeline");
      }
      o.setPipelineCuts("fc2");
      assertRefused(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, two, m, o, "one or the other");
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> named.setPipelineBalanceBatch(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertThrows(NullPointerException.class, () -> named.setPipelineBalance(null));
    }
  }

  static <E extends DptrainException> E assertRefused(Class<E> type, Status status, Context context, Model m,
      TrainerOptions o, String... fragments) {
    E e = assertThrows(type, () -> new Trainer(context, m, o, sgd()).close(), status.toString());
    assertEquals(status, e.getStatus(), e.getLibraryMessage());
    for (String f : fragments) assertTrue(e.getLibraryMessage().contains(f), e.getLibraryMessage());
    return e;
  }

  static TrainerOptions pipeline() {
    TrainerOptions o = options();
    o.setPipelineStages(STAGES);
    return o;
  }

  /**
   * 3 stages on 2 devices is an UnsupportedException (ERROR_UNSUPPORTED), 1025 micro-batches an
   * InvalidArgumentException with ERROR_OUT_OF_RANGE, a cut at a node that does not exist an
   * InvalidArgumentException with ERROR_INVALID_ARGUMENT; a negative count is ERROR_OUT_OF_RANGE when it is set
   * (the binding refuses it), a null schedule a NullPointerException. The limits themselves are taken, and the
   * options keep their own copy of the cuts.
   */
  @Test
  void theLibraryRefusalsComeBackAsExceptions() {
    try (Context two = new Context(STAGES, 0); Model m = mlp()) {
      TrainerOptions o = pipeline();
      o.setPipelineStages(3);
      assertRefused(UnsupportedException.class, Status.ERROR_UNSUPPORTED, two, m, o, "dpt_trainer_create",
          "3 stages", "devices per stage");
      o = pipeline();
      o.setMicroBatches(1025);
      assertRefused(InvalidArgumentException.class, Status.ERROR_OUT_OF_RANGE, two, m, o, "dpt_trainer_create",
          "1024", "1025");
      o = pipeline();
      o.setPipelineCuts("nope");
      assertRefused(InvalidArgumentException.class, Status.ERROR_INVALID_ARGUMENT, two, m, o, "dpt_trainer_create",
          "nope");

      TrainerOptions n = pipeline();
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> n.setMicroBatches(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      e = assertThrows(InvalidArgumentException.class, () -> n.setPipelineStages(-1));
      assertEquals(Status.ERROR_OUT_OF_RANGE, e.getStatus());
      assertThrows(NullPointerException.class, () -> n.setPipelineSchedule(null));
      assertEquals(PipelineSchedule.PIPELINE_GPIPE, PipelineSchedule.swigToEnum(1));
      assertThrows(IllegalArgumentException.class, () -> PipelineSchedule.swigToEnum(2));
      assertThrows(NullPointerException.class, () -> n.setPipelineScope(null));

      o = pipeline();
      o.setMicroBatches(1024);
      o.setPipelineCuts("fc2");
      o.setPipelineCuts("relu2"); // replaces the copy
      assertEquals("relu2", o.getPipelineCuts());
      try (Trainer t = new Trainer(two, m, o, sgd())) {
        assertEquals(STAGES, t.deviceCount());
      }
      o.setPipelineCuts(null);
      assertNull(o.getPipelineCuts());
    }
  }
}
