package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.dptrain.*;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Null arrays, wrong lengths, negative sizes, bad buffers: exceptions with clear messages, never a crash. */
class BadInputTest {
  private Context context;
  private Model model;
  private Trainer trainer;
  private Dataset data;

  @BeforeEach
  void open() {
    context = new Context(2, 0);
    model = Fixtures.tiny();
    trainer = new Trainer(context, model);
    data = Fixtures.tinyDataset(8);
  }

  @AfterEach
  void close() {
    data.close();
    trainer.close();
    model.close();
    context.close();
  }

  private static void assertRejected(Status status, String messagePart, Executable call) {
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, call);
    assertEquals(status, e.getStatus(), e.getMessage());
    assertTrue(e.getMessage().contains(messagePart), "'" + e.getMessage() + "' lacks '" + messagePart + "'");
  }

  @Test
  void nullArrays() {
    assertRejected(Status.ERROR_NULL_POINTER, "Trainer.step: inputs must not be null",
        () -> trainer.step((float[]) null, new int[] {0}));
    assertRejected(Status.ERROR_NULL_POINTER, "Trainer.step: labels must not be null",
        () -> trainer.step(new float[16], (int[]) null));
    assertRejected(Status.ERROR_NULL_POINTER, "Trainer.setParameters: params must not be null",
        () -> trainer.setParameters((float[]) null));
    assertRejected(Status.ERROR_NULL_POINTER, "Trainer.getParameters: out_params must not be null",
        () -> trainer.getParameters((float[]) null));
    assertRejected(Status.ERROR_NULL_POINTER, "new Dataset: inputs must not be null",
        () -> new Dataset((float[]) null, new int[1], 1, 4, 4, 3));
    assertRejected(Status.ERROR_NULL_POINTER, "new Trainer: devices must not be null",
        () -> new Trainer(context, model, null, null, null, new float[0]));
    assertRejected(Status.ERROR_NULL_POINTER, "inputs must not be null",
        () -> trainer.step((FloatBuffer) null, Fixtures.directInts(new int[1])));
  }

  @Test
  void nullHandlesAndStrings() {
    assertRejected(Status.ERROR_NULL_POINTER, "context is NULL", () -> new Trainer(null, model));
    assertRejected(Status.ERROR_NULL_POINTER, "model is NULL", () -> new Trainer(context, null));
    assertRejected(Status.ERROR_NULL_POINTER, "train is NULL", () -> trainer.fit(null, null));
    assertRejected(Status.ERROR_NULL_POINTER, "name is NULL", () -> Model.builtin(null));
  }

  @Test
  void wrongLengths() {
    assertRejected(Status.ERROR_SIZE_MISMATCH, "input_count is 17, expected 1 x 16 = 16",
        () -> trainer.step(new float[17], new int[] {0}));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "input_count is 16, expected 2 x 16 = 32",
        () -> trainer.evaluate(new float[16], new int[] {0, 1}));
    assertRejected(Status.ERROR_INVALID_ARGUMENT, "must be positive",
        () -> trainer.step(new float[0], new int[0]));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "dpt_trainer_set_parameters",
        () -> trainer.setParameters(new float[3]));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "count is 400, the model has 323 parameters",
        () -> trainer.getParameters(new float[400]));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "dpt_trainer_predict",
        () -> trainer.predict(new float[32], 2, new float[5]));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "dpt_dataset_create",
        () -> new Dataset(new float[15], new int[1], 1, 4, 4, 3));
    assertRejected(Status.ERROR_SIZE_MISMATCH, "dpt_dataset_copy_batch",
        () -> data.copyBatch(0, 2, new float[32], new int[3]));
    // The trainer is unharmed.
    assertEquals(1, trainer.step(new float[16], new int[] {0}).getSamples());
  }

  @Test
  void negativeSizes() {
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Dataset.subset: start must not be negative (got -1)",
        () -> data.subset(-1, 2));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Dataset.subset: count must not be negative (got -2)",
        () -> data.subset(0, -2));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "new Context: cpu_devices must not be negative (got -1)",
        () -> new Context(-1, 0));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "new Model: height must not be negative (got -28)",
        () -> new Model(1, -28, 28));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Model.addDense: units must not be negative (got -3)",
        () -> model.addDense(-3));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Trainer.predict: sample_count must not be negative",
        () -> trainer.predict(new float[16], -1, new float[3]));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Trainer.getReplicaParameters: replica must not be negative",
        () -> trainer.getReplicaParameters(-1));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "Context.deviceInfo: index must not be negative",
        () -> context.deviceInfo(-1));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "new Trainer: devices[1] must not be negative (got -1)",
        () -> new Trainer(context, model, null, null, new long[] {0, -1}));
    FitOptions o = new FitOptions();
    assertRejected(Status.ERROR_OUT_OF_RANGE, "FitOptions.batchSize: batch_size must not be negative (got -256)",
        () -> o.setBatchSize(-256));
    assertEquals(256, o.getBatchSize(), "the default is kept");
  }

  @Test
  void outOfRangeValues() {
    assertRejected(Status.ERROR_OUT_OF_RANGE, "dpt_dataset_subset", () -> data.subset(6, 5));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "dpt_dataset_create",
        () -> new Dataset(new float[16], new int[] {3}, 1, 4, 4, 3));
    assertRejected(Status.ERROR_OUT_OF_RANGE, "dpt_model_add_dropout", () -> model.addDropout(1.5f));
    assertRejected(Status.ERROR_INVALID_ARGUMENT, "dpt_trainer_create",
        () -> new Trainer(context, model, null, null, new long[] {1, 1}));
  }

  @Test
  void unusableBuffers() {
    FloatBuffer heap = FloatBuffer.allocate(16);
    assertRejected(Status.ERROR_INVALID_ARGUMENT, "inputs: the FloatBuffer must be direct",
        () -> trainer.step(heap, Fixtures.directInts(new int[1])));
    FloatBuffer bigEndian = ByteBuffer.allocateDirect(64).order(ByteOrder.BIG_ENDIAN).asFloatBuffer();
    if (ByteOrder.nativeOrder() != ByteOrder.BIG_ENDIAN) {
      assertRejected(Status.ERROR_INVALID_ARGUMENT, "native byte order",
          () -> trainer.step(bigEndian, Fixtures.directInts(new int[1])));
    }
    FloatBuffer tooShort = Fixtures.directFloats(new float[16]);
    tooShort.limit(15);
    assertRejected(Status.ERROR_SIZE_MISMATCH, "input_count is 15",
        () -> trainer.step(tooShort, Fixtures.directInts(new int[1])));
  }

  @Test
  void badOptionsAreRejectedByTheLibrary() {
    FitOptions o = new FitOptions();
    o.setBatchSize(0);
    assertRejected(Status.ERROR_INVALID_ARGUMENT, "dpt_trainer_fit", () -> trainer.fit(data, null, o));
    OptimizerOptions bad = new OptimizerOptions();
    bad.setLearningRate(-1f);
    assertRejected(Status.ERROR_INVALID_ARGUMENT, "dpt_trainer_create",
        () -> new Trainer(context, model, null, bad));
  }
}
