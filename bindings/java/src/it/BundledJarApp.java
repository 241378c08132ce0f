import java.util.Locale;
import org.dptrain.*;

/**
 * A user's program with only dptrain-VERSION.jar on its classpath (check_bundled_jar.sh compiles and runs
 * it in an empty directory). Prints the jar's manifest version and the native library's version; then
 * with --version nothing more; with --modules how the CUDA module fared (libdptrain looks for it in its own
 * directory, the cache the jar's natives went to); without arguments it trains LeNet like `dptrain train
 * --model lenet --devices cpu:2 --epochs 1 --train-limit 1024 --test-limit 256 --seed 3` and prints that
 * run's param_checksum.
 */
public final class BundledJarApp {
  public static void main(String[] args) {
    Package p = Dptrain.class.getPackage();
    System.out.println("implementation_title " + p.getImplementationTitle());
    System.out.println("implementation_version " + p.getImplementationVersion());
    System.out.println("library_version " + Dptrain.versionString()); // the first native call: loads
    if (args.length == 1 && args[0].equals("--version")) return;
    if (args.length == 1 && args[0].equals("--modules")) {
      // CUDA devices only: the module is opened (no GPU, driver or CUDA library is not an error).
      try (Context context = new Context(0, 0, DeviceSelection.DEVICES_CUDA)) {
        BackendInfo cuda = context.backendInfo(DeviceKind.DEVICE_CUDA);
        System.out.println("cuda_loaded " + cuda.getLoaded());
        System.out.println("cuda_module_path " + cuda.getModulePath());
        System.out.println("cuda_reason " + cuda.getReason());
      }
      return;
    }

    final long batch = 256;
    try (Context context = new Context(2, 0);
         Dataset train = first(DatasetPart.DATASET_TRAIN, 1024);
         Dataset test = first(DatasetPart.DATASET_TEST, 256);
         Model model = Model.builtin("lenet")) {
      // The CLI's defaults for lenet.
      TrainerOptions options = new TrainerOptions();
      options.setSplit(SplitPolicy.SPLIT_EVEN);
      options.setAllreduce(AllReduceAlgorithm.ALLREDUCE_RING);
      options.setSeed(3);
      options.setInit(InitScheme.INIT_NORMAL);
      options.setInitStd(0.01f);
      OptimizerOptions sgd = new OptimizerOptions();
      sgd.setKind(OptimizerKind.OPTIMIZER_SGD);
      sgd.setLearningRate(0.2f);
      sgd.setTotalSteps((train.sampleCount() + batch - 1) / batch);
      try (Trainer trainer = new Trainer(context, model, options, sgd)) {
        FitOptions fit = new FitOptions();
        fit.setEpochs(1);
        fit.setBatchSize(batch);
        FitResult result = trainer.fit(train, test, fit, progress -> false);
        System.out.printf(Locale.ROOT, "test accuracy %.4f%n", result.getTestAccuracy());
        System.out.println("param_checksum " + trainer.parameterChecksum());
      }
    }
  }

  private static Dataset first(DatasetPart part, long count) {
    try (Dataset all = Dataset.loadFashionMnist(null, part)) {
      return all.subset(0, count);
    }
  }
}
