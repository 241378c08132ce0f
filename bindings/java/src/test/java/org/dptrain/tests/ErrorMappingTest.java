package org.dptrain.tests;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.dptrain.*;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A failed status becomes the exception of its category, carrying the status and the library's message. */
class ErrorMappingTest {
  @TempDir Path dir;

  private static void assertStatus(DptrainException e, Status status, int category, String messagePart) {
    assertEquals(status, e.getStatus());
    assertEquals(status.swigValue(), e.getStatusCode());
    assertEquals(category, e.getCategory());
    assertEquals(Dptrain.statusString(status.swigValue()), e.getStatusName());
    assertTrue(e.getLibraryMessage().contains(messagePart), e.getLibraryMessage());
    assertTrue(e.getMessage().startsWith(e.getLibraryMessage()), e.getMessage());
    assertTrue(e.getMessage().contains("status " + status.swigValue()), e.getMessage());
  }

  @Test
  void unknownBuiltinModelIsAnInvalidArgument() {
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Model.builtin("resnet"));
    assertStatus(e, Status.ERROR_INVALID_ARGUMENT, 1000, "dpt_model_create_builtin");
    assertTrue(e.getLibraryMessage().contains("resnet"), e.getLibraryMessage());
  }

  @Test
  void wrongInputLengthIsASizeMismatchWithTheLibrarysMessage() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> t.step(new float[10], new int[] {0}));
      assertStatus(e, Status.ERROR_SIZE_MISMATCH, 1000, "dpt_trainer_step: input_count is 10, expected 1 x 16 = 16");
    }
  }

  @Test
  void badLabelIsOutOfRange() {
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Trainer t = new Trainer(c, m)) {
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> t.step(new float[16], new int[] {7}));
      assertStatus(e, Status.ERROR_OUT_OF_RANGE, 1000, "dpt_trainer_step");
    }
  }

  @Test
  void missingDeviceIsADeviceException() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny()) {
      DeviceException e = assertThrows(DeviceException.class,
          () -> new Trainer(c, m, null, null, new long[] {0, 5}));
      assertStatus(e, Status.ERROR_DEVICE_NOT_FOUND, 3000, "dpt_trainer_create");
      assertThrows(DeviceException.class, () -> c.deviceInfo(2));
    }
  }

  @Test
  void exhaustedDeviceMemoryIsADeviceException() {
    try (Context c = new Context(1, 4096); Model m = Model.builtin("lenet")) {
      DeviceException e = assertThrows(DeviceException.class, () -> new Trainer(c, m));
      assertStatus(e, Status.ERROR_OUT_OF_MEMORY, 3000, "dpt_trainer_create");
    }
  }

  @Test
  void missingFileIsAnIOFormatException() {
    IOFormatException e = assertThrows(IOFormatException.class,
        () -> Dataset.loadIdx(dir.resolve("none-images").toString(), dir.resolve("none-labels").toString()));
    assertStatus(e, Status.ERROR_IO, 5000, "dpt_dataset_load_idx");
  }

  @Test
  void badMagicIsAFormatError() throws IOException {
    Path images = dir.resolve("images");
    Path labels = dir.resolve("labels");
    Files.write(images, new byte[] {0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0});
    Files.write(labels, new byte[] {0, 0, 8, 1, 0, 0, 0, 1, 0});
    IOFormatException e =
        assertThrows(IOFormatException.class, () -> Dataset.loadIdx(images.toString(), labels.toString()));
    assertStatus(e, Status.ERROR_FORMAT, 5000, "dpt_dataset_load_idx");
  }

  @Test
  void splitWeightCountIsCheckedByTheBinding() {
    try (Context c = new Context(2, 0); Model m = Fixtures.tiny()) {
      TrainerOptions o = new TrainerOptions();
      o.setSplit(SplitPolicy.SPLIT_WEIGHTED);
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> new Trainer(c, m, o, null, new long[0], new float[] {1, 2, 3}));
      assertStatus(e, Status.ERROR_SIZE_MISMATCH, 1000, "3 split weights for 2 devices");
    }
  }

  @Test
  void everyCategoryHasItsClass() {
    assertInstanceOf(InvalidArgumentException.class, new InvalidArgumentException(1003, "x", "m"));
    assertEquals(2000, new UnsupportedException(2000, "unsupported", "m").getCategory());
    assertEquals(3000, new DeviceException(3001, "out of memory", "m").getCategory());
    assertEquals(4000, new CommunicationException(4001, "timeout", "m").getCategory());
    assertEquals(5000, new IOFormatException(5001, "format error", "m").getCategory());
    assertEquals(9000, new InternalException(9000, "internal error", "m").getCategory());
    for (Class<?> c : new Class<?>[] {InvalidArgumentException.class, UnsupportedException.class,
             DeviceException.class, CommunicationException.class, IOFormatException.class,
             InternalException.class}) {
      assertTrue(DptrainException.class.isAssignableFrom(c));
      assertTrue(RuntimeException.class.isAssignableFrom(c));
    }
  }

  @Test
  void busyIsAnInvalidArgumentWithItsOwnStatus() {
    // Another thread is in a call on the same handle (status 1007): the 1000s category's class, and the status.
    assertEquals(1007, Status.ERROR_BUSY.swigValue());
    InvalidArgumentException e = new InvalidArgumentException(1007, Dptrain.statusString(1007), "dpt_trainer_step");
    assertEquals(Status.ERROR_BUSY, e.getStatus());
    assertEquals(1000, e.getCategory());
    assertEquals("busy", e.getStatusName());
    assertEquals("dpt_trainer_step [busy, status 1007]", e.getMessage());
  }

  @Test
  void statusStringsAreTheLibrarys() {
    assertEquals("busy", Dptrain.statusString(1007));
    assertEquals("size mismatch", Dptrain.statusString(1003));
    assertEquals("device not found", Dptrain.statusString(3002));
    assertEquals("unknown status", Dptrain.statusString(4242));
  }

  @Test
  void errorsAreIndependentPerThread() throws Exception {
    // The library's message is thread-local; each thread's exception carries its own.
    try (Context c = new Context(1, 0); Model m = Fixtures.tiny(); Trainer t1 = new Trainer(c, m);
         Trainer t2 = new Trainer(c, m)) {
      String[] messages = new String[2];
      Thread a = new Thread(() -> {
        try {
          t1.step(new float[5], new int[] {0});
        } catch (DptrainException e) {
          messages[0] = e.getLibraryMessage();
        }
      });
      Thread b = new Thread(() -> {
        try {
          t2.step(new float[16], new int[] {9});
        } catch (DptrainException e) {
          messages[1] = e.getLibraryMessage();
        }
      });
      a.start();
      b.start();
      a.join();
      b.join();
      assertTrue(messages[0].contains("input_count is 5"), messages[0]);
      assertFalse(messages[1].contains("input_count"), messages[1]);
    }
  }
}
