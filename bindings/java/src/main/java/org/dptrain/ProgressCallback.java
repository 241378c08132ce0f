package org.dptrain;

/**
 * Receives the progress reports of {@link Trainer#fit(Dataset, Dataset, FitOptions, ProgressCallback)}.
 *
 * <p>Called on the thread that called fit (the library may also call it from one of its own threads; the
 * binding attaches such a thread to the JVM). The {@link Progress} is a copy owned by Java: it may be kept.
 * An exception thrown here stops training and is rethrown by fit.
 */
@FunctionalInterface
public interface ProgressCallback {
  /**
   * @param progress a batch or epoch report
   * @return true to stop training after this report, false to continue
   */
  boolean onProgress(Progress progress);
}
