package dptrain_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"dptrain.org/dptrain"
)

func TestCheckpointResumesBitwise(t *testing.T) {
	ctx := newContext(t, 2)
	train := tinyDataset(t, 96, 1)
	opts := &dptrain.TrainerOptions{Seed: 9, Optimizer: dptrain.OptimizerOptions{LearningRate: 0.3, Momentum: 0.9}}
	fit := &dptrain.FitOptions{Epochs: 2, BatchSize: 16}
	path := filepath.Join(t.TempDir(), "run.ckpt")

	// Reference: 4 epochs in a row, checkpointing from the epoch report of epoch 2.
	ref := newTrainer(t, ctx, tinyModel(t), opts)
	var saveErr error
	_, err := ref.Fit(train, nil, &dptrain.FitOptions{Epochs: 4, BatchSize: 16, Progress: func(p dptrain.Progress) bool {
		if p.Kind == dptrain.ProgressEpoch && p.Epoch == 2 {
			saveErr = ref.SaveCheckpoint(path)
		}
		return true
	}})
	must(t, err)
	must(t, saveErr)
	want, err := ref.Checksum()
	must(t, err)

	// Resume on one device from the checkpoint: the same final parameters, bit for bit.
	one := newContext(t, 1)
	resumed := newTrainer(t, one, tinyModel(t), &dptrain.TrainerOptions{Optimizer: opts.Optimizer})
	must(t, resumed.LoadCheckpoint(path))
	epochs, err := resumed.EpochCount()
	must(t, err)
	steps, err := resumed.StepCount()
	must(t, err)
	if epochs != 2 || steps != 12 {
		t.Fatalf("restored counters: %d epochs, %d steps; want 2, 12", epochs, steps)
	}
	_, err = resumed.Fit(train, nil, fit)
	must(t, err)
	got, err := resumed.Checksum()
	must(t, err)
	if got != want {
		t.Fatalf("resumed run ends with %s, uninterrupted run with %s", got, want)
	}
}

func TestCheckpointErrors(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t), nil)
	dir := t.TempDir()
	wantError(t, tr.LoadCheckpoint(filepath.Join(dir, "missing")), dptrain.StatusIO)
	corrupt := filepath.Join(dir, "corrupt")
	must(t, os.WriteFile(corrupt, []byte("definitely not a checkpoint"), 0o600))
	wantError(t, tr.LoadCheckpoint(corrupt), dptrain.StatusFormat)
	wantError(t, tr.SaveCheckpoint(filepath.Join(dir, "no-such-dir", "x")), dptrain.StatusIO)
	wantError(t, tr.SaveCheckpoint(""), dptrain.StatusInvalidArgument, "empty path")

	// Another model's checkpoint is refused and leaves the trainer unchanged.
	other, err := dptrain.BuiltinModel("mlp")
	must(t, err)
	defer other.Close()
	mlp := newTrainer(t, newContext(t, 2), other, nil)
	path := filepath.Join(dir, "mlp.ckpt")
	must(t, mlp.SaveCheckpoint(path))
	before, err := tr.Checksum()
	must(t, err)
	wantError(t, tr.LoadCheckpoint(path), dptrain.StatusInvalidArgument)
	after, err := tr.Checksum()
	must(t, err)
	if before != after {
		t.Fatal("a refused checkpoint changed the trainer")
	}
	must(t, tr.Close())
	wantClosed(t, tr.SaveCheckpoint(path))
}

func TestNonFiniteInputs(t *testing.T) {
	ctx := newContext(t, 2)
	x, y := tinyBatch(8, 1)
	bad := append([]float32(nil), x...)
	bad[5] = float32(math.NaN())

	skip := newTrainer(t, ctx, tinyModel(t), nil) // NonFiniteSkip by default
	before, err := skip.Checksum()
	must(t, err)
	r, err := skip.Step(bad, y)
	must(t, err)
	after, err := skip.Checksum()
	must(t, err)
	if !r.SkippedNonFinite || r.NonFiniteSteps != 1 || r.Applied || before != after {
		t.Fatalf("skip policy: %+v, checksum %s -> %s", r, before, after)
	}
	r, err = skip.Step(x, y)
	must(t, err)
	if r.SkippedNonFinite || !r.Applied || r.NonFiniteSteps != 1 {
		t.Fatalf("finite step after a skip: %+v", r)
	}

	strict := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{NonFinite: dptrain.NonFiniteError})
	_, err = strict.Step(bad, y)
	wantError(t, err, dptrain.StatusNonFinite)
	if !errors.Is(err, dptrain.ErrInvalidArgument) {
		t.Fatalf("non-finite is in the invalid-argument category: %v", err)
	}
	_, err = strict.Step(x, y) // the trainer stays usable
	must(t, err)
}

func TestTimeoutOption(t *testing.T) {
	ctx := newContext(t, 2)
	x, y := tinyBatch(8, 1)
	for _, d := range []time.Duration{-1, 0, 30 * time.Second} {
		tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Timeout: d})
		_, err := tr.Step(x, y)
		must(t, err)
	}
}
