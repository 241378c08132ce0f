package org.dptrain;

/**
 * The native (SWIG director) side of a {@link ProgressCallback} during one fit: an exception thrown by
 * the callback is kept here, training is stopped, and fit rethrows it once the library has returned.
 * No Java exception ever crosses the native frames.
 */
final class ProgressAdapter extends ProgressListener {
  private final ProgressCallback callback;
  private volatile Throwable failure;

  ProgressAdapter(ProgressCallback callback) {
    this.callback = callback;
  }

  @Override
  public boolean onProgress(Progress progress) {
    if (failure != null) return true;
    try {
      return callback.onProgress(progress);
    } catch (Throwable t) {
      failure = t;
      return true;
    }
  }

  /** Throws the callback's exception, if any (with {@code alsoThrown}, from fit itself, suppressed). */
  void rethrowFailure(Throwable alsoThrown) {
    Throwable f = failure;
    if (f == null) return;
    if (alsoThrown != null && alsoThrown != f) f.addSuppressed(alsoThrown);
    if (f instanceof RuntimeException) throw (RuntimeException) f;
    if (f instanceof Error) throw (Error) f;
    throw new java.lang.reflect.UndeclaredThrowableException(f, "progress callback failed: " + f);
  }
}
