// Command step_overhead is the Go side of the bindings' overhead benchmark. It repeats the protocol of
// the C baseline tests/bench/step_overhead.c exactly, through the Go binding:
//
//	context with 2 CPU devices; builtin "lenet"; default trainer options (seed 0); SGD lr 0.01;
//	batch 256 of synthetic data x[i] = ((i * 2654435761) mod 1000) / 1000, label[s] = s mod 10;
//	5 warm-up steps, then STEPS timed steps (default 40, first argument); prints median and mean ms per step.
//
// A second line gives the time spent outside the library's dpt_trainer_step (Go layer, cgo crossings and
// reading the result): the Go call's wall time minus the step's total_seconds as the library measured it.
//
// Usage: step_overhead_go [STEPS]
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"dptrain.org/dptrain"
)

const batch = 256

func main() {
	steps := 40
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n <= 0 {
			os.Exit(2)
		}
		steps = n
	}
	if err := run(steps); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(steps int) error {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	if err != nil {
		return err
	}
	defer ctx.Close()
	model, err := dptrain.BuiltinModel("lenet")
	if err != nil {
		return err
	}
	defer model.Close()
	trainer, err := dptrain.NewTrainer(ctx, model, &dptrain.TrainerOptions{
		Optimizer: dptrain.OptimizerOptions{LearningRate: 0.01},
	})
	if err != nil {
		return err
	}
	defer trainer.Close()
	in, err := model.InputSize()
	if err != nil {
		return err
	}
	x := make([]float32, batch*in)
	y := make([]int32, batch)
	for i := range x {
		// size_t arithmetic in C: i * 2654435761u is computed in 64 bits.
		x[i] = float32(uint64(i)*2654435761%1000) / 1000
	}
	for s := range y {
		y[s] = int32(s % 10)
	}
	for i := 0; i < 5; i++ {
		if _, err := trainer.Step(x, y); err != nil {
			return err
		}
	}
	ms := make([]float64, steps)
	library := make([]float64, steps) // the step as the library timed it (total_seconds)
	binding := make([]float64, steps) // wall time of the Go call minus the library's own timing of it
	total := 0.0
	for i := 0; i < steps; i++ {
		t0 := time.Now()
		r, err := trainer.Step(x, y)
		if err != nil {
			return err
		}
		ms[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
		library[i] = r.TotalSeconds * 1e3
		binding[i] = ms[i] - library[i]
		total += ms[i]
	}
	sort.Float64s(ms)
	sort.Float64s(library)
	sort.Float64s(binding)
	fmt.Printf("go: %d steps, median %.3f ms, mean %.3f ms per step\n", steps, ms[steps/2], total/float64(steps))
	fmt.Printf("go: inside the library (total_seconds) median %.3f ms; outside it (Go layer, cgo) median %.1f us per step\n",
		library[steps/2], binding[steps/2]*1e3)
	return nil
}
