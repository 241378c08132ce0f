package org.dptrain;

/**
 * A dptrain call failed. Carries the library's status code, its category (the status rounded down to a
 * multiple of 1000) and the library's one-line message. Each category has its own subclass:
 * {@link InvalidArgumentException} (1000s), {@link UnsupportedException} (2000s), {@link DeviceException}
 * (3000s), {@link CommunicationException} (4000s), {@link IOFormatException} (5000s) and
 * {@link InternalException} (9000s).
 */
public class DptrainException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int statusCode;
  private final int category;
  private final String statusName;
  private final String libraryMessage;

  /**
   * @param statusCode the library's status code, e.g. 1003
   * @param category the status category, e.g. 1000
   * @param statusName the library's name of the status, e.g. "size mismatch"
   * @param libraryMessage the library's message
   */
  public DptrainException(int statusCode, int category, String statusName, String libraryMessage) {
    super(libraryMessage + " [" + statusName + ", status " + statusCode + "]");
    this.statusCode = statusCode;
    this.category = category;
    this.statusName = statusName;
    this.libraryMessage = libraryMessage;
  }

  /** The library's status code, e.g. 1003 for a size mismatch. */
  public int getStatusCode() {
    return statusCode;
  }

  /** The status as an enum constant, or null for a code this version of the binding does not know. */
  public Status getStatus() {
    for (Status s : Status.values()) {
      if (s.swigValue() == statusCode) return s;
    }
    return null;
  }

  /** The status category: the status rounded down to a multiple of 1000. */
  public int getCategory() {
    return category;
  }

  /** The library's name of the status, e.g. "size mismatch". */
  public String getStatusName() {
    return statusName;
  }

  /** The library's one-line message, e.g. "dpt_trainer_step: input_count 3 does not match ...". */
  public String getLibraryMessage() {
    return libraryMessage;
  }

  /** The exception of the status's category (called by the JNI wrapper). */
  static DptrainException of(int statusCode, int category, String statusName, String message) {
    switch (category) {
      case 1000:
        return new InvalidArgumentException(statusCode, statusName, message);
      case 2000:
        return new UnsupportedException(statusCode, statusName, message);
      case 3000:
        return new DeviceException(statusCode, statusName, message);
      case 4000:
        return new CommunicationException(statusCode, statusName, message);
      case 5000:
        return new IOFormatException(statusCode, statusName, message);
      case 9000:
        return new InternalException(statusCode, statusName, message);
      default:
        return new DptrainException(statusCode, category, statusName, message);
    }
  }

  /** An error found by the Java layer itself, with the library's status name. */
  static DptrainException of(Status status, String message) {
    int code = status.swigValue();
    String name;
    try {
      name = Dptrain.statusString(code);
    } catch (Throwable notLoaded) {
      name = status.name().toLowerCase(java.util.Locale.ROOT).replace("error_", "").replace('_', ' ');
    }
    return of(code, code / 1000 * 1000, name, message);
  }

  /** A closed object was used. */
  static DptrainException closed(String message) {
    return of(Status.ERROR_NULL_POINTER, message);
  }
}
