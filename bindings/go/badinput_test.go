package dptrain_test

import (
	"math"
	"testing"

	"dptrain.org/dptrain"
)

func TestNilSlices(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t), nil)
	x, y := tinyBatch(4, 1)
	_, err := tr.Step(nil, y)
	wantError(t, err, dptrain.StatusNullPointer, "Trainer.Step", "inputs is nil")
	_, err = tr.Step(x, nil)
	wantError(t, err, dptrain.StatusNullPointer, "labels is nil")
	_, err = tr.Evaluate(nil, y)
	wantError(t, err, dptrain.StatusNullPointer, "inputs is nil")
	wantError(t, tr.Predict(x, 4, nil), dptrain.StatusNullPointer, "logits is nil")
	wantError(t, tr.SetParameters(nil), dptrain.StatusNullPointer, "src is nil")
	wantError(t, tr.ReadParameters(nil), dptrain.StatusNullPointer, "dst is nil")
	_, err = dptrain.NewDataset(nil, y, 1, 4, 4, 3)
	wantError(t, err, dptrain.StatusNullPointer, "inputs is nil")
	// Empty, non-nil slices reach the library, which rejects an empty batch.
	_, err = tr.Step([]float32{}, []int32{})
	wantError(t, err, dptrain.StatusInvalidArgument, "positive")
}

func TestWrongLengths(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t), nil)
	x, y := tinyBatch(4, 1)
	_, err := tr.Step(x[:len(x)-1], y)
	wantError(t, err, dptrain.StatusSizeMismatch, "input_count is 63, expected 4 x 16 = 64")
	_, err = tr.Step(x, y[:3]) // 3 labels: 48 floats expected
	wantError(t, err, dptrain.StatusSizeMismatch, "expected 3 x 16 = 48")
	_, err = tr.Evaluate(x, y[:2])
	wantError(t, err, dptrain.StatusSizeMismatch)
	wantError(t, tr.Predict(x, 4, make([]float32, 11)), dptrain.StatusSizeMismatch)
	wantError(t, tr.Predict(x, 5, make([]float32, 15)), dptrain.StatusSizeMismatch)
	n, err := tr.ParameterCount()
	must(t, err)
	wantError(t, tr.SetParameters(make([]float32, n+1)), dptrain.StatusSizeMismatch)
	wantError(t, tr.ReadParameters(make([]float32, n-1)), dptrain.StatusSizeMismatch)
	wantError(t, tr.ReadReplicaParameters(2, make([]float32, n)), dptrain.StatusOutOfRange)
	_, err = dptrain.NewDataset(x, y[:3], 1, 4, 4, 3)
	wantError(t, err, dptrain.StatusSizeMismatch)
	_, err = dptrain.NewTrainer(newContext(t, 2), tinyModel(t),
		&dptrain.TrainerOptions{Split: dptrain.SplitWeighted, SplitWeights: []float32{1, 2, 3}})
	wantError(t, err, dptrain.StatusSizeMismatch, "3 split weights for 2 devices")
}

func TestBadValues(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t), nil)
	x, y := tinyBatch(4, 1)
	y[2] = tinyClasses // out of range label
	_, err := tr.Step(x, y)
	wantError(t, err, dptrain.StatusOutOfRange)
	y[2] = -2 // -1 is the ignore label
	_, err = tr.Step(x, y)
	wantError(t, err, dptrain.StatusOutOfRange)

	m := tinyModel(t)
	wantError(t, m.AddActivation(dptrain.Activation(42)), dptrain.StatusInvalidArgument)
	wantError(t, m.AddDropout(1.5), dptrain.StatusOutOfRange)
	_, err = dptrain.NewTrainer(newContext(t, 2), m, &dptrain.TrainerOptions{Split: dptrain.SplitPolicy(-3)})
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = dptrain.NewTrainer(newContext(t, 2), m,
		&dptrain.TrainerOptions{Optimizer: dptrain.OptimizerOptions{Momentum: 1.5}})
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = dptrain.LoadFashionMNIST(t.TempDir(), dptrain.DatasetPart(7))
	if err == nil {
		t.Fatal("want an error for a bad dataset part")
	}
}

func TestNegativeAndOverflowingSizes(t *testing.T) {
	_, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: -1})
	wantError(t, err, dptrain.StatusOutOfRange, "CPUDevices is negative (-1)")
	_, err = dptrain.NewModel(1, -28, 28)
	wantError(t, err, dptrain.StatusOutOfRange, "height is negative (-28)")
	// 2^40 x 2^40 overflows size_t in the library's shape arithmetic: an error, not a crash.
	_, err = dptrain.NewModel(1<<40, 1<<40, 1)
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = dptrain.NewModel(1, 28, 0)
	wantError(t, err, dptrain.StatusInvalidArgument)

	m := tinyModel(t)
	wantError(t, m.AddDense(-5), dptrain.StatusOutOfRange, "units is negative")
	wantError(t, m.AddConv2D(4, -3, 1, 0), dptrain.StatusOutOfRange, "kernel is negative")
	wantError(t, m.AddPool(dptrain.PoolAvg, 2, -1), dptrain.StatusOutOfRange, "stride is negative")

	d := tinyDataset(t, 10, 1)
	_, err = d.Subset(-1, 2)
	wantError(t, err, dptrain.StatusOutOfRange, "start is negative")
	_, err = d.Subset(math.MaxInt64, 2) // start + count overflows
	wantError(t, err, dptrain.StatusOutOfRange)
	_, err = d.Subset(8, math.MaxInt64)
	wantError(t, err, dptrain.StatusOutOfRange)
	wantError(t, d.CopyBatch(0, -4, make([]float32, 64), make([]int32, 4)), dptrain.StatusOutOfRange)

	ctx := newContext(t, 2)
	_, err = ctx.Device(-1)
	wantError(t, err, dptrain.StatusOutOfRange, "index is negative")
	_, err = dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Devices: []int{0, -1}})
	wantError(t, err, dptrain.StatusOutOfRange, "Devices[1] is negative")
	_, err = dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{AccumulationSteps: -2})
	wantError(t, err, dptrain.StatusOutOfRange)

	tr := newTrainer(t, ctx, m, nil)
	x, _ := tinyBatch(4, 1)
	wantError(t, tr.Predict(x, -4, make([]float32, 12)), dptrain.StatusOutOfRange, "samples is negative")
	// A sample count whose input size (samples x 16 floats) overflows size_t.
	wantError(t, tr.Predict(x, math.MaxInt64/2, make([]float32, 12)), dptrain.StatusInvalidArgument, "overflows")
	_, err = tr.Fit(d, nil, &dptrain.FitOptions{BatchSize: -256})
	wantError(t, err, dptrain.StatusOutOfRange, "BatchSize is negative")
	_, err = tr.EvaluateDataset(d, -1)
	wantError(t, err, dptrain.StatusOutOfRange)
}

func TestNilAndClosedHandles(t *testing.T) {
	ctx := newContext(t, 2)
	m := tinyModel(t)
	_, err := dptrain.NewTrainer(nil, m, nil)
	wantError(t, err, dptrain.StatusNullPointer, "context is nil")
	_, err = dptrain.NewTrainer(ctx, nil, nil)
	wantError(t, err, dptrain.StatusNullPointer, "model is nil")

	var nilTrainer *dptrain.Trainer
	_, err = nilTrainer.Step([]float32{1}, []int32{0})
	wantError(t, err, dptrain.StatusNullPointer)
	must(t, nilTrainer.Close())
	var nilCtx *dptrain.Context
	_, err = nilCtx.DeviceCount()
	wantError(t, err, dptrain.StatusNullPointer)

	tr := newTrainer(t, ctx, m, nil)
	_, err = tr.Fit(nil, nil, nil)
	wantError(t, err, dptrain.StatusNullPointer, "train dataset is nil")
	d := tinyDataset(t, 8, 1)
	test := tinyDataset(t, 8, 2)
	must(t, test.Close())
	_, err = tr.Fit(d, test, nil)
	wantClosed(t, err)
	must(t, d.Close())
	_, err = tr.Fit(d, nil, nil)
	wantClosed(t, err)
	_, err = tr.EvaluateDataset(d, 0)
	wantClosed(t, err)

	must(t, m.Close())
	_, err = dptrain.NewTrainer(ctx, m, nil)
	wantClosed(t, err)
}

func TestBadStrings(t *testing.T) {
	_, err := dptrain.BuiltinModel("")
	wantError(t, err, dptrain.StatusInvalidArgument, "empty")
	_, err = dptrain.BuiltinModel("lenet\x00")
	wantError(t, err, dptrain.StatusInvalidArgument, "NUL")
	_, err = dptrain.LoadIDX("", "labels")
	wantError(t, err, dptrain.StatusInvalidArgument, "empty path")
	_, err = dptrain.LoadFashionMNIST("/tmp\x00/x", dptrain.DatasetTest)
	wantError(t, err, dptrain.StatusInvalidArgument, "NUL")
	_, err = dptrain.LoadFashionMNIST(t.TempDir(), dptrain.DatasetTest)
	wantError(t, err, dptrain.StatusIO)
}
