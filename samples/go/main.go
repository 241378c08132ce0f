// Command train trains LeNet on Fashion-MNIST data-parallel across CPU devices through the Go binding,
// with the defaults of the C CLI (`dptrain train --model lenet`): batch 256, SGD with lr 0.2, weights
// initialised N(0, 0.01^2), even split, ring all-reduce. With the same flags it ends with the same
// param_checksum as the CLI: the parameters are bitwise identical.
//
//	train -epochs 1 -train-limit 2000 -test-limit 500 -seed 3
//	dptrain train --model lenet --devices cpu:2 --epochs 1 --train-limit 2000 --test-limit 500 --seed 3
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"dptrain.org/dptrain"
)

type config struct {
	devices, epochs, batch, trainLimit, testLimit int
	seed                                          uint64
	lr                                            float64
	data                                          string
}

func main() {
	var c config
	flag.IntVar(&c.devices, "devices", 2, "number of CPU devices")
	flag.IntVar(&c.epochs, "epochs", 10, "epochs")
	flag.IntVar(&c.batch, "batch", 256, "global batch size")
	flag.IntVar(&c.trainLimit, "train-limit", 0, "train on the first N training samples (0 = all)")
	flag.IntVar(&c.testLimit, "test-limit", 0, "evaluate on the first N test samples (0 = all)")
	flag.Uint64Var(&c.seed, "seed", 0, "seed of initialisation and shuffling")
	flag.Float64Var(&c.lr, "lr", 0.2, "SGD learning rate")
	flag.StringVar(&c.data, "data", "", "Fashion-MNIST directory (default: $DPTRAIN_DATA_DIR or "+
		dptrain.DefaultFashionMNISTDir+")")
	flag.Parse()
	if flag.NArg() != 0 || c.devices < 1 || c.epochs < 1 || c.batch < 1 || c.trainLimit < 0 || c.testLimit < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		var e *dptrain.Error
		if errors.As(err, &e) && e.Category == dptrain.CategoryIO {
			fmt.Fprintln(os.Stderr, "train: is Fashion-MNIST installed? (apt-get install dataset-fashion-mnist, or -data DIR)")
		}
		os.Exit(1)
	}
}

// load reads one part of Fashion-MNIST, keeping its first limit samples when 0 < limit < size.
func load(dir string, part dptrain.DatasetPart, limit int) (*dptrain.Dataset, error) {
	full, err := dptrain.LoadFashionMNIST(dir, part)
	if err != nil {
		return nil, err
	}
	n, err := full.Len()
	if err != nil || limit == 0 || limit >= n {
		return full, err
	}
	defer full.Close()
	return full.Subset(0, limit)
}

func run(c config) error {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: c.devices})
	if err != nil {
		return err
	}
	defer ctx.Close()
	train, err := load(c.data, dptrain.DatasetTrain, c.trainLimit)
	if err != nil {
		return err
	}
	defer train.Close()
	test, err := load(c.data, dptrain.DatasetTest, c.testLimit)
	if err != nil {
		return err
	}
	defer test.Close()

	model, err := dptrain.BuiltinModel("lenet")
	if err != nil {
		return err
	}
	defer model.Close()
	trainer, err := dptrain.NewTrainer(ctx, model, &dptrain.TrainerOptions{
		Split:     dptrain.SplitEven,
		AllReduce: dptrain.AllReduceRing,
		Seed:      c.seed,
		Init:      dptrain.InitNormal,
		InitStd:   0.01,
		Optimizer: dptrain.OptimizerOptions{Kind: dptrain.SGD, LearningRate: float32(c.lr)},
	})
	if err != nil {
		return err
	}
	defer trainer.Close()

	params, err := trainer.ParameterCount()
	if err != nil {
		return err
	}
	trainN, _ := train.Len()
	testN, _ := test.Len()
	fmt.Printf("dptrain %s (Go): lenet, %d parameters, %d CPU devices\n", dptrain.Version(), params, c.devices)
	fmt.Printf("data: %d train, %d test samples; batch %d, lr %g, sgd, split even, allreduce ring\n",
		trainN, testN, c.batch, c.lr)

	result, err := trainer.Fit(train, test, &dptrain.FitOptions{
		Epochs:    c.epochs,
		BatchSize: c.batch,
		Progress: func(p dptrain.Progress) bool {
			if p.Kind == dptrain.ProgressEpoch {
				fmt.Printf("epoch %d/%d  train loss %.4f  train acc %.4f  test loss %.4f  test acc %.4f  %.2f s  %.0f img/s\n",
					p.Epoch, p.Epochs, p.Loss, p.Accuracy, p.TestLoss, p.TestAccuracy, p.EpochSeconds, p.SamplesPerSecond)
			}
			return true
		},
	})
	if err != nil {
		return err
	}
	sum, err := trainer.Checksum()
	if err != nil {
		return err
	}
	fmt.Printf("test accuracy %.4f after %d epochs\n", result.TestAccuracy, result.EpochsCompleted)
	fmt.Printf("param_checksum %s\n", sum)
	return nil
}
