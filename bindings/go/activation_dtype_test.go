package dptrain_test

import (
	"testing"

	"dptrain.org/dptrain"
)

// activationSide is the side of activationModel's 1 x side x side inputs.
const activationSide = 12

// activationModel is 1x12x12 -> conv 4 -> bn -> relu -> 3 blocks relu(x + bn(conv(relu(bn(conv(x)))))) ->
// global average pooling -> dense (3 classes). Its 24 activations of 4x12x12 are nearly all of its activation
// bytes, so the store keeps them as 16-bit copies (they save more than the float32 working slots cost), and
// batch norm's backward reads them.
func activationModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(1, activationSide, activationSide)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	// convBN is a 3x3 convolution to 4 channels (no bias) and a batch norm.
	convBN := func(x dptrain.Tensor) dptrain.Tensor {
		t.Helper()
		y, err := m.Conv2D(x, 4, 3, 1, 1, false, "")
		must(t, err)
		y, err = m.BatchNorm(y, 1e-5, 0.1, "")
		must(t, err)
		return y
	}
	relu := func(x dptrain.Tensor) dptrain.Tensor {
		t.Helper()
		y, err := m.Activation(x, dptrain.ReLU, "")
		must(t, err)
		return y
	}
	x := relu(convBN(dptrain.InputTensor))
	for block := 0; block < 3; block++ {
		sum, err := m.Add(x, convBN(relu(convBN(x))), "")
		must(t, err)
		x = relu(sum)
	}
	x, err = m.GlobalAvgPool(x, "")
	must(t, err)
	_, err = m.Dense(x, tinyClasses, true, "")
	must(t, err)
	return m
}

// activationBatch returns n samples of activationModel's shape: sample s has label s % 3 and bright pixels
// where j % 3 is its label, plus a deterministic ripple.
func activationBatch(n int) ([]float32, []int32) {
	const in = activationSide * activationSide
	x := make([]float32, n*in)
	y := make([]int32, n)
	for s := 0; s < n; s++ {
		label := s % tinyClasses
		y[s] = int32(label)
		for j := 0; j < in; j++ {
			ripple := float32(float64((s*31+j*17)%13)/13.0-0.5) * 0.2
			signal := float32(0)
			if j%tinyClasses == label {
				signal = 1
			}
			x[s*in+j] = signal + ripple
		}
	}
	return x, y
}

// TestActivationDtype: the zero TrainerOptions keeps float32 activations (and trains to the bits of an
// explicit PrecisionFP32). The batch-norm model on 2 CPU devices with PrecisionBF16 products, 2 steps with
// PrecisionBF16 (and PrecisionFP16) activations: the two replicas stay bitwise identical and end on other bits
// than with float32 activations (batch norm's backward reads the rounded copies: the option reaches the
// library, and bf16 is not fp16), within 1e-2 of them (relative, Euclidean norm over the whole vector).
// A value outside the enum (3, -1) is refused with StatusInvalidArgument.
func TestActivationDtype(t *testing.T) {
	if (dptrain.TrainerOptions{}).ActivationDtype != dptrain.PrecisionFP32 {
		t.Fatal("the zero TrainerOptions does not keep PrecisionFP32 activations")
	}
	ctx := newContext(t, 2)
	m := activationModel(t)
	x, y := activationBatch(16) // 8 samples per device
	// train returns the start and each replica's parameters after 2 steps.
	train := func(activations dptrain.Precision) (start, r0, r1 []float32) {
		t.Helper()
		opts := &dptrain.TrainerOptions{Seed: 5, Precision: dptrain.PrecisionBF16, ActivationDtype: activations}
		tr := newTrainer(t, ctx, m, opts)
		if n, err := tr.DeviceCount(); err != nil || n != 2 {
			t.Fatalf("DeviceCount() = %d, %v; want 2", n, err)
		}
		start, err := tr.Parameters()
		must(t, err)
		for i := 0; i < 2; i++ {
			r, err := tr.Step(x, y)
			must(t, err)
			if !r.Applied {
				t.Fatalf("ActivationDtype %d, step %d: not applied: %+v", activations, i+1, r)
			}
		}
		r0 = make([]float32, len(start))
		r1 = make([]float32, len(start))
		must(t, tr.ReadReplicaParameters(0, r0))
		must(t, tr.ReadReplicaParameters(1, r1))
		return start, r0, r1
	}
	start, fp32, fp32b := train(dptrain.PrecisionFP32)
	bf16Start, bf16, bf16b := train(dptrain.PrecisionBF16)
	fp16Start, fp16, fp16b := train(dptrain.PrecisionFP16)
	if !bitwiseEqual(start, bf16Start) || !bitwiseEqual(start, fp16Start) {
		t.Fatal("the same seed starts on different parameters")
	}
	for _, c := range []struct {
		name   string
		r0, r1 []float32
	}{{"float32", fp32, fp32b}, {"bf16", bf16, bf16b}, {"fp16", fp16, fp16b}} {
		if !bitwiseEqual(c.r0, c.r1) {
			t.Errorf("%s activations: the replicas differ", c.name)
		}
	}
	if bitwiseEqual(start, fp32) {
		t.Fatal("2 steps left the parameters unchanged")
	}
	if bitwiseEqual(fp32, bf16) {
		t.Error("bf16 activations train to float32's bits")
	}
	if bitwiseEqual(fp32, fp16) {
		t.Error("fp16 activations train to float32's bits")
	}
	if bitwiseEqual(bf16, fp16) {
		t.Error("bf16 and fp16 activations train to the same bits")
	}
	dBF16 := relativeDiff(bf16, fp32)
	dFP16 := relativeDiff(fp16, fp32)
	t.Logf("relative difference from float32 activations: bf16 %g, fp16 %g", dBF16, dFP16)
	if dBF16 > 1e-2 {
		t.Errorf("bf16 activations differ from float32's by %g relative, more than 1e-2", dBF16)
	}
	if dFP16 > 1e-2 {
		t.Errorf("fp16 activations differ from float32's by %g relative, more than 1e-2", dFP16)
	}
	for _, bad := range []dptrain.Precision{3, -1} {
		_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{ActivationDtype: bad})
		wantError(t, err, dptrain.StatusInvalidArgument, "activation_dtype")
	}
}
