package dptrain_test

import (
	"fmt"
	"regexp"
	"runtime"
	"testing"
	"time"

	"dptrain.org/dptrain"
)

func TestVersion(t *testing.T) {
	v := dptrain.Version()
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("Version() = %q, want major.minor.patch", v)
	}
	n := dptrain.VersionNumber()
	if n <= 0 || v[:len(m[0])] != versionText(n) {
		t.Fatalf("VersionNumber() = %d does not match Version() = %q", n, v)
	}
}

// The module and the library it is built against come from one project version (ctest go_module_version
// checks BindingVersion against the top CMakeLists.txt).
func TestBindingVersionMatchesLibrary(t *testing.T) {
	if v := dptrain.Version(); v != dptrain.BindingVersion {
		t.Fatalf("library Version() = %q, module BindingVersion = %q", v, dptrain.BindingVersion)
	}
	if n := dptrain.VersionNumber(); versionText(n) != dptrain.BindingVersion {
		t.Fatalf("VersionNumber() = %d, module BindingVersion = %q", n, dptrain.BindingVersion)
	}
}

func versionText(n int) string { return fmt.Sprintf("%d.%d.%d", n/10000, n/100%100, n%100) }

func TestContextLifecycle(t *testing.T) {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2, CPUMemoryLimit: 1 << 30})
	must(t, err)
	n, err := ctx.DeviceCount()
	must(t, err)
	if n != 2 {
		t.Fatalf("DeviceCount = %d, want 2", n)
	}
	devices, err := ctx.Devices()
	must(t, err)
	for i, d := range devices {
		if d.Kind != dptrain.DeviceCPU || d.Ordinal != i || d.Name != fmt.Sprintf("cpu:%d", i) || d.MemoryLimit != 1<<30 ||
			d.TotalMemory != 1<<30 {
			t.Fatalf("device %d: %+v", i, d)
		}
	}
	must(t, ctx.Close())
	must(t, ctx.Close()) // idempotent
	_, err = ctx.DeviceCount()
	wantClosed(t, err)
	_, err = ctx.Device(0)
	wantClosed(t, err)
}

func TestModelLifecycle(t *testing.T) {
	m, err := dptrain.BuiltinModel("lenet")
	must(t, err)
	params, err := m.ParameterCount()
	must(t, err)
	if params != 129068 { // conv 20x1x3x3+20, conv 50x20x5x5+50, dense 800x128+128, dense 128x10+10
		t.Fatalf("lenet ParameterCount = %d, want 129068", params)
	}
	in, err := m.InputSize()
	must(t, err)
	out, err := m.OutputSize()
	must(t, err)
	layers, err := m.LayerCount()
	must(t, err)
	desc, err := m.Describe()
	must(t, err)
	if in != 784 || out != 10 || layers < 8 || !regexp.MustCompile(`^1x28x28 conv3x3.* dense:10$`).MatchString(desc) {
		t.Fatalf("lenet: input %d output %d layers %d %q", in, out, layers, desc)
	}
	must(t, m.Close())
	must(t, m.Close())
	_, err = m.ParameterCount()
	wantClosed(t, err)
	wantClosed(t, m.AddDense(3))
	_, err = m.Describe()
	wantClosed(t, err)
}

func TestBuiltModel(t *testing.T) {
	m, err := dptrain.NewModel(1, 8, 8)
	must(t, err)
	defer m.Close()
	must(t, m.AddConv2D(4, 3, 1, 1))
	must(t, m.AddActivation(dptrain.Tanh))
	must(t, m.AddPool(dptrain.PoolMax, 2, 2))
	must(t, m.AddFlatten())
	must(t, m.AddDropout(0.25))
	must(t, m.AddDense(5))
	params, err := m.ParameterCount()
	must(t, err)
	if want := 4*1*3*3 + 4 + 4*4*4*5 + 5; params != want {
		t.Fatalf("ParameterCount = %d, want %d", params, want)
	}
	out, err := m.OutputSize()
	must(t, err)
	if out != 5 {
		t.Fatalf("OutputSize = %d, want 5", out)
	}
}

func TestDatasetLifecycle(t *testing.T) {
	x, y := tinyBatch(10, 1)
	d, err := dptrain.NewDataset(x, y, tinyC, tinyH, tinyW, tinyClasses)
	must(t, err)
	n, err := d.Len()
	must(t, err)
	c, h, w, err := d.Shape()
	must(t, err)
	classes, err := d.ClassCount()
	must(t, err)
	if n != 10 || c != tinyC || h != tinyH || w != tinyW || classes != tinyClasses {
		t.Fatalf("dataset: %d samples %dx%dx%d, %d classes", n, c, h, w, classes)
	}
	// Copies out into the caller's slices, bit for bit.
	sub, err := d.Subset(3, 4)
	must(t, err)
	gotX := make([]float32, 4*tinyIn)
	gotY := make([]int32, 4)
	must(t, sub.CopyBatch(0, 4, gotX, gotY))
	if !bitwiseEqual(gotX, x[3*tinyIn:7*tinyIn]) {
		t.Fatal("subset inputs differ from the source")
	}
	for i := range gotY {
		if gotY[i] != y[3+i] {
			t.Fatalf("label %d: %d, want %d", i, gotY[i], y[3+i])
		}
	}
	must(t, d.Close())
	must(t, d.Close())
	_, err = d.Len()
	wantClosed(t, err)
	_, err = d.Subset(0, 1)
	wantClosed(t, err)
	// The subset is independent of its source.
	n, err = sub.Len()
	must(t, err)
	if n != 4 {
		t.Fatalf("subset Len = %d, want 4", n)
	}
	must(t, sub.Close())
}

func TestTrainerLifecycle(t *testing.T) {
	ctx := newContext(t, 2)
	m := tinyModel(t)
	tr, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Seed: 7})
	must(t, err)
	// The trainer keeps its own copy of the model.
	must(t, m.Close())
	devices, err := tr.DeviceCount()
	must(t, err)
	if devices != 2 {
		t.Fatalf("trainer DeviceCount = %d, want 2", devices)
	}
	x, y := tinyBatch(8, 2)
	_, err = tr.Step(x, y)
	must(t, err)
	must(t, tr.Close())
	must(t, tr.Close())
	_, err = tr.Step(x, y)
	wantClosed(t, err)
	_, err = tr.Checksum()
	wantClosed(t, err)
	_, err = tr.Fit(tinyDataset(t, 8, 1), nil, nil)
	wantClosed(t, err)
	// A closed model, context or dataset cannot be used to build or train.
	m2 := tinyModel(t)
	must(t, ctx.Close())
	_, err = dptrain.NewTrainer(ctx, m2, nil)
	wantClosed(t, err)
}

// As in the C API, a trainer may outlive its context: closing the context neither closes nor changes it.
func TestContextOutlivesItsTrainers(t *testing.T) {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	must(t, err)
	tr := newTrainer(t, ctx, tinyModel(t), &dptrain.TrainerOptions{Seed: 9})
	reference := newTrainer(t, newContext(t, 2), tinyModel(t), &dptrain.TrainerOptions{Seed: 9})
	must(t, ctx.Close()) // the native context is released once the trainer is closed
	_, err = ctx.DeviceCount()
	wantClosed(t, err)
	// Same seed, same batches: it trains exactly like the trainer whose context is open.
	x, y := tinyBatch(6, 3)
	for i := 0; i < 3; i++ {
		got, err := tr.Step(x, y)
		must(t, err)
		want, err := reference.Step(x, y)
		must(t, err)
		if got.Loss != want.Loss {
			t.Fatalf("step %d: loss %v, the reference trainer's %v", i, got.Loss, want.Loss)
		}
	}
	data := tinyDataset(t, 24, 4)
	for _, trainer := range []*dptrain.Trainer{tr, reference} {
		r, err := trainer.Fit(data, nil, &dptrain.FitOptions{Epochs: 2, BatchSize: 8})
		must(t, err)
		if r.EpochsCompleted != 2 {
			t.Fatalf("EpochsCompleted = %d, want 2", r.EpochsCompleted)
		}
	}
	got, err := tr.Checksum()
	must(t, err)
	want, err := reference.Checksum()
	must(t, err)
	if got != want {
		t.Fatalf("checksum %s, the reference trainer's %s", got, want)
	}
	must(t, tr.Close())
}

// memoryInUse is the bytes the context's devices hold (trainers' replicas live there).
func memoryInUse(t *testing.T, ctx *dptrain.Context) uint64 {
	t.Helper()
	devices, err := ctx.Devices()
	must(t, err)
	var n uint64
	for _, d := range devices {
		n += d.MemoryInUse
	}
	return n
}

// A context keeps no references to its trainers: unclosed ones are freed by their finalizers.
func TestDroppedTrainersOfALongLivedContextAreFreed(t *testing.T) {
	ctx := newContext(t, 2)
	baseline := memoryInUse(t, ctx)
	for i := 0; i < 50; i++ {
		_, err := dptrain.NewTrainer(ctx, tinyModel(t), nil)
		must(t, err)
	}
	alive := memoryInUse(t, ctx)
	if alive <= baseline {
		t.Fatalf("50 trainers hold %d bytes, baseline %d", alive, baseline)
	}
	now := alive
	for i := 0; i < 100 && now != baseline; i++ {
		runtime.GC() // finalizers run on their own goroutine: give them time
		time.Sleep(10 * time.Millisecond)
		now = memoryInUse(t, ctx)
	}
	if now != baseline {
		t.Fatalf("dropped trainers still hold %d bytes (baseline %d, alive %d)", now, baseline, alive)
	}
}

func TestFinalizersReleaseForgottenHandles(t *testing.T) {
	for i := 0; i < 5; i++ {
		ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
		must(t, err)
		m, err := dptrain.BuiltinModel("mlp")
		must(t, err)
		_, err = dptrain.NewTrainer(ctx, m, nil)
		must(t, err)
		// No Close: the finalizers release the trainer, then the context and the model.
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
}
