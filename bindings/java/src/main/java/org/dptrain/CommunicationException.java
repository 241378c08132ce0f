package org.dptrain;

/** A collective operation failed or timed out (status 4000-4999). */
public class CommunicationException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 4000. */
  public CommunicationException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 4000, statusName, libraryMessage);
  }
}
