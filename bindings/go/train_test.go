package dptrain_test

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"dptrain.org/dptrain"
)

func TestStepsReduceLoss(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t),
		&dptrain.TrainerOptions{Seed: 11, Optimizer: dptrain.OptimizerOptions{LearningRate: 0.5}})
	x, y := tinyBatch(60, 5)
	first, err := tr.Step(x, y)
	must(t, err)
	if first.Samples != 60 || !first.Applied || first.OptimizerSteps != 1 || math.Abs(first.LearningRate-0.5) > 1e-6 {
		t.Fatalf("first step: %+v", first)
	}
	// Untrained 3-class logits near zero: loss near ln 3.
	if math.Abs(first.Loss-math.Log(3)) > 0.1 {
		t.Fatalf("initial loss %.4f, want about ln 3 = %.4f", first.Loss, math.Log(3))
	}
	last := first
	for i := 0; i < 60; i++ {
		last, err = tr.Step(x, y)
		must(t, err)
	}
	if last.OptimizerSteps != 61 {
		t.Fatalf("OptimizerSteps = %d, want 61", last.OptimizerSteps)
	}
	if !(last.Loss < 0.25*first.Loss) || last.Accuracy < 0.95 {
		t.Fatalf("loss %.4f -> %.4f (accuracy %.3f): training does not learn", first.Loss, last.Loss, last.Accuracy)
	}
	// Evaluation agrees with training on held-out samples of the same distribution.
	tx, ty := tinyBatch(30, 99)
	ev, err := tr.Evaluate(tx, ty)
	must(t, err)
	if ev.Samples != 30 || ev.Accuracy < 0.9 || ev.Loss > 0.5*first.Loss {
		t.Fatalf("evaluation: %+v", ev)
	}
	// Predict's logits pick the right class for those samples.
	logits := make([]float32, 30*tinyClasses)
	must(t, tr.Predict(tx, 30, logits))
	correct := 0
	for s := 0; s < 30; s++ {
		row := logits[s*tinyClasses : (s+1)*tinyClasses]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		if int32(best) == ty[s] {
			correct++
		}
	}
	if math.Abs(float64(correct)/30-ev.Accuracy) > 1e-9 {
		t.Fatalf("Predict: %d/30 correct, Evaluate accuracy %.4f", correct, ev.Accuracy)
	}
}

func TestParametersRoundTripBitwise(t *testing.T) {
	ctx := newContext(t, 2)
	a := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 1})
	b := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 2})
	n, err := a.ParameterCount()
	must(t, err)
	if n != 16*16+16+16*3+3 {
		t.Fatalf("ParameterCount = %d", n)
	}
	// Values that a float32 copy must keep exactly: signed zeros, subnormals, extremes, NaN payloads.
	src := make([]float32, n)
	specials := []uint32{0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x7f7fffff, 0xff7fffff, 0x7fc01234, 0x3f800000}
	for i := range src {
		if i < len(specials) {
			src[i] = math.Float32frombits(specials[i])
		} else {
			src[i] = float32(math.Sin(float64(i))) / 3
		}
	}
	must(t, a.SetParameters(src))
	got, err := a.Parameters()
	must(t, err)
	if !bitwiseEqual(got, src) {
		t.Fatal("Parameters() differ from what SetParameters() wrote")
	}
	for r := 0; r < 2; r++ {
		replica := make([]float32, n)
		must(t, a.ReadReplicaParameters(r, replica))
		if !bitwiseEqual(replica, src) {
			t.Fatalf("replica %d differs", r)
		}
	}
	// Same parameters, same checksum; different parameters, different checksum.
	sumA, err := a.Checksum()
	must(t, err)
	sumB, err := b.Checksum()
	must(t, err)
	if sumA == sumB || len(sumA) != 16 {
		t.Fatalf("checksums %q %q", sumA, sumB)
	}
	must(t, b.SetParameters(got))
	sumB, err = b.Checksum()
	must(t, err)
	if sumA != sumB {
		t.Fatalf("same parameters, checksums %q != %q", sumA, sumB)
	}
}

func TestSlicesAreNotCopied(t *testing.T) {
	tr := newTrainer(t, newContext(t, 2), tinyModel(t), nil)
	x, y := tinyBatch(4096, 3) // 256 KiB of inputs
	n, err := tr.ParameterCount()
	must(t, err)
	params := make([]float32, n)
	step := func() {
		if _, err := tr.Step(x, y); err != nil {
			t.Fatal(err)
		}
		if err := tr.ReadParameters(params); err != nil {
			t.Fatal(err)
		}
	}
	step()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 5
	for i := 0; i < rounds; i++ {
		step()
	}
	runtime.ReadMemStats(&after)
	perRound := (after.TotalAlloc - before.TotalAlloc) / rounds
	if perRound > 16<<10 { // far below the 256 KiB a copy of the inputs would take
		t.Fatalf("%d bytes allocated per Step+ReadParameters: slices are copied", perRound)
	}
}

func TestTrainersOnOneContextRunConcurrently(t *testing.T) {
	ctx := newContext(t, 2)
	var wg sync.WaitGroup
	losses := make([][2]float64, 3)
	errs := make([]error, 3)
	for g := 0; g < 3; g++ {
		tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: uint64(g)})
		wg.Add(1)
		go func(g int, tr *dptrain.Trainer) {
			defer wg.Done()
			x, y := tinyBatch(30, uint32(g))
			for i := 0; i < 20; i++ {
				r, err := tr.Step(x, y)
				if err != nil {
					errs[g] = err
					return
				}
				if i == 0 {
					losses[g][0] = r.Loss
				}
				losses[g][1] = r.Loss
			}
		}(g, tr)
	}
	wg.Wait()
	for g := range errs {
		must(t, errs[g])
		if !(losses[g][1] < losses[g][0]) {
			t.Fatalf("trainer %d: loss %.4f -> %.4f", g, losses[g][0], losses[g][1])
		}
	}
}

func TestSameSeedSameParameters(t *testing.T) {
	// Same seed and configuration, 1 device or 2: the same run, bit for bit (up to the split's rounding the
	// library documents as float rounding; with one device per run both sides are identical).
	run := func() string {
		ctx := newContext(t, 2)
		tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 5, Init: dptrain.InitNormal, InitStd: 0.1})
		_, err := tr.Fit(tinyDataset(t, 90, 4), nil, &dptrain.FitOptions{Epochs: 2, BatchSize: 16})
		must(t, err)
		sum, err := tr.Checksum()
		must(t, err)
		return sum
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("same seed, checksums %s != %s", a, b)
	}
}

func TestFashionMNIST(t *testing.T) {
	dir := os.Getenv("DPTRAIN_DATA_DIR")
	if dir == "" {
		dir = dptrain.DefaultFashionMNISTDir
	}
	if _, err := os.Stat(filepath.Join(dir, "t10k-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not found in %s (apt-get install dataset-fashion-mnist)", dir)
	}
	test, err := dptrain.LoadFashionMNIST("", dptrain.DatasetTest)
	must(t, err)
	defer test.Close()
	n, err := test.Len()
	must(t, err)
	c, h, w, err := test.Shape()
	must(t, err)
	classes, err := test.ClassCount()
	must(t, err)
	if n != 10000 || c != 1 || h != 28 || w != 28 || classes != 10 {
		t.Fatalf("Fashion-MNIST test set: %d samples %dx%dx%d %d classes", n, c, h, w, classes)
	}
	x := make([]float32, 2*784)
	y := make([]int32, 2)
	must(t, test.CopyBatch(0, 2, x, y))
	for _, v := range x {
		if v < 0 || v > 1 {
			t.Fatalf("pixel %v outside [0, 1]", v)
		}
	}
}

func TestOptimizerOptionsReachTheLibrary(t *testing.T) {
	ctx := newContext(t, 2)
	x, y := tinyBatch(12, 1)
	lrs := func(o dptrain.OptimizerOptions, steps int) []float64 {
		tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Optimizer: o})
		var out []float64
		for i := 0; i < steps; i++ {
			r, err := tr.Step(x, y)
			must(t, err)
			out = append(out, r.LearningRate)
		}
		return out
	}
	near := func(got, want []float64) bool {
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				return false
			}
		}
		return len(got) == len(want)
	}
	if got := lrs(dptrain.OptimizerOptions{}, 2); !near(got, []float64{0.1, 0.1}) {
		t.Fatalf("default learning rate: %v", got)
	}
	step := dptrain.OptimizerOptions{LearningRate: 0.4, Schedule: dptrain.ScheduleStep, StepSize: 2, Gamma: 0.5}
	if got := lrs(step, 5); !near(got, []float64{0.4, 0.4, 0.2, 0.2, 0.1}) {
		t.Fatalf("step schedule: %v", got)
	}
	warm := dptrain.OptimizerOptions{Kind: dptrain.AdamW, LearningRate: 0.01, WarmupSteps: 4}
	if got := lrs(warm, 5); !near(got, []float64{0.0025, 0.005, 0.0075, 0.01, 0.01}) {
		t.Fatalf("AdamW warm-up: %v", got)
	}
	// Accumulation: two micro-batches per optimizer step.
	tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{AccumulationSteps: 2})
	for i, want := range []bool{false, true, false, true} {
		r, err := tr.Step(x, y)
		must(t, err)
		if r.Applied != want || r.OptimizerSteps != uint64((i+1)/2) {
			t.Fatalf("micro-batch %d: %+v", i, r)
		}
	}
}
