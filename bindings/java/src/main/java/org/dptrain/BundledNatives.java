package org.dptrain;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native libraries packed inside the versioned jar, under {@code natives/<platform>/} (for example
 * {@code natives/linux-x86_64/}), listed by that folder's {@code index.txt}: one line per file,
 * {@code <sha256> <size> <role> <name>}, in load order; role {@code load} is loaded with
 * {@code System.load}, role {@code module} is only extracted (libdptrain opens its modules from its own
 * directory).
 *
 * <p>The files are extracted once into a cache directory of their version and platform,
 * {@code ${XDG_CACHE_HOME:-~/.cache}/dptrain/<version>/<platform>} ({@code %LOCALAPPDATA%\dptrain\...} on
 * Windows), or {@code java.io.tmpdir/dptrain-<user>/...} when that cannot be written. A file is written to a
 * temporary name in that directory, checked against the index's size and SHA-256 and renamed over the final
 * name (an atomic rename), so JVMs starting at the same time never see a half-written library, and one that
 * already mapped an old file keeps it. The index is copied there last, the same way.
 *
 * <p>Reuse: when the cache's index equals the jar's and every file has its listed size, the files are loaded
 * as they are (hashing 3 MB costs a cold JVM about 0.3 s at every start); otherwise each file whose size or
 * SHA-256 differs from the index is extracted again.
 */
final class BundledNatives {
  /** The index of one platform folder. */
  static final String INDEX = "index.txt";

  private static final AtomicLong TEMPORARY_COUNTER = new AtomicLong();

  private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");

  private BundledNatives() {}

  /** One line of the index. */
  private static final class Entry {
    final String sha256;
    final long size;
    final boolean load;
    final String name;

    Entry(String sha256, long size, boolean load, String name) {
      this.sha256 = sha256;
      this.size = size;
      this.load = load;
      this.name = name;
    }
  }

  /** This JVM's platform folder name ({@code linux-x86_64}, {@code windows-x86_64}), or null if unknown. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String o = os.startsWith("linux") ? "linux" : os.startsWith("windows") ? "windows" : null;
    String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
        : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : null;
    return o == null || a == null ? null : o + "-" + a;
  }

  /**
   * Extracts (or reuses) this platform's natives and returns the files to {@code System.load}, in order.
   *
   * @param version the version naming the cache directory
   * @param tried where each cache directory that failed is described
   * @return the files, or null when the jar carries no natives for this platform
   * @throws IOException when no cache directory could take the files
   */
  static List<File> extract(String version, List<String> tried) throws IOException {
    String platform = platform();
    if (platform == null) {
      tried.add("natives in the jar (unknown platform " + System.getProperty("os.name") + " "
          + System.getProperty("os.arch") + ")");
      return null;
    }
    String folder = "/natives/" + platform + "/";
    byte[] index;
    try (InputStream in = BundledNatives.class.getResourceAsStream(folder + INDEX)) {
      if (in == null) {
        tried.add("natives in the jar (none for " + platform + ")");
        return null;
      }
      index = in.readAllBytes();
    }
    List<Entry> entries = parseIndex(folder, index);
    IOException last = null;
    for (Path dir : cacheDirectories(version, platform)) {
      try {
        if (!upToDate(dir, index, entries)) {
          for (Entry e : entries) extractOne(folder, e, dir);
          writeAtomically(dir, INDEX, index);
        }
        List<File> load = new ArrayList<>();
        for (Entry e : entries) {
          if (e.load) load.add(dir.resolve(e.name).toFile());
        }
        return load;
      } catch (IOException e) {
        tried.add("extracting " + folder + " to " + dir + " (" + e + ")");
        last = e;
      }
    }
    throw last != null ? last : new IOException("no cache directory for the natives");
  }

  private static List<Entry> parseIndex(String folder, byte[] index) throws IOException {
    List<Entry> entries = new ArrayList<>();
    try {
      for (String line : new String(index, StandardCharsets.UTF_8).split("\n")) {
        line = line.trim();
        if (line.isEmpty() || line.startsWith("#")) continue;
        String[] f = line.split("\\s+");
        if (f.length != 4 || !(f[2].equals("load") || f[2].equals("module")) || f[3].contains("/")
            || f[3].contains("\\") || f[3].equals(INDEX)) {
          throw new IOException(folder + INDEX + ": bad line '" + line + "'");
        }
        boolean load = f[2].equals("load");
        entries.add(new Entry(f[0].toLowerCase(Locale.ROOT), Long.parseLong(f[1]), load, f[3]));
      }
    } catch (NumberFormatException e) {
      throw new IOException(folder + INDEX + ": bad size (" + e.getMessage() + ")");
    }
    return entries;
  }

  /** Whether dir holds a copy of this index and every file it lists, each of its listed size. */
  private static boolean upToDate(Path dir, byte[] index, List<Entry> entries) throws IOException {
    Path copy = dir.resolve(INDEX);
    if (!Files.isRegularFile(copy) || !Arrays.equals(Files.readAllBytes(copy), index)) return false;
    for (Entry e : entries) {
      Path file = dir.resolve(e.name);
      if (!Files.isRegularFile(file) || Files.size(file) != e.size) return false;
    }
    return true;
  }

  /** Writes bytes to dir/name through a temporary file and an atomic rename. */
  private static void writeAtomically(Path dir, String name, byte[] bytes) throws IOException {
    Path tmp = createTemporary(dir, name);
    try {
      Files.write(tmp, bytes);
      rename(tmp, dir.resolve(name));
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /**
   * Creates a new empty file {@code .<name>.<pid>.<n>.tmp} in dir. Not {@code Files.createTempFile}: its
   * random names seed a {@code SecureRandom}, which on Windows enumerates the network adapters, costs a cold
   * JVM time, and under Wine crashes the JVM (a missing iphlpapi function). The process id and a counter make
   * the name unique among the JVMs sharing the directory; creation is exclusive all the same.
   */
  private static Path createTemporary(Path dir, String name) throws IOException {
    String stem = "." + name + "." + ProcessHandle.current().pid() + ".";
    for (int attempt = 0;; attempt++) {
      Path tmp = dir.resolve(stem + TEMPORARY_COUNTER.incrementAndGet() + ".tmp");
      try {
        return Files.createFile(tmp);
      } catch (FileAlreadyExistsException leftOver) {
        if (attempt >= 1000) throw leftOver; // a crashed JVM of the same pid left one: try the next number
      }
    }
  }

  private static void rename(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException notAtomic) {
      Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  /** The cache directories to try, in order: the user's cache, then the temporary directory. */
  private static List<Path> cacheDirectories(String version, String platform) {
    List<Path> dirs = new ArrayList<>();
    boolean windows = platform.startsWith("windows");
    String xdg = System.getenv("XDG_CACHE_HOME");
    String localAppData = System.getenv("LOCALAPPDATA");
    String home = System.getProperty("user.home");
    Path base = null;
    if (windows && localAppData != null && !localAppData.isEmpty()) {
      base = Paths.get(localAppData);
    } else if (!windows && xdg != null && Paths.get(xdg).isAbsolute()) {
      base = Paths.get(xdg); // the XDG spec: a relative value is invalid and ignored
    } else if (home != null && !home.isEmpty() && !home.equals("?")) {
      base = Paths.get(home, ".cache");
    }
    if (base != null) dirs.add(base.resolve("dptrain").resolve(version).resolve(platform));
    String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
    dirs.add(Paths.get(System.getProperty("java.io.tmpdir"), "dptrain-" + user, version, platform));
    return dirs;
  }

  /** Makes dir exist; in a shared temporary directory, only its owner may write to it. */
  private static void prepare(Path dir) throws IOException {
    Path tmp = Paths.get(System.getProperty("java.io.tmpdir")).toAbsolutePath();
    boolean shared = dir.toAbsolutePath().startsWith(tmp);
    if (shared && FileSystems.getDefault().supportedFileAttributeViews().contains("posix")) {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
      // A directory another user created in /tmp could be swapped under us between the check and the load.
      String owner = Files.getOwner(tmp.resolve(tmp.relativize(dir.toAbsolutePath()).getName(0))).getName();
      if (!owner.equals(System.getProperty("user.name"))) {
        throw new IOException(dir + " belongs to " + owner);
      }
    } else {
      Files.createDirectories(dir);
    }
  }

  /** The entry's file in dir: reused when it matches, else written anew. */
  private static Path extractOne(String folder, Entry e, Path dir) throws IOException {
    Path target = dir.resolve(e.name);
    if (matches(target, e)) return target;
    prepare(dir);
    Path tmp = createTemporary(dir, e.name);
    try {
      MessageDigest digest = sha256();
      long size = 0;
      try (InputStream in = BundledNatives.class.getResourceAsStream(folder + e.name);
           OutputStream out = Files.newOutputStream(tmp)) {
        if (in == null) throw new IOException(folder + e.name + " is listed in " + INDEX + " but missing");
        byte[] buffer = new byte[1 << 16];
        for (int n; (n = in.read(buffer)) > 0;) {
          out.write(buffer, 0, n);
          digest.update(buffer, 0, n);
          size += n;
        }
      }
      if (size != e.size || !hex(digest.digest()).equals(e.sha256)) {
        throw new IOException(folder + e.name + " in the jar does not match " + INDEX + " (damaged jar)");
      }
      try {
        rename(tmp, target);
      } catch (IOException moveFailed) {
        // Windows refuses to replace a DLL another process has loaded: fine if that one is right.
        if (!matches(target, e)) throw moveFailed;
      }
      return target;
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /** Whether file exists with the entry's size and SHA-256. */
  private static boolean matches(Path file, Entry e) throws IOException {
    if (!Files.isRegularFile(file) || Files.size(file) != e.size) return false;
    MessageDigest digest = sha256();
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buffer = new byte[1 << 16];
      for (int n; (n = in.read(buffer)) > 0;) digest.update(buffer, 0, n);
    }
    return hex(digest.digest()).equals(e.sha256);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e); // every JVM must have it
    }
  }

  private static String hex(byte[] bytes) {
    StringBuilder s = new StringBuilder(2 * bytes.length);
    for (byte b : bytes) s.append(String.format(Locale.ROOT, "%02x", b & 0xff));
    return s.toString();
  }
}
