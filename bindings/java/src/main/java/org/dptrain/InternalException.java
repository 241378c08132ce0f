package org.dptrain;

/** A bug in dptrain; please report it with the message (status 9000-9999). */
public class InternalException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 9000. */
  public InternalException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 9000, statusName, libraryMessage);
  }
}
