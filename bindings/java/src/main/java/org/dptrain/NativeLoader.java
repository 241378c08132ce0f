package org.dptrain;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI library (libdptrain_java.so, which finds libdptrain.so through its RPATH) the first time
 * a native method is needed. Places tried, in order:
 * <ol>
 *   <li>the system property {@code dptrain.jni.library}: the library file, or the directory holding it;</li>
 *   <li>the natives inside the jar ({@code natives/<platform>/}, the versioned jar dptrain-VERSION.jar):
 *       extracted to a cache directory and loaded in dependency order ({@link BundledNatives});</li>
 *   <li>the directory of dptrain.jar (the build tree puts both side by side);</li>
 *   <li>the install location relative to the jar (share/java/dptrain.jar -> lib/jni);</li>
 *   <li>{@code System.loadLibrary("dptrain_java")}, i.e. {@code java.library.path}.</li>
 * </ol>
 */
final class NativeLoader {
  /** System property naming the JNI library file or its directory. */
  static final String PROPERTY = "dptrain.jni.library";

  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) return;
    String file = System.mapLibraryName("dptrain_java");
    List<String> tried = new ArrayList<>();
    List<File> candidates = new ArrayList<>();
    String property = System.getProperty(PROPERTY);
    if (property != null && !property.isEmpty()) {
      File f = new File(property);
      candidates.add(f.isDirectory() ? new File(f, file) : f);
    }
    if (loadFromCandidates(candidates, tried) || loadBundled(tried)) {
      loaded = true;
      return;
    }
    candidates.clear();
    File jarDir = jarDirectory();
    if (jarDir != null) {
      candidates.add(new File(jarDir, file));
      candidates.add(new File(new File(jarDir, BuildConfig.JNI_DIR_FROM_JAR), file));
    }
    if (loadFromCandidates(candidates, tried)) {
      loaded = true;
      return;
    }
    try {
      System.loadLibrary("dptrain_java");
      loaded = true;
    } catch (UnsatisfiedLinkError e) {
      tried.add("java.library.path=" + System.getProperty("java.library.path") + " (" + e.getMessage() + ")");
      throw new UnsatisfiedLinkError("dptrain: cannot load the JNI library " + file + "; set -D" + PROPERTY
          + "=/path/to/" + file + ". Tried: " + String.join("; ", tried));
    }
  }

  /** Loads the first candidate file that exists and loads; false if none did. */
  private static boolean loadFromCandidates(List<File> candidates, List<String> tried) {
    for (File f : candidates) {
      if (!f.isFile()) {
        tried.add(f + " (missing)");
        continue;
      }
      try {
        System.load(f.getAbsolutePath());
        return true;
      } catch (UnsatisfiedLinkError e) {
        tried.add(f + " (" + e.getMessage() + ")");
      }
    }
    return false;
  }

  /** Extracts the jar's natives for this platform and loads them in the index's order (libdptrain first). */
  private static boolean loadBundled(List<String> tried) {
    try {
      List<File> files = BundledNatives.extract(BuildConfig.VERSION, tried);
      if (files == null) return false;
      for (File f : files) System.load(f.getAbsolutePath());
      return true;
    } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
      tried.add("natives in the jar (" + e + ")");
      return false;
    }
  }

  private static File jarDirectory() {
    try {
      java.security.CodeSource source = NativeLoader.class.getProtectionDomain().getCodeSource();
      if (source == null || source.getLocation() == null) return null;
      File location = new File(source.getLocation().toURI());
      return location.isDirectory() ? location : location.getParentFile();
    } catch (Exception | LinkageError e) {
      return null;
    }
  }
}
