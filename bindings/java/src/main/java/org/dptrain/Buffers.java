package org.dptrain;

import java.nio.Buffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;

/** Checks of the direct-buffer overloads: the native side reads a buffer's remaining elements in place. */
final class Buffers {
  private Buffers() {}

  static Object arg(FloatBuffer buffer, String name) {
    if (buffer != null && buffer.order() != ByteOrder.nativeOrder()) {
      throw DptrainException.of(Status.ERROR_INVALID_ARGUMENT,
          name + ": the FloatBuffer must be in native byte order (ByteBuffer.allocateDirect(n)"
              + ".order(ByteOrder.nativeOrder()).asFloatBuffer())");
    }
    return direct(buffer, name, "FloatBuffer");
  }

  static Object arg(IntBuffer buffer, String name) {
    if (buffer != null && buffer.order() != ByteOrder.nativeOrder()) {
      throw DptrainException.of(Status.ERROR_INVALID_ARGUMENT,
          name + ": the IntBuffer must be in native byte order (ByteBuffer.allocateDirect(n)"
              + ".order(ByteOrder.nativeOrder()).asIntBuffer())");
    }
    return direct(buffer, name, "IntBuffer");
  }

  private static Object direct(Buffer buffer, String name, String type) {
    if (buffer == null) throw DptrainException.of(Status.ERROR_NULL_POINTER, name + " must not be null");
    if (!buffer.isDirect()) {
      throw DptrainException.of(Status.ERROR_INVALID_ARGUMENT,
          name + ": the " + type + " must be direct (use an array, or allocate it with ByteBuffer.allocateDirect)");
    }
    if (buffer.position() == 0 && buffer.limit() == buffer.capacity()) return buffer;
    return buffer.slice(); // the native side reads [position, limit)
  }

  static float[] newArray(long length, String what) {
    if (length < 0 || length > Integer.MAX_VALUE - 8) {
      throw DptrainException.of(Status.ERROR_OUT_OF_RANGE,
          what + ": " + length + " floats do not fit a Java array; use a direct FloatBuffer");
    }
    return new float[(int) length];
  }
}
