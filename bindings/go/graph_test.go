package dptrain_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dptrain.org/dptrain"
)

// basicBlock is the ResNet basic block of the model.h header example, y = relu(bn(conv(relu(bn(conv(x)))))
// + shortcut(x)), with a 1x1 projection + batch norm as the shortcut when the shape changes. Its nodes are
// named as torchvision names them (prefix "layer1.0").
func basicBlock(m *dptrain.Model, x dptrain.Tensor, channels, stride int, prefix string) (dptrain.Tensor, error) {
	dims, err := m.TensorShape(x)
	if err != nil {
		return 0, err
	}
	y, err := m.Conv2D(x, channels, 3, stride, 1, false, prefix+".conv1")
	if err == nil {
		y, err = m.BatchNorm(y, 1e-5, 0.1, prefix+".bn1")
	}
	if err == nil {
		y, err = m.Activation(y, dptrain.ReLU, prefix+".relu1")
	}
	if err == nil {
		y, err = m.Conv2D(y, channels, 3, 1, 1, false, prefix+".conv2")
	}
	if err == nil {
		y, err = m.BatchNorm(y, 1e-5, 0.1, prefix+".bn2")
	}
	if err != nil {
		return 0, err
	}
	s := x
	if stride != 1 || dims[0] != channels { // the shortcut: a 1x1 projection
		if s, err = m.Conv2D(x, channels, 1, stride, 0, false, prefix+".downsample.0"); err != nil {
			return 0, err
		}
		if s, err = m.BatchNorm(s, 1e-5, 0.1, prefix+".downsample.1"); err != nil {
			return 0, err
		}
	}
	if y, err = m.Add(y, s, prefix+".add"); err != nil {
		return 0, err
	}
	return m.Activation(y, dptrain.ReLU, prefix+".relu2")
}

// residualModel is a small ResNet for the tiny problem (1x4x4 inputs, 3 classes): a stem conv-bn-relu, a
// block with the identity shortcut, a block with a projection, global average pooling and a dense layer.
func residualModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(tinyC, tinyH, tinyW)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	x, err := m.Conv2D(dptrain.InputTensor, 8, 3, 1, 1, false, "conv1")
	must(t, err)
	x, err = m.BatchNorm(x, 1e-5, 0.1, "bn1")
	must(t, err)
	x, err = m.Activation(x, dptrain.ReLU, "relu")
	must(t, err)
	x, err = basicBlock(m, x, 8, 1, "layer1.0")
	must(t, err)
	x, err = basicBlock(m, x, 16, 2, "layer2.0")
	must(t, err)
	x, err = m.GlobalAvgPool(x, "avgpool")
	must(t, err)
	out, err := m.Dense(x, tinyClasses, true, "fc")
	must(t, err)
	if got, err := m.Output(); err != nil || got != out {
		t.Fatalf("Output() = %d, %v; want the dense layer's tensor %d", got, err, out)
	}
	return m
}

func TestGraphResidualModel(t *testing.T) {
	m := residualModel(t)
	n, err := m.TensorCount()
	must(t, err)
	// stem 3 + identity block 7 + projection block 9 + gap + dense; tensor 0 is the input.
	if n != 1+3+7+9+2 {
		t.Fatalf("TensorCount() = %d, want 22", n)
	}
	for _, c := range []struct {
		tensor dptrain.Tensor
		want   []int
	}{{dptrain.InputTensor, []int{1, 4, 4}}, {1, []int{8, 4, 4}}, {19, []int{16, 2, 2}}, {20, []int{16}}, {21, []int{3}}} {
		got, err := m.TensorShape(c.tensor)
		must(t, err)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("TensorShape(%d) = %v, want %v", c.tensor, got, c.want)
		}
	}
	desc, err := m.Describe()
	must(t, err)
	if !strings.HasPrefix(desc, "1x4x4 ") {
		t.Errorf("Describe() = %q", desc)
	}

	// Named parameters: node order, weight then bias, back to back over the flat vector.
	params, err := m.NamedParameters()
	must(t, err)
	count, err := m.ParameterCount()
	must(t, err)
	checkCover(t, params, count, dptrain.TensorParameter)
	byName := map[string]dptrain.NamedTensor{}
	for _, p := range params {
		byName[p.Name] = p
	}
	for name, shape := range map[string][]int{
		"conv1.weight":                 {8, 1, 3, 3},
		"bn1.weight":                   {8},
		"bn1.bias":                     {8},
		"layer1.0.conv2.weight":        {8, 8, 3, 3},
		"layer2.0.conv1.weight":        {16, 8, 3, 3},
		"layer2.0.downsample.0.weight": {16, 8, 1, 1},
		"layer2.0.downsample.1.bias":   {16},
		"fc.weight":                    {3, 16},
		"fc.bias":                      {3},
	} {
		p, ok := byName[name]
		if !ok {
			t.Errorf("no parameter %q among %v", name, names(params))
			continue
		}
		if !reflect.DeepEqual(p.Shape, shape) {
			t.Errorf("%s: shape %v, want %v", name, p.Shape, shape)
		}
	}
	if _, ok := byName["conv1.bias"]; ok {
		t.Error("conv1 was built without a bias but has conv1.bias")
	}
	if params[0].Name != "conv1.weight" || params[0].Offset != 0 || params[len(params)-1].Name != "fc.bias" {
		t.Errorf("parameter order: first %q at %d, last %q", params[0].Name, params[0].Offset, params[len(params)-1].Name)
	}

	// Buffers: running_mean and running_var of each of the 6 batch norms.
	buffers, err := m.NamedBuffers()
	must(t, err)
	bufferCount, err := m.BufferCount()
	must(t, err)
	checkCover(t, buffers, bufferCount, dptrain.TensorBuffer)
	if len(buffers) != 12 || buffers[0].Name != "bn1.running_mean" || buffers[1].Name != "bn1.running_var" ||
		buffers[11].Name != "layer2.0.downsample.1.running_var" || !reflect.DeepEqual(buffers[11].Shape, []int{16}) {
		t.Errorf("buffers: %v", names(buffers))
	}
	same, err := m.NamedTensors(dptrain.TensorBuffer)
	must(t, err)
	if !reflect.DeepEqual(same, buffers) {
		t.Error("NamedTensors(TensorBuffer) differs from NamedBuffers()")
	}

	// The model trains on 2 devices.
	tr := newTrainer(t, newContext(t, 2), m, &dptrain.TrainerOptions{Seed: 5})
	x, y := tinyBatch(16, 2)
	for i := 0; i < 3; i++ {
		r, err := tr.Step(x, y)
		must(t, err)
		if math.IsNaN(r.Loss) || !r.Applied {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
}

// checkCover checks that the named tensors lie back to back over a flat vector of count floats.
func checkCover(t *testing.T, tensors []dptrain.NamedTensor, count int, kind dptrain.TensorKind) {
	t.Helper()
	next := 0
	for _, p := range tensors {
		if p.Kind != kind || p.Offset != next || p.Size() <= 0 {
			t.Fatalf("%s %q: kind %v, offset %d (want %d), shape %v", kind, p.Name, p.Kind, p.Offset, next, p.Shape)
		}
		next += p.Size()
	}
	if next != count {
		t.Fatalf("the %ss cover %d floats, the model has %d", kind, next, count)
	}
}

func names(tensors []dptrain.NamedTensor) []string {
	out := make([]string, len(tensors))
	for i, p := range tensors {
		out[i] = p.Name
	}
	return out
}

// twoSteps trains two steps of the tiny problem on 2 CPU devices with a fixed seed; returns the checksum.
func twoSteps(t *testing.T, m *dptrain.Model) string {
	t.Helper()
	tr := newTrainer(t, newContext(t, 2), m, &dptrain.TrainerOptions{Seed: 11})
	x, y := tinyBatch(12, 3)
	for i := 0; i < 2; i++ {
		_, err := tr.Step(x, y)
		must(t, err)
	}
	sum, err := tr.Checksum()
	must(t, err)
	return sum
}

func TestModelJSONRoundTrip(t *testing.T) {
	m := residualModel(t)
	text, err := m.ToJSON()
	must(t, err)
	if !strings.Contains(text, `"format": "dptrain.model"`) || !strings.Contains(text, `"name": "layer2.0.downsample.1"`) {
		t.Fatalf("ToJSON():\n%s", text)
	}
	back, err := dptrain.ModelFromJSON(text)
	must(t, err)
	defer back.Close()
	for _, q := range []func(*dptrain.Model) (string, error){
		(*dptrain.Model).Describe, (*dptrain.Model).ToJSON,
	} {
		a, err := q(m)
		must(t, err)
		b, err := q(back)
		must(t, err)
		if a != b {
			t.Fatalf("round trip changed the model:\n%s\n%s", a, b)
		}
	}
	pa, err := m.NamedParameters()
	must(t, err)
	pb, err := back.NamedParameters()
	must(t, err)
	if !reflect.DeepEqual(pa, pb) {
		t.Fatal("round trip changed the named parameters")
	}
	if a, b := twoSteps(t, m), twoSteps(t, back); a != b {
		t.Fatalf("after 2 steps: checksum %s from the built model, %s from its JSON", a, b)
	}

	// Bad texts.
	_, err = dptrain.ModelFromJSON("{")
	wantError(t, err, dptrain.StatusFormat)
	_, err = dptrain.ModelFromJSON("")
	wantError(t, err, dptrain.StatusFormat, "empty")
	_, err = dptrain.ModelFromJSON(strings.Replace(text, `"format"`, `"formats"`, 1))
	wantError(t, err, dptrain.StatusFormat)
	_, err = dptrain.ModelFromJSON("{\x00}")
	wantError(t, err, dptrain.StatusInvalidArgument, "NUL")
	// Well-formed, but a kernel that does not fit: the builder's status.
	_, err = dptrain.ModelFromJSON(strings.Replace(text, `"kernel": 3`, `"kernel": 9`, 1))
	wantError(t, err, dptrain.StatusInvalidArgument)
}

func TestSafetensorsRoundTrip(t *testing.T) {
	ctx := newContext(t, 2)
	m := residualModel(t)
	a := newTrainer(t, ctx, m, &dptrain.TrainerOptions{Seed: 1})
	x, y := tinyBatch(16, 4)
	for i := 0; i < 2; i++ {
		_, err := a.Step(x, y)
		must(t, err)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	must(t, a.SaveSafetensors(path))

	b := newTrainer(t, ctx, m, &dptrain.TrainerOptions{Seed: 2}) // other initial parameters
	pa, err := a.Parameters()
	must(t, err)
	pb, err := b.Parameters()
	must(t, err)
	if bitwiseEqual(pa, pb) {
		t.Fatal("two seeds gave the same parameters")
	}
	must(t, b.LoadSafetensors(path))
	pb, err = b.Parameters()
	must(t, err)
	if !bitwiseEqual(pa, pb) {
		t.Fatal("parameters differ after LoadSafetensors")
	}
	ba, err := a.Buffers()
	must(t, err)
	bb, err := b.Buffers()
	must(t, err)
	if !bitwiseEqual(ba, bb) {
		t.Fatal("buffers differ after LoadSafetensors")
	}
	ca, err := a.Checksum()
	must(t, err)
	cb, err := b.Checksum()
	must(t, err)
	if ca != cb {
		t.Fatalf("checksums %s and %s", ca, cb)
	}

	// Errors: a missing file, another model's file, an empty path; the trainer is unchanged.
	wantError(t, b.LoadSafetensors(filepath.Join(t.TempDir(), "missing")), dptrain.StatusIO)
	mlp, err := dptrain.BuiltinModel("mlp")
	must(t, err)
	defer mlp.Close()
	other := newTrainer(t, ctx, mlp, nil)
	otherPath := filepath.Join(t.TempDir(), "mlp.safetensors")
	must(t, other.SaveSafetensors(otherPath))
	wantError(t, b.LoadSafetensors(otherPath), dptrain.StatusInvalidArgument)
	wantError(t, b.SaveSafetensors(""), dptrain.StatusInvalidArgument, "empty path")
	if cb2, err := b.Checksum(); err != nil || cb2 != cb {
		t.Fatalf("a refused file changed the trainer: %s -> %s (%v)", cb, cb2, err)
	}
	must(t, b.Close())
	wantClosed(t, b.SaveSafetensors(path))
	wantClosed(t, b.LoadSafetensors(path))
	_, err = b.Buffers()
	wantClosed(t, err)
}

func TestBuffersChangeAfterAStep(t *testing.T) {
	m := residualModel(t)
	tr := newTrainer(t, newContext(t, 2), m, &dptrain.TrainerOptions{Seed: 3})
	n, err := tr.BufferCount()
	must(t, err)
	want, err := m.BufferCount()
	must(t, err)
	if n != want || n == 0 {
		t.Fatalf("Trainer.BufferCount() = %d, Model.BufferCount() = %d", n, want)
	}
	before, err := tr.Buffers()
	must(t, err)
	x, y := tinyBatch(16, 5)
	_, err = tr.Step(x, y)
	must(t, err)
	after, err := tr.Buffers()
	must(t, err)
	if bitwiseEqual(before, after) {
		t.Fatal("the running statistics did not change in a training step")
	}
	// Evaluation reads the running statistics but does not change them.
	_, err = tr.Evaluate(x, y)
	must(t, err)
	again, err := tr.Buffers()
	must(t, err)
	if !bitwiseEqual(after, again) {
		t.Fatal("Evaluate changed the running statistics")
	}

	// SetBuffers reaches every replica; ReadBuffers reads them back.
	set := make([]float32, n)
	for i := range set {
		set[i] = float32(i%7) + 0.5
	}
	must(t, tr.SetBuffers(set))
	got := make([]float32, n)
	must(t, tr.ReadBuffers(got))
	if !bitwiseEqual(set, got) {
		t.Fatal("ReadBuffers does not return what SetBuffers set")
	}
	wantError(t, tr.SetBuffers(make([]float32, n+1)), dptrain.StatusSizeMismatch)
	wantError(t, tr.ReadBuffers(make([]float32, n-1)), dptrain.StatusSizeMismatch)
	wantError(t, tr.SetBuffers(nil), dptrain.StatusNullPointer, "src is nil")
	wantError(t, tr.ReadBuffers(nil), dptrain.StatusNullPointer, "dst is nil")

	// A model without batch norm has no buffers.
	plain := newTrainer(t, newContext(t, 1), tinyModel(t), nil)
	b, err := plain.Buffers()
	must(t, err)
	if len(b) != 0 {
		t.Fatalf("a model without batch norm has %d buffer floats", len(b))
	}
}

func TestBatchNormModes(t *testing.T) {
	m := residualModel(t)
	x, y := tinyBatch(16, 6)
	params := func(devices int, mode dptrain.BatchNormMode) []float32 {
		tr := newTrainer(t, newContext(t, devices), m, &dptrain.TrainerOptions{Seed: 4, BatchNorm: mode})
		_, err := tr.Step(x, y)
		must(t, err)
		p, err := tr.Parameters()
		must(t, err)
		return p
	}
	one := params(1, dptrain.BatchNormSync)
	sync := params(2, dptrain.BatchNormSync)
	local := params(2, dptrain.BatchNormLocal)
	if d := maxDiff(one, sync); d > 1e-5 {
		t.Errorf("synchronised batch norm: 2 devices differ from 1 by %g", d)
	}
	if d := maxDiff(sync, local); d <= 1e-5 {
		t.Errorf("local batch norm on 2 devices is the synchronised one (difference %g)", d)
	}
	if local1 := params(1, dptrain.BatchNormLocal); maxDiff(one, local1) > 1e-5 {
		t.Error("on one device the two modes differ")
	}
}

// The model and data of TestRecomputeBatchNorm: 2x3x3 samples whose first op is a batch norm on the input
// itself, so that its running statistics are the data's, computed here.
const bnC, bnH, bnW, bnSamples = 2, 3, 3, 10

// bnFirstModel is 2x3x3 -> batch norm "bn" -> flatten -> dense 3 "fc".
func bnFirstModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(bnC, bnH, bnW)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	x, err := m.BatchNorm(dptrain.InputTensor, 1e-5, 0.1, "bn")
	must(t, err)
	x, err = m.Flatten(x, "flatten")
	must(t, err)
	_, err = m.Dense(x, 3, true, "fc")
	must(t, err)
	return m
}

// bnData: bnSamples samples, channel 0 in [1, 3.5] and channel 1 in [-4, 0], so that every mean and variance
// is well away from 0 (a relative tolerance means something); labels s % 3.
func bnData() ([]float32, []int32) {
	const pixels = bnH * bnW
	x := make([]float32, bnSamples*bnC*pixels)
	y := make([]int32, bnSamples)
	for s := 0; s < bnSamples; s++ {
		y[s] = int32(s % 3)
		for p := 0; p < pixels; p++ {
			x[(s*bnC+0)*pixels+p] = 1 + float32((s*7+p*3)%11)/4
			x[(s*bnC+1)*pixels+p] = -4 + float32((s*5+p*2+1)%13)/3
		}
	}
	return x, y
}

// wantBatchNormStatistics is what recomputing leaves, in double: per channel, the average over the batches
// (the first samples samples in batches of batch; 0 = all and 256) of each batch's mean, then of its unbiased
// variance over samples and pixels, in the order of the buffers (running_mean [C], then running_var [C]).
func wantBatchNormStatistics(x []float32, batch, samples int) []float64 {
	const pixels = bnH * bnW
	if samples == 0 || samples > bnSamples {
		samples = bnSamples
	}
	if batch == 0 {
		batch = 256
	}
	want := make([]float64, 2*bnC)
	batches := 0
	for start := 0; start < samples; start += batch {
		end := start + batch
		if end > samples {
			end = samples
		}
		n := float64((end - start) * pixels)
		for c := 0; c < bnC; c++ {
			sum := 0.0
			for s := start; s < end; s++ {
				for p := 0; p < pixels; p++ {
					sum += float64(x[(s*bnC+c)*pixels+p])
				}
			}
			mean, squares := sum/n, 0.0
			for s := start; s < end; s++ {
				for p := 0; p < pixels; p++ {
					d := float64(x[(s*bnC+c)*pixels+p]) - mean
					squares += d * d
				}
			}
			want[c] += mean
			want[bnC+c] += squares / (n - 1)
		}
		batches++
	}
	for i := range want {
		want[i] /= float64(batches)
	}
	return want
}

// TestRecomputeBatchNorm: RecomputeBatchNorm (PyTorch's update_bn) sets the running statistics of a batch
// norm on the input to the average of the batches' means and unbiased variances, on 2 CPU devices; the
// parameters and the step count do not move; bad input is refused and leaves the trainer usable.
func TestRecomputeBatchNorm(t *testing.T) {
	m := bnFirstModel(t)
	buffers, err := m.NamedBuffers()
	must(t, err)
	if len(buffers) != 2 || buffers[0].Name != "bn.running_mean" || buffers[0].Offset != 0 ||
		buffers[1].Name != "bn.running_var" || buffers[1].Offset != bnC || buffers[1].Size() != bnC {
		t.Fatalf("NamedBuffers() = %+v, want bn.running_mean at 0 and bn.running_var at %d, %d each", buffers, bnC, bnC)
	}
	tr := newTrainer(t, newContext(t, 2), m, &dptrain.TrainerOptions{Seed: 3})
	x, y := bnData()
	d, err := dptrain.NewDataset(x, y, bnC, bnH, bnW, 3)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	_, err = tr.Step(x[:4*bnC*bnH*bnW], y[:4]) // parameters and statistics that are not the initial ones
	must(t, err)
	params, err := tr.Parameters()
	must(t, err)
	steps, err := tr.StepCount()
	must(t, err)

	check := func(batch, samples int) {
		t.Helper()
		want := wantBatchNormStatistics(x, batch, samples)
		got, err := tr.Buffers()
		must(t, err)
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-5*math.Abs(want[i]) {
				t.Fatalf("batches of %d, %d samples: buffer %d is %v, want %v (all: %v, want %v)",
					batch, samples, i, got[i], want[i], got, want)
			}
		}
	}
	// Batches of 4, 4 and 2 (the brief's case); 4 and 2 of the first 6 (batch size and sample count are not
	// swapped); one batch of 256 = all; 3, 3, 3 and 1 of "more than the dataset holds" (one device's slice of
	// the last batch is empty).
	for _, c := range []struct{ batch, samples int }{{4, 0}, {4, 6}, {0, 0}, {3, 100}} {
		// Values no recomputation leaves: the result must not depend on what was there.
		must(t, tr.SetBuffers([]float32{7, 7, 7, 7}))
		must(t, tr.RecomputeBatchNorm(d, c.batch, c.samples))
		check(c.batch, c.samples)
	}
	if p, err := tr.Parameters(); err != nil || !bitwiseEqual(p, params) {
		t.Fatalf("RecomputeBatchNorm changed the parameters (%v)", err)
	}
	if s, err := tr.StepCount(); err != nil || s != steps {
		t.Fatalf("RecomputeBatchNorm changed the step count: %d -> %d (%v)", steps, s, err)
	}

	// Bad input is refused before anything changes. (An empty dataset cannot be made: NewDataset and Subset
	// refuse 0 samples.)
	must(t, tr.RecomputeBatchNorm(d, 4, 0))
	before, err := tr.Buffers()
	must(t, err)
	wantError(t, tr.RecomputeBatchNorm(nil, 4, 0), dptrain.StatusNullPointer, "dataset is nil")
	wantError(t, tr.RecomputeBatchNorm(d, -4, 0), dptrain.StatusOutOfRange, "batchSize is negative")
	wantError(t, tr.RecomputeBatchNorm(d, 4, -1), dptrain.StatusOutOfRange, "samples is negative")
	wantError(t, tr.RecomputeBatchNorm(tinyDataset(t, 8, 1), 4, 0), dptrain.StatusSizeMismatch,
		"dpt_trainer_recompute_batch_norm")
	tokens, err := dptrain.NewTokenDataset(make([]int32, 2*bnC*bnH*bnW), []int32{0, 1}, 2, bnC*bnH*bnW, 3)
	must(t, err)
	t.Cleanup(func() { tokens.Close() })
	wantError(t, tr.RecomputeBatchNorm(tokens, 4, 0), dptrain.StatusInvalidArgument)
	closed, err := dptrain.NewDataset(x, y, bnC, bnH, bnW, 3)
	must(t, err)
	must(t, closed.Close())
	wantClosed(t, tr.RecomputeBatchNorm(closed, 4, 0))
	if after, err := tr.Buffers(); err != nil || !bitwiseEqual(before, after) {
		t.Fatalf("a refused call changed the running statistics (%v)", err)
	}
	// ... and the trainer stays usable.
	must(t, tr.SetBuffers([]float32{7, 7, 7, 7}))
	must(t, tr.RecomputeBatchNorm(d, 4, 0))
	check(4, 0)
	_, err = tr.Step(x[:4*bnC*bnH*bnW], y[:4])
	must(t, err)

	// A model without batch norm: nothing to do, no error.
	plain := newTrainer(t, newContext(t, 1), tinyModel(t), nil)
	must(t, plain.RecomputeBatchNorm(tinyDataset(t, 8, 2), 4, 0))
	// A pipeline averages its micro-batches' statistics (each batch cut as a training step cuts it): 2
	// stages with 2 micro-batches, over the first 8 samples in batches of 4, see micro-batches of 2, 2, 2 and
	// 2, as one device does in batches of 2.
	pipe := newTrainer(t, newContext(t, 2), m, &dptrain.TrainerOptions{Seed: 3, PipelineStages: 2, MicroBatches: 2})
	must(t, pipe.SetBuffers([]float32{7, 7, 7, 7})) // no recomputation leaves these
	must(t, pipe.RecomputeBatchNorm(d, 4, 8))
	one := newTrainer(t, newContext(t, 1), m, &dptrain.TrainerOptions{Seed: 3})
	must(t, one.RecomputeBatchNorm(d, 2, 8))
	got, err := pipe.Buffers()
	must(t, err)
	want, err := one.Buffers()
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("the pipeline has %d buffers, one device %d", len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-float64(want[i])) > 1e-6*math.Abs(float64(want[i])) {
			t.Fatalf("pipeline, batches of 4 in 2 micro-batches: buffer %d is %v, one device's in batches of 2 %v "+
				"(all: %v, want %v)", i, got[i], want[i], got, want)
		}
	}
}

// TestPrecision: the default is float32; bf16 matrix products (the residual model's conv2d and dense) train
// on 2 devices to other parameters than float32's (not float32 under another name) that stay within 2e-2 of
// them (relative, over the whole vector), to the same bits on every run with the same seed; a precision
// outside the enum is refused.
func TestPrecision(t *testing.T) {
	if (dptrain.TrainerOptions{}).Precision != dptrain.PrecisionFP32 {
		t.Fatal("the zero TrainerOptions is not PrecisionFP32")
	}
	m := residualModel(t)
	x, y := tinyBatch(16, 6)
	ctx := newContext(t, 2)
	params := func(opts *dptrain.TrainerOptions) []float32 {
		t.Helper()
		tr := newTrainer(t, ctx, m, opts)
		if n, err := tr.DeviceCount(); err != nil || n != 2 {
			t.Fatalf("DeviceCount() = %d, %v; want 2", n, err)
		}
		for i := 0; i < 3; i++ {
			_, err := tr.Step(x, y)
			must(t, err)
		}
		p, err := tr.Parameters()
		must(t, err)
		return p
	}
	byDefault := params(&dptrain.TrainerOptions{Seed: 5})
	fp32 := params(&dptrain.TrainerOptions{Seed: 5, Precision: dptrain.PrecisionFP32})
	bf16 := params(&dptrain.TrainerOptions{Seed: 5, Precision: dptrain.PrecisionBF16})
	again := params(&dptrain.TrainerOptions{Seed: 5, Precision: dptrain.PrecisionBF16})
	if !bitwiseEqual(byDefault, fp32) {
		t.Error("the default precision does not train as PrecisionFP32")
	}
	if bitwiseEqual(fp32, bf16) {
		t.Fatal("PrecisionBF16 trains to float32's bits")
	}
	if d := relativeDiff(bf16, fp32); d > 2e-2 {
		t.Errorf("PrecisionBF16 differs from float32 by %g relative, more than 2e-2", d)
	}
	if !bitwiseEqual(bf16, again) {
		t.Error("two PrecisionBF16 runs with the same seed differ")
	}
	_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Precision: dptrain.Precision(3)})
	wantError(t, err, dptrain.StatusInvalidArgument, "precision")
	_, err = dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Precision: dptrain.Precision(-1)})
	wantError(t, err, dptrain.StatusInvalidArgument, "precision")
}

// relativeDiff is |a - b| / |b| in the Euclidean norm.
func relativeDiff(a, b []float32) float64 {
	var d, n float64
	for i := range a {
		d += (float64(a[i]) - float64(b[i])) * (float64(a[i]) - float64(b[i]))
		n += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(d / n)
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func TestBuiltinResNet18(t *testing.T) {
	m, err := dptrain.BuiltinModel("resnet18")
	must(t, err)
	defer m.Close()
	n, err := m.ParameterCount()
	must(t, err)
	if n != 11172810 {
		t.Fatalf("resnet18 has %d parameters, want 11172810", n)
	}
	params, err := m.NamedParameters()
	must(t, err)
	checkCover(t, params, n, dptrain.TensorParameter)
	buffers, err := m.NamedBuffers()
	must(t, err)
	count, err := m.BufferCount()
	must(t, err)
	checkCover(t, buffers, count, dptrain.TensorBuffer)
	found := false
	for _, b := range buffers {
		if b.Name == "layer2.0.downsample.1.running_mean" {
			found = true
			if !reflect.DeepEqual(b.Shape, []int{128}) {
				t.Errorf("%s has shape %v, want [128]", b.Name, b.Shape)
			}
		}
	}
	if !found {
		t.Fatalf("no buffer layer2.0.downsample.1.running_mean among %v", names(buffers))
	}
	if params[0].Name != "conv1.weight" || !reflect.DeepEqual(params[0].Shape, []int{64, 1, 3, 3}) {
		t.Errorf("first parameter %q %v", params[0].Name, params[0].Shape)
	}
}

func TestGraphErrors(t *testing.T) {
	m := residualModel(t)
	before, err := m.ToJSON()
	must(t, err)
	n, err := m.TensorCount()
	must(t, err)
	bad := dptrain.Tensor(n) // one past the last tensor

	_, err = m.Conv2D(bad, 4, 3, 1, 1, true, "")
	wantError(t, err, dptrain.StatusInvalidArgument, "Model.Conv2D")
	_, err = m.Add(dptrain.InputTensor, bad, "")
	wantError(t, err, dptrain.StatusInvalidArgument, "Model.Add")
	_, err = m.Dense(-1, 3, true, "")
	wantError(t, err, dptrain.StatusInvalidArgument, "does not exist")
	wantError(t, m.SetOutput(bad), dptrain.StatusInvalidArgument)
	_, err = m.TensorShape(bad)
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = m.Add(1, 20, "") // [8, 4, 4] + [16]: shapes differ
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = m.Activation(1, dptrain.ReLU, "bn1") // a taken name
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = m.Activation(1, dptrain.ReLU, "bad name")
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = m.Activation(1, dptrain.ReLU, "a\x00b")
	wantError(t, err, dptrain.StatusInvalidArgument, "NUL")
	_, err = m.Conv2D(dptrain.InputTensor, -4, 3, 1, 1, true, "")
	wantError(t, err, dptrain.StatusOutOfRange, "outChannels is negative")
	_, err = m.Dropout(1, 1.5, "")
	wantError(t, err, dptrain.StatusOutOfRange)
	_, err = m.Concat([]dptrain.Tensor{1}, "")
	wantError(t, err, dptrain.StatusInvalidArgument, "1 inputs")
	_, err = m.NamedTensors(dptrain.TensorKind(7))
	wantError(t, err, dptrain.StatusInvalidArgument)

	// A failed call leaves the model unchanged.
	after, err := m.ToJSON()
	must(t, err)
	if before != after {
		t.Fatal("a refused builder changed the model")
	}

	// Concat and SetOutput work on good ids.
	c, err := m.Concat([]dptrain.Tensor{1, 1}, "cat2")
	must(t, err)
	c3, err := m.Concat([]dptrain.Tensor{1, 1, c}, "cat3")
	must(t, err)
	if shape, err := m.TensorShape(c3); err != nil || !reflect.DeepEqual(shape, []int{32, 4, 4}) {
		t.Fatalf("concat of 8 + 8 + 16 channels: %v, %v", shape, err)
	}
	if _, err := m.Activation(c3, dptrain.GELU, "gelu"); err != nil {
		t.Fatal(err)
	}
	out := dptrain.Tensor(n - 1)
	must(t, m.SetOutput(out))
	if got, err := m.Output(); err != nil || got != out {
		t.Fatalf("Output() = %d, %v after SetOutput(%d)", got, err, out)
	}

	must(t, m.Close())
	_, err = m.Conv2D(dptrain.InputTensor, 4, 3, 1, 1, true, "")
	wantClosed(t, err)
	_, err = m.NamedParameters()
	wantClosed(t, err)
	_, err = m.ToJSON()
	wantClosed(t, err)
	var e *dptrain.Error
	if !errors.As(err, &e) || e.Op != "Model.ToJSON" {
		t.Fatalf("error %v", err)
	}
	var nilModel *dptrain.Model
	_, err = nilModel.Flatten(dptrain.InputTensor, "")
	wantError(t, err, dptrain.StatusNullPointer)
}

func TestTensorKindString(t *testing.T) {
	for k, want := range map[dptrain.TensorKind]string{
		dptrain.TensorParameter: "parameter", dptrain.TensorBuffer: "buffer", 5: "TensorKind(5)",
	} {
		if got := fmt.Sprint(k); got != want {
			t.Errorf("%d: %q, want %q", int(k), got, want)
		}
	}
}
