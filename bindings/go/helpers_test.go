package dptrain_test

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"dptrain.org/dptrain"
)

// A small problem that trains in milliseconds: 3 classes of 1x4x4 inputs, each class a fixed pattern
// plus deterministic noise, classified by a 16-unit MLP.
const (
	tinyC, tinyH, tinyW = 1, 4, 4
	tinyIn              = tinyC * tinyH * tinyW
	tinyClasses         = 3
)

func tinyModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(tinyC, tinyH, tinyW)
	must(t, err)
	must(t, m.AddDense(16))
	must(t, m.AddActivation(dptrain.ReLU))
	must(t, m.AddDense(tinyClasses))
	t.Cleanup(func() { m.Close() })
	return m
}

// tinyBatch returns n samples: inputs (n * tinyIn floats) and labels.
func tinyBatch(n int, seed uint32) ([]float32, []int32) {
	x := make([]float32, n*tinyIn)
	y := make([]int32, n)
	state := seed*2654435761 + 1
	for s := 0; s < n; s++ {
		label := int32(s % tinyClasses)
		y[s] = label
		for i := 0; i < tinyIn; i++ {
			state = state*1664525 + 1013904223
			noise := float32(state>>8)/float32(1<<24) - 0.5
			signal := float32(0)
			if i%tinyClasses == int(label) {
				signal = 1
			}
			x[s*tinyIn+i] = signal + 0.3*noise
		}
	}
	return x, y
}

func newContext(t *testing.T, devices int) *dptrain.Context {
	t.Helper()
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: devices})
	must(t, err)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

func newTrainer(t *testing.T, ctx *dptrain.Context, m *dptrain.Model, opts *dptrain.TrainerOptions) *dptrain.Trainer {
	t.Helper()
	tr, err := dptrain.NewTrainer(ctx, m, opts)
	must(t, err)
	t.Cleanup(func() { tr.Close() })
	return tr
}

func tinyDataset(t *testing.T, n int, seed uint32) *dptrain.Dataset {
	t.Helper()
	x, y := tinyBatch(n, seed)
	d, err := dptrain.NewDataset(x, y, tinyC, tinyH, tinyW, tinyClasses)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantError checks that err is a *dptrain.Error with the status, its category, and a message that
// contains every fragment.
func wantError(t *testing.T, err error, status dptrain.Status, fragments ...string) *dptrain.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %v error, got nil", status)
	}
	var e *dptrain.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *dptrain.Error, got %T: %v", err, err)
	}
	if e.Status != status {
		t.Fatalf("status: want %d (%v), got %d (%v); error %q", int(status), status, int(e.Status), e.Status, err)
	}
	if e.Category != status.Category() {
		t.Fatalf("category: want %v, got %v", status.Category(), e.Category)
	}
	if !errors.Is(err, status) || !errors.Is(err, status.Category()) {
		t.Fatalf("errors.Is does not match status %v / category %v: %v", status, status.Category(), err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not mention %q", err, f)
		}
	}
	return e
}

func wantClosed(t *testing.T, err error) {
	t.Helper()
	wantError(t, err, dptrain.StatusInvalidState, "closed")
	if !errors.Is(err, dptrain.ErrClosed) {
		t.Fatalf("want errors.Is(err, ErrClosed): %v", err)
	}
}

func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

func bitwiseEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
