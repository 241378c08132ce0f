package org.dptrain.samples;

import java.util.Locale;
import org.dptrain.*;

/**
 * Trains LeNet on Fashion-MNIST, data-parallel across CPU devices, with the defaults of the C CLI
 * (`dptrain train --model lenet`): batch 256, SGD lr 0.2, weights ~ N(0, 0.01^2), even split, ring
 * all-reduce. Prints the accuracy after every epoch and finally `param_checksum <16 hex>`, which equals
 * the CLI's for the same flags (bitwise identical parameters).
 *
 * <pre>
 * java -jar dptrain-sample.jar [--epochs N] [--train-limit N] [--test-limit N] [--seed S]
 *                              [--devices K] [--data DIR]
 * </pre>
 */
public final class TrainFashionMnist {
  private static final String USAGE = "usage: TrainFashionMnist [--epochs N] [--train-limit N] [--test-limit N]"
      + " [--seed S] [--devices K] [--data DIR]";

  private long epochs = 10;
  private long trainLimit;
  private long testLimit;
  private long seed;
  private long devices = 2;
  private String dataDir; // null: $DPTRAIN_DATA_DIR or /usr/share/datasets/fashion-mnist

  public static void main(String[] args) {
    TrainFashionMnist sample = new TrainFashionMnist();
    try {
      sample.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("TrainFashionMnist: " + e.getMessage());
      System.err.println(USAGE);
      System.exit(2);
    }
    try {
      sample.run();
    } catch (DptrainException e) {
      System.err.println("TrainFashionMnist: " + e.getMessage());
      System.exit(1);
    }
  }

  private void parse(String[] args) {
    for (int i = 0; i < args.length; ++i) {
      String option = args[i];
      if (option.equals("--help") || option.equals("-h")) {
        System.out.println(USAGE);
        System.exit(0);
      }
      if (i + 1 >= args.length) throw new IllegalArgumentException(option + ": missing value");
      String value = args[++i];
      switch (option) {
        case "--epochs": epochs = positive(option, value); break;
        case "--train-limit": trainLimit = positive(option, value); break;
        case "--test-limit": testLimit = positive(option, value); break;
        case "--seed": seed = Long.parseUnsignedLong(value); break;
        case "--devices": devices = positive(option, value); break;
        case "--data": dataDir = value; break;
        default: throw new IllegalArgumentException("unknown option " + option);
      }
    }
  }

  private static long positive(String option, String value) {
    try {
      long v = Long.parseLong(value);
      if (v > 0) return v;
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(option + ": expected a positive integer, got '" + value + "'");
  }

  /** The first {@code limit} samples of one part (all of them when limit is 0 or too large). */
  private Dataset load(DatasetPart part, long limit) {
    Dataset full = Dataset.loadFashionMnist(dataDir, part);
    if (limit == 0 || limit >= full.sampleCount()) return full;
    try (Dataset all = full) {
      return all.subset(0, limit);
    }
  }

  private void run() {
    final long batch = 256;
    try (Context context = new Context(devices, 0);
         Dataset train = load(DatasetPart.DATASET_TRAIN, trainLimit);
         Dataset test = load(DatasetPart.DATASET_TEST, testLimit);
         Model model = Model.builtin("lenet")) {
      TrainerOptions options = new TrainerOptions();
      options.setSplit(SplitPolicy.SPLIT_EVEN);
      options.setAllreduce(AllReduceAlgorithm.ALLREDUCE_RING);
      options.setSeed(seed);
      options.setInit(InitScheme.INIT_NORMAL);
      options.setInitStd(0.01f);
      OptimizerOptions sgd = new OptimizerOptions();
      sgd.setKind(OptimizerKind.OPTIMIZER_SGD);
      sgd.setLearningRate(0.2f);
      // Like the CLI: the planned optimizer steps of the run (used by schedules; constant here).
      long batches = (train.sampleCount() + batch - 1) / batch;
      sgd.setTotalSteps(epochs * batches);

      try (Trainer trainer = new Trainer(context, model, options, sgd)) {
        System.out.printf(Locale.ROOT, "dptrain %s: lenet, %d parameters, %d devices%n", Dptrain.versionString(),
            trainer.parameterCount(), trainer.deviceCount());
        System.out.printf(Locale.ROOT, "data: %d train, %d test samples; batch %d, lr 0.2, sgd, split even, "
            + "allreduce ring%n", train.sampleCount(), test.sampleCount(), batch);
        FitOptions fit = new FitOptions();
        fit.setEpochs(epochs);
        fit.setBatchSize(batch);
        FitResult result = trainer.fit(train, test, fit, progress -> {
          if (progress.getKind() == ProgressKind.PROGRESS_EPOCH) {
            System.out.printf(Locale.ROOT,
                "epoch %d/%d: train loss %.4f acc %.4f, test loss %.4f acc %.4f, %.0f images/s%n",
                progress.getEpoch(), progress.getEpochs(), progress.getLoss(), progress.getAccuracy(),
                progress.getTestLoss(), progress.getTestAccuracy(), progress.getSamplesPerSecond());
          }
          return false;
        });
        System.out.printf(Locale.ROOT, "test accuracy %.4f after %d epochs (%.1f s training)%n",
            result.getTestAccuracy(), result.getEpochsCompleted(), result.getTrainSeconds());
        System.out.println("param_checksum " + trainer.parameterChecksum());
      }
    }
  }
}
