package dptrain_test

import (
	"testing"

	"dptrain.org/dptrain"
)

// The fixed cost the Go layer adds to a call (handle check, LockOSThread, the cgo call, the error-slot
// check): go test -run '^$' -bench . (the LeNet step protocol itself is cmd/step_overhead).
func BenchmarkCallOverhead(b *testing.B) {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ctx.DeviceCount(); err != nil {
			b.Fatal(err)
		}
	}
}

// A whole Step (with its 11-field result) on a tiny model: an upper bound of the per-step binding cost
// plus the library's own fixed cost of a step on 2 devices.
func BenchmarkStepTinyModel(b *testing.B) {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	m, err := dptrain.NewModel(1, 4, 4)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.AddDense(3); err != nil {
		b.Fatal(err)
	}
	tr, err := dptrain.NewTrainer(ctx, m, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	x, y := tinyBatch(4, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Step(x, y); err != nil {
			b.Fatal(err)
		}
	}
}
