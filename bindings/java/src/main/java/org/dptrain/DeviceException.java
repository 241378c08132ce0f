package org.dptrain;

/** A device failed or ran out of memory, or does not exist (status 3000-3999). */
public class DeviceException extends DptrainException {
  private static final long serialVersionUID = 1L;

  /** See {@link DptrainException#DptrainException(int, int, String, String)}; the category is 3000. */
  public DeviceException(int statusCode, String statusName, String libraryMessage) {
    super(statusCode, 3000, statusName, libraryMessage);
  }
}
