package org.dptrain.tests;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectPackage;

import java.io.PrintStream;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs the JUnit 5 tests of this package through the JUnit Platform launcher, prints one line per test and
 * ends with the plain line {@code N passed, N failed} that the CI reader counts. Exit status 1 when a test
 * failed (or none ran).
 */
public final class RunTests {
  private RunTests() {}

  public static void main(String[] args) {
    PrintStream out = System.out;
    AtomicLong passed = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    AtomicLong skipped = new AtomicLong();
    TestExecutionListener listener = new TestExecutionListener() {
      private long start;

      @Override
      public void executionStarted(TestIdentifier id) {
        if (id.isTest()) start = System.nanoTime();
      }

      @Override
      public void executionSkipped(TestIdentifier id, String reason) {
        if (!id.isTest()) return;
        skipped.incrementAndGet();
        out.printf("SKIP  %s (%s)%n", name(id), reason);
      }

      @Override
      public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (!id.isTest()) {
          if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
            failed.incrementAndGet();
            out.printf("FAIL  %s: %s%n", id.getDisplayName(), result.getThrowable().map(String::valueOf).orElse(""));
          }
          return;
        }
        double ms = (System.nanoTime() - start) / 1e6;
        if (result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) {
          passed.incrementAndGet();
          out.printf("PASS  %s (%.0f ms)%n", name(id), ms);
        } else {
          failed.incrementAndGet();
          out.printf("FAIL  %s (%.0f ms)%n", name(id), ms);
          result.getThrowable().ifPresent(t -> t.printStackTrace(out));
        }
      }
    };
    LauncherDiscoveryRequest request =
        LauncherDiscoveryRequestBuilder.request().selectors(selectPackage("org.dptrain")).build();
    Launcher launcher = LauncherFactory.create();
    launcher.execute(request, listener);
    out.printf("%d passed, %d failed%n", passed.get(), failed.get());
    out.flush();
    System.exit(failed.get() > 0 || passed.get() == 0 ? 1 : 0);
  }

  private static String name(TestIdentifier id) {
    String uid = id.getUniqueId();
    int cls = uid.indexOf("[class:");
    String className = cls < 0 ? "" : uid.substring(cls + 7, uid.indexOf(']', cls));
    return className.substring(className.lastIndexOf('.') + 1) + "." + id.getDisplayName();
  }
}
