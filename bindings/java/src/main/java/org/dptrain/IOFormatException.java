package org.dptrain;

/** A file could not be read or written, or has invalid content (status 5000-5999). */
public class IOFormatException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 5000. */
  public IOFormatException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 5000, statusName, libraryMessage);
  }
}
