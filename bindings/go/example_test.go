package dptrain_test

import (
	"errors"
	"fmt"
	"log"

	"dptrain.org/dptrain"
)

// The README's example (compiled by go test, not run: it needs Fashion-MNIST and a few seconds).
func ExampleTrainer_Fit() {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	train, err := dptrain.LoadFashionMNIST("", dptrain.DatasetTrain) // "" = the default directory
	if err != nil {
		log.Fatal(err)
	}
	defer train.Close()
	model, _ := dptrain.BuiltinModel("lenet")
	defer model.Close()
	trainer, err := dptrain.NewTrainer(ctx, model, &dptrain.TrainerOptions{Seed: 1, Init: dptrain.InitNormal,
		Optimizer: dptrain.OptimizerOptions{LearningRate: 0.2}})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	_, err = trainer.Fit(train, nil, &dptrain.FitOptions{Epochs: 2, BatchSize: 256,
		Progress: func(p dptrain.Progress) bool { fmt.Println(p.Epoch, p.Loss); return true }})
	if err != nil {
		log.Fatal(err)
	}
}

// Errors carry the status, its category and the library's message.
func ExampleError() {
	_, err := dptrain.BuiltinModel("resnet")
	var e *dptrain.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status == dptrain.StatusInvalidArgument, errors.Is(err, dptrain.ErrInvalidArgument))
	}
	// Output: true true
}
