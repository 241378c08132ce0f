package org.dptrain;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** The factory the JNI wrapper calls maps every status of the enum to the class of its category. */
class StatusMappingTest {
  @Test
  void everyStatusMapsToTheClassOfItsCategory() {
    for (Status s : Status.values()) {
      if (s == Status.OK) continue;
      int code = s.swigValue();
      DptrainException e = DptrainException.of(code, code / 1000 * 1000, Dptrain.statusString(code), "msg");
      Class<?> expected;
      switch (code / 1000) {
        case 1: expected = InvalidArgumentException.class; break;
        case 2: expected = UnsupportedException.class; break;
        case 3: expected = DeviceException.class; break;
        case 4: expected = CommunicationException.class; break;
        case 5: expected = IOFormatException.class; break;
        case 9: expected = InternalException.class; break;
        default: throw new AssertionError("unexpected status " + s);
      }
      assertEquals(expected, e.getClass(), s.toString());
      assertEquals(s, e.getStatus());
      assertEquals("msg", e.getLibraryMessage());
    }
    // The status added with the core's busy detection (a second thread calling into the same trainer).
    DptrainException busy = DptrainException.of(1007, 1000, Dptrain.statusString(1007), "dpt_trainer_step");
    assertEquals(InvalidArgumentException.class, busy.getClass());
    assertEquals(Status.ERROR_BUSY, busy.getStatus());
    assertEquals("busy", busy.getStatusName());
    DptrainException unknown = DptrainException.of(7001, 7000, "unknown status", "m");
    assertEquals(DptrainException.class, unknown.getClass());
    assertNull(unknown.getStatus());
  }
}
