package dptrain_test

import (
	"fmt"
	"testing"

	"dptrain.org/dptrain"
)

// TrainerOptions.PipelineStages, MicroBatches, PipelineSchedule, PipelineCuts and PipelineScope (trainer.h).
// (PipelineScopeWorld across MPI processes: tests/mpi/test_mpi_pipeline_world.c.)

const (
	pipeStages = 2
	pipeMicro  = 4  // micro-batches per step
	pipeBatch  = 16 // samples per step: four micro-batches of 4
	pipeSteps  = 2
	// The parameters of pipeModel's layers.
	pipeFC1  = tinyIn*24 + 24
	pipeFC2  = 24*24 + 24
	pipeHead = 24*tinyClasses + tinyClasses
)

// pipeModel is 1x4x4 -> dense 24 "fc1" -> relu "relu1" -> dense 24 "fc2" -> relu "relu2" -> dense 3 "head"
// (1083 parameters): four places to cut (before relu1, fc2, relu2 and head).
func pipeModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(tinyC, tinyH, tinyW)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	x, err := m.Dense(dptrain.InputTensor, 24, true, "fc1")
	must(t, err)
	x, err = m.Activation(x, dptrain.ReLU, "relu1")
	must(t, err)
	x, err = m.Dense(x, 24, true, "fc2")
	must(t, err)
	x, err = m.Activation(x, dptrain.ReLU, "relu2")
	must(t, err)
	_, err = m.Dense(x, tinyClasses, true, "head")
	must(t, err)
	return m
}

// pipeOptions: seed 7, SGD with momentum and weight decay (no clip norm: with one, a pipeline's gradient norm
// may differ in its last bits).
func pipeOptions() dptrain.TrainerOptions {
	return dptrain.TrainerOptions{Seed: 7, Optimizer: dptrain.OptimizerOptions{
		Kind: dptrain.SGD, LearningRate: 0.1, Momentum: 0.9, WeightDecay: 0.01}}
}

// pipeRun is what one run leaves: the checksum, the parameters and every device's memory.
type pipeRun struct {
	checksum string
	params   []float32
	memory   []dptrain.ReplicaMemory
}

// pipeTrain trains m with opts on ctx for pipeSteps batches of pipeBatch samples, each stepped as slices
// consecutive slices of equal size.
func pipeTrain(t *testing.T, ctx *dptrain.Context, m *dptrain.Model, opts dptrain.TrainerOptions,
	slices int) (run pipeRun) {
	t.Helper()
	tr := newTrainer(t, ctx, m, &opts)
	defer tr.Close()
	start, err := tr.Parameters()
	must(t, err)
	per := pipeBatch / slices
	for s := 0; s < pipeSteps; s++ {
		x, y := tinyBatch(pipeBatch, uint32(s+1))
		for i := 0; i < slices; i++ {
			r, err := tr.Step(x[i*per*tinyIn:(i+1)*per*tinyIn], y[i*per:(i+1)*per])
			must(t, err)
			if r.Samples != uint64(per) {
				t.Fatalf("step %d, slice %d: %d samples, want %d", s+1, i, r.Samples, per)
			}
			if last := i == slices-1; r.Applied != (last || opts.AccumulationSteps <= 1) {
				t.Fatalf("step %d, slice %d: Applied %v", s+1, i, r.Applied)
			}
		}
	}
	run.checksum, err = tr.Checksum()
	must(t, err)
	run.params, err = tr.Parameters()
	must(t, err)
	if bitwiseEqual(start, run.params) {
		t.Fatalf("%d steps left the parameters unchanged", pipeSteps)
	}
	devices, err := tr.DeviceCount()
	must(t, err)
	for d := 0; d < devices; d++ {
		mem, err := tr.ReplicaMemory(d)
		must(t, err)
		run.memory = append(run.memory, mem)
	}
	return run
}

// TestPipeline: the zero TrainerOptions has no pipeline. The MLP cut into 2 stages on 2 CPU devices, 4
// micro-batches per step, trains to the very bits (checksum and parameters) of one device with
// AccumulationSteps 4 stepped on the four consecutive 4-sample slices of each 16-sample batch: with 1F1B (the
// zero value) and GPipe, with the balanced cut and with cuts named "fc2" and "head". Stepping the slices without
// accumulation (an update each) gives other parameters: the comparison sees a difference. Each stage holds the
// parameters of its layers (4 bytes each: fc1 before "fc2", fc1 and fc2 before "head"), and with GPipe, which
// keeps every micro-batch's activations, each stage holds more activations than with 1F1B.
func TestPipeline(t *testing.T) {
	var zero dptrain.TrainerOptions
	if zero.PipelineStages != 0 || zero.MicroBatches != 0 || zero.PipelineSchedule != dptrain.Pipeline1F1B ||
		zero.PipelineCuts != "" || zero.PipelineScope != dptrain.PipelineScopeProcess ||
		zero.PipelineBalance != dptrain.PipelineBalanceWork || zero.PipelineBalanceBatch != 0 ||
		zero.PipelineCopies != 0 {
		t.Fatalf("the zero TrainerOptions pipelines: %+v", zero)
	}
	m := pipeModel(t)
	one, two := newContext(t, 1), newContext(t, pipeStages)

	accumulate := pipeOptions()
	accumulate.AccumulationSteps = pipeMicro
	want := pipeTrain(t, one, m, accumulate, pipeMicro)
	if updates := pipeTrain(t, one, m, pipeOptions(), pipeMicro); updates.checksum == want.checksum {
		t.Fatalf("an update per slice gives the checksum of one update per batch (%s)", want.checksum)
	}

	runs := map[string]pipeRun{}
	for _, c := range []struct {
		schedule dptrain.PipelineSchedule
		cuts     string
		first    int // the first stage's parameters (0: the balanced cut's, not checked)
	}{
		{dptrain.Pipeline1F1B, "", 0}, {dptrain.PipelineGPipe, "", 0},
		{dptrain.Pipeline1F1B, "fc2", pipeFC1}, {dptrain.PipelineGPipe, "head", pipeFC1 + pipeFC2},
	} {
		name := fmt.Sprintf("schedule=%d,cuts=%q", c.schedule, c.cuts)
		t.Run(name, func(t *testing.T) {
			opts := pipeOptions()
			opts.PipelineStages = pipeStages
			opts.MicroBatches = pipeMicro
			opts.PipelineSchedule = c.schedule
			opts.PipelineCuts = c.cuts
			got := pipeTrain(t, two, m, opts, 1)
			if got.checksum != want.checksum || !bitwiseEqual(got.params, want.params) {
				t.Fatalf("checksum %s, want %s (one device accumulating the same micro-batches)", got.checksum,
					want.checksum)
			}
			if len(got.memory) != pipeStages {
				t.Fatalf("%d devices, want %d", len(got.memory), pipeStages)
			}
			first, second := got.memory[0].Parameters, got.memory[1].Parameters
			if first+second != 4*(pipeFC1+pipeFC2+pipeHead) || (c.first != 0 && first != 4*uint64(c.first)) {
				t.Fatalf("the stages hold %d and %d bytes of parameters (the first stage %d parameters)", first,
					second, c.first)
			}
			runs[name] = got
		})
	}
	// PipelineScopeWorld without a communicator is the process scope: the same bits.
	world := pipeOptions()
	world.PipelineStages = pipeStages
	world.MicroBatches = pipeMicro
	world.PipelineScope = dptrain.PipelineScopeWorld
	if got := pipeTrain(t, two, m, world, 1); got.checksum != want.checksum {
		t.Fatalf("PipelineScopeWorld without a communicator: checksum %s, want %s", got.checksum, want.checksum)
	}
	// Copies of the pipeline divide the processes: no effect without a communicator.
	world.PipelineCopies = 2
	if got := pipeTrain(t, two, m, world, 1); got.checksum != want.checksum {
		t.Fatalf("PipelineCopies without a communicator: checksum %s, want %s", got.checksum, want.checksum)
	}
	oneFOneB, gpipe := runs[`schedule=0,cuts=""`], runs[`schedule=1,cuts=""`]
	for s := 0; s < pipeStages && len(oneFOneB.memory) == pipeStages && len(gpipe.memory) == pipeStages; s++ {
		if gpipe.memory[s].Activations <= oneFOneB.memory[s].Activations {
			t.Errorf("stage %d: GPipe's activations take %d bytes, 1F1B's %d", s, gpipe.memory[s].Activations,
				oneFOneB.memory[s].Activations)
		}
	}
}

// TestPipelineBalance: the cuts a balance chose come back from Trainer.PipelineCuts in the form
// TrainerOptions.PipelineCuts takes: by parameters the MLP's two stages begin at "relu1" (408 | 675
// parameters), by the estimated work (the zero value) at "fc2" (432 | 699 operations per sample); by measured
// time at one of its four places, which, named, gives a trainer the same cuts. No pipeline: "". Named cuts with
// another balance and a balance outside the enum are StatusInvalidArgument, a negative batch StatusOutOfRange.
func TestPipelineBalance(t *testing.T) {
	m := pipeModel(t)
	two := newContext(t, pipeStages)
	cuts := func(change func(o *dptrain.TrainerOptions)) (string, error) {
		o := pipeOptions()
		change(&o)
		tr, err := dptrain.NewTrainer(two, m, &o)
		if err != nil {
			return "", err
		}
		defer tr.Close()
		return tr.PipelineCuts()
	}
	for _, c := range []struct {
		balance dptrain.PipelineBalance
		want    string
	}{{dptrain.PipelineBalanceParameters, "relu1"}, {dptrain.PipelineBalanceWork, "fc2"}} {
		got, err := cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineBalance = c.balance })
		if err != nil || got != c.want {
			t.Fatalf("balance %d: cuts %q (%v), want %q", c.balance, got, err, c.want)
		}
	}
	measured, err := cuts(func(o *dptrain.TrainerOptions) {
		o.PipelineStages = pipeStages
		o.PipelineBalance = dptrain.PipelineBalanceTime
		o.PipelineBalanceBatch = pipeBatch
	})
	if err != nil || (measured != "relu1" && measured != "fc2" && measured != "relu2" && measured != "head") {
		t.Fatalf("by measured time: cuts %q (%v)", measured, err)
	}
	if named, err := cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineCuts = measured }); err != nil || named != measured {
		t.Fatalf("the measured cut, named: %q (%v), want %q", named, err, measured)
	}
	if none, err := cuts(func(o *dptrain.TrainerOptions) {}); err != nil || none != "" {
		t.Fatalf("no pipeline: cuts %q (%v)", none, err)
	}
	_, err = cuts(func(o *dptrain.TrainerOptions) {
		o.PipelineStages = pipeStages
		o.PipelineCuts = "fc2"
		o.PipelineBalance = dptrain.PipelineBalanceTime
	})
	wantError(t, err, dptrain.StatusInvalidArgument, "one or the other")
	_, err = cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineBalance = 3 })
	wantError(t, err, dptrain.StatusInvalidArgument, "pipeline balance")
	_, err = cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineBalanceBatch = -1 })
	wantError(t, err, dptrain.StatusOutOfRange, "NewTrainer", "PipelineBalanceBatch is negative (-1)")
	// Copies of the pipeline in the process scope, where every process is a copy; negative copies.
	_, err = cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineCopies = 2 })
	wantError(t, err, dptrain.StatusInvalidArgument, "process scope")
	_, err = cuts(func(o *dptrain.TrainerOptions) { o.PipelineStages = pipeStages; o.PipelineCopies = -1 })
	wantError(t, err, dptrain.StatusOutOfRange, "NewTrainer", "PipelineCopies is negative (-1)")
}

// TestPipelineRefusals: 3 stages on 2 devices is StatusUnsupported, 1025 micro-batches StatusOutOfRange, a cut
// at a node that does not exist and a schedule or a scope outside the enum StatusInvalidArgument; the Go layer refuses
// negative stage and micro-batch counts with StatusOutOfRange.
func TestPipelineRefusals(t *testing.T) {
	m := pipeModel(t)
	two := newContext(t, 2)
	pipeline := func(change func(o *dptrain.TrainerOptions)) error {
		o := pipeOptions()
		o.PipelineStages = pipeStages
		change(&o)
		tr, err := dptrain.NewTrainer(two, m, &o)
		if err == nil {
			tr.Close()
		}
		return err
	}
	err := pipeline(func(o *dptrain.TrainerOptions) { o.PipelineStages = 3 })
	wantError(t, err, dptrain.StatusUnsupported, "dpt_trainer_create", "3 stages", "devices per stage")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.MicroBatches = 1025 })
	wantError(t, err, dptrain.StatusOutOfRange, "dpt_trainer_create", "1024", "1025")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.PipelineCuts = "nope" })
	wantError(t, err, dptrain.StatusInvalidArgument, "dpt_trainer_create", "nope")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.PipelineSchedule = 2 })
	wantError(t, err, dptrain.StatusInvalidArgument, "pipeline schedule")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.PipelineScope = 2 })
	wantError(t, err, dptrain.StatusInvalidArgument, "pipeline scope")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.PipelineStages = -1 })
	wantError(t, err, dptrain.StatusOutOfRange, "NewTrainer", "PipelineStages is negative (-1)")
	err = pipeline(func(o *dptrain.TrainerOptions) { o.MicroBatches = -1 })
	wantError(t, err, dptrain.StatusOutOfRange, "NewTrainer", "MicroBatches is negative (-1)")
	// The limits themselves are taken.
	must(t, pipeline(func(o *dptrain.TrainerOptions) { o.MicroBatches = 1024 }))
	must(t, pipeline(func(o *dptrain.TrainerOptions) { o.PipelineCuts = "relu2" }))
}
