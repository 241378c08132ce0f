package org.dptrain;

/** The operation or configuration is not supported (status 2000-2999). */
public class UnsupportedException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 2000. */
  public UnsupportedException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 2000, statusName, libraryMessage);
  }
}
