package org.dptrain;

/**
 * An argument was rejected: a null or closed object, a bad value, size or index, or a handle another thread is
 * calling into ({@link Status#ERROR_BUSY}) (status 1000-1999).
 */
public class InvalidArgumentException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 1000. */
  public InvalidArgumentException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 1000, statusName, libraryMessage);
  }
}
