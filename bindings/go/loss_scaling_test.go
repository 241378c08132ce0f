package dptrain_test

import (
	"math"
	"testing"

	"dptrain.org/dptrain"
)

// TestFP16LossScaling: PrecisionFP16 on the tiny MLP over 2 CPU devices with an initial loss scale of 2^40.
// The scaled gradient overflows float16, so the first windows are skipped, not failed (even under
// NonFiniteError): each has Applied false, SkippedOverflow true, OverflowSteps 1, 2, 3 ..., the loss scale
// halved to exactly 2^(40-n), and the parameters bitwise unchanged; then a step applies at the scale that
// fits, which stays.
func TestFP16LossScaling(t *testing.T) {
	ctx := newContext(t, 2)
	tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 3, Precision: dptrain.PrecisionFP16,
		InitialLossScale: math.Ldexp(1, 40), NonFinite: dptrain.NonFiniteError})
	if n, err := tr.DeviceCount(); err != nil || n != 2 {
		t.Fatalf("DeviceCount() = %d, %v; want 2", n, err)
	}
	x, y := tinyBatch(16, 2)
	start, err := tr.Parameters()
	must(t, err)
	skipped := 0
	var r dptrain.StepResult
	for i := 0; i < 64; i++ {
		r, err = tr.Step(x, y)
		must(t, err)
		if r.Applied {
			break
		}
		skipped++
		if !r.SkippedOverflow || r.SkippedNonFinite || r.OverflowSteps != uint64(skipped) || r.OptimizerSteps != 0 ||
			r.NonFiniteSteps != 0 {
			t.Fatalf("skipped window %d: %+v", skipped, r)
		}
		if want := math.Ldexp(1, 40-skipped); r.LossScale != want {
			t.Fatalf("skipped window %d: LossScale %g, want 2^%d = %g", skipped, r.LossScale, 40-skipped, want)
		}
		if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) {
			t.Fatalf("skipped window %d: the forward pass's loss is %g", skipped, r.Loss)
		}
		p, err := tr.Parameters()
		must(t, err)
		if !bitwiseEqual(p, start) {
			t.Fatalf("skipped window %d changed the parameters", skipped)
		}
	}
	t.Logf("2^40: %d windows skipped, then applied at scale %g", skipped, r.LossScale)
	if !r.Applied || r.SkippedOverflow || r.OptimizerSteps != 1 || r.OverflowSteps != uint64(skipped) {
		t.Fatalf("no step applied after %d skipped windows: %+v", skipped, r)
	}
	// The tiny MLP's per-logit gradient (2/3 at the start) times 2^20 / 16 fits float16; times 2^24 / 16 not.
	if skipped < 16 || skipped > 24 || r.LossScale != math.Ldexp(1, 40-skipped) {
		t.Fatalf("applied after %d skipped windows at scale %g", skipped, r.LossScale)
	}
	p, err := tr.Parameters()
	must(t, err)
	if bitwiseEqual(p, start) {
		t.Fatal("the applied step left the parameters unchanged")
	}
	r, err = tr.Step(x, y)
	must(t, err)
	if !r.Applied || r.SkippedOverflow || r.OverflowSteps != uint64(skipped) || r.LossScale != math.Ldexp(1, 40-skipped) {
		t.Fatalf("the step after the first applied one: %+v", r)
	}
}

// TestLossScaleOptions: the zero values ask for the library's defaults (a first scale of 65536, doubling
// after 2000 applied windows in a row), an explicit interval doubles sooner, a negative one never; float32
// reports a scale of 1; a scale that is not a power of two from 1 to 2^64 is refused whatever the precision.
func TestLossScaleOptions(t *testing.T) {
	if dptrain.DefaultInitialLossScale != 65536 || dptrain.DefaultLossScaleGrowthInterval != 2000 {
		t.Fatalf("defaults %v, %v", dptrain.DefaultInitialLossScale, dptrain.DefaultLossScaleGrowthInterval)
	}
	ctx := newContext(t, 2)
	m := tinyModel(t)
	x, y := tinyBatch(16, 2)
	// scales steps a trainer and returns the loss scale after each step; every step must apply.
	scales := func(opts *dptrain.TrainerOptions, steps int) []float64 {
		t.Helper()
		tr := newTrainer(t, ctx, m, opts)
		out := make([]float64, steps)
		for i := range out {
			r, err := tr.Step(x, y)
			must(t, err)
			if !r.Applied || r.SkippedOverflow || r.OverflowSteps != 0 {
				t.Fatalf("step %d: %+v", i+1, r)
			}
			out[i] = r.LossScale
		}
		return out
	}
	byDefault := scales(&dptrain.TrainerOptions{Precision: dptrain.PrecisionFP16}, dptrain.DefaultLossScaleGrowthInterval+1)
	for i, s := range byDefault {
		want := 65536.0
		if i+1 >= dptrain.DefaultLossScaleGrowthInterval {
			want = 131072
		}
		if s != want {
			t.Fatalf("default options, step %d: loss scale %g, want %g", i+1, s, want)
		}
	}
	fast := scales(&dptrain.TrainerOptions{Precision: dptrain.PrecisionFP16, InitialLossScale: 8,
		LossScaleGrowthInterval: 2}, 5)
	if want := []float64{8, 16, 16, 32, 32}; !equalFloats(fast, want) {
		t.Fatalf("InitialLossScale 8, LossScaleGrowthInterval 2: scales %v, want %v", fast, want)
	}
	// Past the default interval: a negative interval is not the default.
	never := scales(&dptrain.TrainerOptions{Precision: dptrain.PrecisionFP16, InitialLossScale: 8,
		LossScaleGrowthInterval: -1}, dptrain.DefaultLossScaleGrowthInterval+1)
	for i, s := range never {
		if s != 8 {
			t.Fatalf("LossScaleGrowthInterval -1, step %d: loss scale %g, want 8", i+1, s)
		}
	}
	if fp32 := scales(&dptrain.TrainerOptions{InitialLossScale: 1024}, 2); !equalFloats(fp32, []float64{1, 1}) {
		t.Fatalf("float32 reports loss scales %v, want 1", fp32)
	}
	for _, p := range []dptrain.Precision{dptrain.PrecisionFP16, dptrain.PrecisionFP32} {
		for _, bad := range []float64{3, 0.5, -4, math.Ldexp(1, 65), math.Inf(1), math.NaN()} {
			_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Precision: p, InitialLossScale: bad})
			wantError(t, err, dptrain.StatusInvalidArgument, "initial loss scale")
		}
	}
	// The bounds are accepted.
	for _, good := range []float64{1, math.Ldexp(1, 64)} {
		tr, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Precision: dptrain.PrecisionFP16,
			InitialLossScale: good})
		must(t, err)
		tr.Close()
	}
}

// TestFP16Fit: a fit in fp16 from 2^40 reports its skipped windows and the scale they leave, in its result
// and in its progress reports.
func TestFP16Fit(t *testing.T) {
	ctx := newContext(t, 2)
	tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 3, Precision: dptrain.PrecisionFP16,
		InitialLossScale: math.Ldexp(1, 40)})
	var reported []float64
	r, err := tr.Fit(tinyDataset(t, 64, 4), nil, &dptrain.FitOptions{Epochs: 10, BatchSize: 16,
		Progress: func(p dptrain.Progress) bool {
			reported = append(reported, p.LossScale)
			return true
		}})
	must(t, err)
	n := int(r.OverflowSteps)
	if n < 16 || n > 24 || r.OptimizerSteps+r.OverflowSteps != 40 || r.NonFiniteSteps != 0 {
		t.Fatalf("fit of 40 windows: %+v", r)
	}
	if r.LossScale != math.Ldexp(1, 40-n) {
		t.Fatalf("FitResult.LossScale %g, want 2^%d", r.LossScale, 40-n)
	}
	if len(reported) != 10 || reported[9] != r.LossScale || reported[0] <= reported[9] {
		t.Fatalf("epoch reports' loss scales %v (the result's %g)", reported, r.LossScale)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
