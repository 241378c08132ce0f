package dptrain_test

import (
	"math"
	"testing"

	"dptrain.org/dptrain"
)

// relativeMovementDiff is |(a - start) - (b - start)| / |b - start| in the Euclidean norm: how far a's
// movement from start is from b's.
func relativeMovementDiff(t *testing.T, a, b, start []float32) float64 {
	t.Helper()
	if len(a) != len(start) || len(b) != len(start) {
		t.Fatalf("lengths %d, %d, %d", len(a), len(b), len(start))
	}
	var d, n float64
	for i := range start {
		moveA := float64(a[i]) - float64(start[i])
		moveB := float64(b[i]) - float64(start[i])
		d += (moveA - moveB) * (moveA - moveB)
		n += moveB * moveB
	}
	if n == 0 {
		t.Fatal("the reference did not move")
	}
	return math.Sqrt(d / n)
}

// TestAllreduceDtype: the zero TrainerOptions sends float32. The tiny MLP on 2 CPU devices, 3 steps over a
// PrecisionBF16 (and a PrecisionFP16) wire: the two replicas stay bitwise identical and end on other bits
// than the float32 wire's (so the option reaches the library, and bf16 is not fp16), while their movement
// from the start stays within 2e-2 of the float32 wire's (relative, Euclidean norm over the whole vector),
// bf16's further than fp16's.
// A value outside the enum (3, -1) is refused with StatusInvalidArgument.
func TestAllreduceDtype(t *testing.T) {
	if (dptrain.TrainerOptions{}).AllreduceDtype != dptrain.PrecisionFP32 {
		t.Fatal("the zero TrainerOptions does not send PrecisionFP32")
	}
	ctx := newContext(t, 2)
	m := tinyModel(t)
	x, y := tinyBatch(16, 4) // 8 samples per device
	// train returns the start and each replica's parameters after 3 steps.
	train := func(opts *dptrain.TrainerOptions) (start, r0, r1 []float32) {
		t.Helper()
		tr := newTrainer(t, ctx, m, opts)
		if n, err := tr.DeviceCount(); err != nil || n != 2 {
			t.Fatalf("DeviceCount() = %d, %v; want 2", n, err)
		}
		start, err := tr.Parameters()
		must(t, err)
		for i := 0; i < 3; i++ {
			r, err := tr.Step(x, y)
			must(t, err)
			if !r.Applied {
				t.Fatalf("AllreduceDtype %d, step %d: not applied: %+v", opts.AllreduceDtype, i+1, r)
			}
		}
		r0 = make([]float32, len(start))
		r1 = make([]float32, len(start))
		must(t, tr.ReadReplicaParameters(0, r0))
		must(t, tr.ReadReplicaParameters(1, r1))
		return start, r0, r1
	}
	byDefault, _, _ := train(&dptrain.TrainerOptions{Seed: 5})
	start, fp32, fp32b := train(&dptrain.TrainerOptions{Seed: 5, AllreduceDtype: dptrain.PrecisionFP32})
	bf16Start, bf16, bf16b := train(&dptrain.TrainerOptions{Seed: 5, AllreduceDtype: dptrain.PrecisionBF16})
	fp16Start, fp16, fp16b := train(&dptrain.TrainerOptions{Seed: 5, AllreduceDtype: dptrain.PrecisionFP16})
	if !bitwiseEqual(start, byDefault) || !bitwiseEqual(start, bf16Start) || !bitwiseEqual(start, fp16Start) {
		t.Fatal("the same seed starts on different parameters")
	}
	for _, c := range []struct {
		name   string
		r0, r1 []float32
	}{{"float32", fp32, fp32b}, {"bf16", bf16, bf16b}, {"fp16", fp16, fp16b}} {
		if !bitwiseEqual(c.r0, c.r1) {
			t.Errorf("%s wire: the replicas differ", c.name)
		}
	}
	if bitwiseEqual(start, fp32) {
		t.Fatal("3 steps left the parameters unchanged")
	}
	if bitwiseEqual(fp32, bf16) {
		t.Error("the bf16 wire trains to the float32 wire's bits")
	}
	if bitwiseEqual(fp32, fp16) {
		t.Error("the fp16 wire trains to the float32 wire's bits")
	}
	if bitwiseEqual(bf16, fp16) {
		t.Error("the bf16 and fp16 wires train to the same bits")
	}
	dBF16 := relativeMovementDiff(t, bf16, fp32, start)
	dFP16 := relativeMovementDiff(t, fp16, fp32, start)
	t.Logf("movement relative from the float32 wire's: bf16 %g, fp16 %g", dBF16, dFP16)
	if dBF16 > 2e-2 {
		t.Errorf("the bf16 wire's movement differs from float32's by %g relative, more than 2e-2", dBF16)
	}
	if dFP16 > 2e-2 {
		t.Errorf("the fp16 wire's movement differs from float32's by %g relative, more than 2e-2", dFP16)
	}
	// bfloat16 keeps 8 significant bits, float16 11: the bf16 wire strays further (about 8 times here).
	if dBF16 <= dFP16 {
		t.Errorf("the bf16 wire (%g) does not stray further from float32 than the fp16 wire (%g)", dBF16, dFP16)
	}
	for _, bad := range []dptrain.Precision{3, -1} {
		_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{AllreduceDtype: bad})
		wantError(t, err, dptrain.StatusInvalidArgument, "allreduce_dtype")
	}
}
