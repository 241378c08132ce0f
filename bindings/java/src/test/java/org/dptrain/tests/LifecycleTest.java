package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.dptrain.*;
import org.junit.jupiter.api.Test;

class LifecycleTest {
  @Test
  void contextReportsItsCpuDevices() {
    try (Context context = new Context(2, 0)) {
      assertEquals(2, context.deviceCount());
      List<DeviceInfo> devices = context.devices();
      assertEquals(2, devices.size());
      for (int i = 0; i < 2; ++i) {
        DeviceInfo d = devices.get(i);
        assertEquals("cpu:" + i, d.getName());
        assertEquals(DeviceKind.DEVICE_CPU, d.getKind());
        assertEquals(i, d.getOrdinal());
        assertEquals(0, d.getMemoryLimit());
        assertTrue(d.getTotalMemory() > 0);
      }
    }
  }

  @Test
  void cudaIsAskedForOnlyOnRequest() {
    try (Context cpu = new Context(2, 0); Context all = new Context(2, 0, DeviceSelection.DEVICES_ALL)) {
      BackendInfo none = cpu.backendInfo(DeviceKind.DEVICE_CUDA);
      assertEquals(0, none.getRequested());
      assertTrue(none.getReason().contains("not requested"), none.getReason());
      BackendInfo cuda = all.backendInfo(DeviceKind.DEVICE_CUDA);
      assertEquals(1, cuda.getRequested());
      assertEquals(2 + cuda.getDeviceCount(), all.deviceCount());
      if (cuda.getDeviceCount() == 0) assertFalse(cuda.getReason().isEmpty());
      assertFalse(all.canAccessPeer(0, 1));
      assertEquals(all.deviceInfo(0).getTotalMemory(), all.deviceInfo(0).getFreeMemory());
      assertThrows(DeviceException.class, () -> all.canAccessPeer(0, 99)); // device not found
    }
  }

  @Test
  void memoryLimitIsReported() {
    try (Context context = new Context(1, 1L << 30)) {
      assertEquals(1L << 30, context.deviceInfo(0).getMemoryLimit());
    }
  }

  @Test
  void builtinModelsHaveTheDocumentedShapes() {
    try (Model lenet = Model.builtin("lenet"); Model mlp = Model.builtin("mlp")) {
      assertEquals(784, lenet.inputSize());
      assertEquals(10, lenet.outputSize());
      // conv 1->20 3x3, conv 20->50 5x5, dense 800->128, dense 128->10 (weights + biases)
      assertEquals(20 * 9 + 20 + 50 * 20 * 25 + 50 + 800 * 128 + 128 + 128 * 10 + 10, lenet.parameterCount());
      assertEquals(784 * 256 + 256 + 256 * 10 + 10, mlp.parameterCount());
      assertTrue(lenet.describe().startsWith("1x28x28 "), lenet.describe());
      assertEquals(4, mlp.layerCount()); // flatten, dense, relu, dense
    }
  }

  @Test
  void builtModelDescribesItsLayers() {
    try (Model m = Fixtures.tiny()) {
      assertEquals(16, m.inputSize());
      assertEquals(3, m.outputSize());
      assertEquals(3, m.layerCount());
      assertEquals(Fixtures.TINY_PARAMETERS, m.parameterCount());
    }
  }

  @Test
  void closeIsIdempotentAndUseAfterCloseThrows() {
    Context context = new Context(1, 0);
    Model model = Fixtures.tiny();
    Dataset data = Fixtures.tinyDataset(8);
    Trainer trainer = new Trainer(context, model);
    assertFalse(trainer.isClosed());

    trainer.close();
    trainer.close();
    assertTrue(trainer.isClosed());
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, trainer::parameterCount);
    assertEquals(Status.ERROR_NULL_POINTER, e.getStatus());
    assertTrue(e.getMessage().contains("Trainer.parameterCount: this Trainer is closed"), e.getMessage());
    e = assertThrows(InvalidArgumentException.class,
        () -> trainer.step(new float[16], new int[] {0}));
    assertTrue(e.getMessage().contains("this Trainer is closed"), e.getMessage());

    model.close();
    model.close();
    e = assertThrows(InvalidArgumentException.class, model::describe);
    assertTrue(e.getMessage().contains("Model.describe: this Model is closed"), e.getMessage());

    data.close();
    e = assertThrows(InvalidArgumentException.class, () -> data.subset(0, 1));
    assertTrue(e.getMessage().contains("Dataset.subset: this Dataset is closed"), e.getMessage());

    context.close();
    context.close();
    e = assertThrows(InvalidArgumentException.class, context::deviceCount);
    assertTrue(e.getMessage().contains("Context.deviceCount: this Context is closed"), e.getMessage());
  }

  @Test
  void closedArgumentsAreRejected() {
    try (Context context = new Context(1, 0)) {
      Model closedModel = Fixtures.tiny();
      closedModel.close();
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> new Trainer(context, closedModel));
      assertTrue(e.getMessage().contains("model: this Model is closed"), e.getMessage());

      try (Model model = Fixtures.tiny(); Trainer trainer = new Trainer(context, model)) {
        Dataset closedData = Fixtures.tinyDataset(4);
        closedData.close();
        e = assertThrows(InvalidArgumentException.class, () -> trainer.fit(closedData, null));
        assertTrue(e.getMessage().contains("train: this Dataset is closed"), e.getMessage());
        FitOptions deleted = new FitOptions();
        deleted.delete();
        try (Dataset data = Fixtures.tinyDataset(4)) {
          e = assertThrows(InvalidArgumentException.class, () -> trainer.fit(data, null, deleted));
          assertTrue(e.getMessage().contains("options: this FitOptions is closed"), e.getMessage());
        }
      }
    }
  }

  @Test
  void modelMayBeClosedBeforeItsTrainer() {
    try (Context context = new Context(1, 0)) {
      Trainer trainer;
      try (Model model = Fixtures.tiny()) {
        trainer = new Trainer(context, model);
      }
      try (Trainer t = trainer) {
        StepResult r = t.step(Fixtures.inputs(4, 16, 3), Fixtures.labels(4, 3));
        assertEquals(4, r.getSamples());
      }
    }
  }

  @Test
  void unreachableObjectsAreReclaimedWithoutCrashing() throws Exception {
    // Finalizers are only a safety net, but they must be safe in any order (context before trainer too).
    for (int i = 0; i < 20; ++i) {
      Context context = new Context(1, 0);
      Model model = Fixtures.tiny();
      new Trainer(context, model).step(Fixtures.inputs(2, 16, 3), Fixtures.labels(2, 3));
    }
    for (int i = 0; i < 3; ++i) {
      System.gc();
      System.runFinalization();
      Thread.sleep(20);
    }
    try (Context context = new Context(1, 0)) {
      assertEquals(1, context.deviceCount());
    }
  }

  @Test
  void versionIsTheLibrarys() {
    assertTrue(Dptrain.versionString().matches("\\d+\\.\\d+\\.\\d+"), Dptrain.versionString());
    String[] parts = Dptrain.versionString().split("\\.");
    assertEquals(Integer.parseInt(parts[0]) * 10000 + Integer.parseInt(parts[1]) * 100 + Integer.parseInt(parts[2]),
        Dptrain.versionNumber());
  }
}
