package dptrain_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dptrain.org/dptrain"
)

func TestLibraryErrorsCarryStatusCategoryAndMessage(t *testing.T) {
	_, err := dptrain.BuiltinModel("resnet")
	e := wantError(t, err, dptrain.StatusInvalidArgument, "BuiltinModel", "resnet")
	if e.Op != "BuiltinModel" || e.Message == "" || e.Err != nil {
		t.Fatalf("error fields: %+v", e)
	}
	if !errors.Is(err, dptrain.ErrInvalidArgument) || errors.Is(err, dptrain.ErrIO) {
		t.Fatalf("category sentinels: %v", err)
	}

	_, err = dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: dptrain.MaxCPUDevices + 1})
	wantError(t, err, dptrain.StatusOutOfRange, "65")

	missing := filepath.Join(t.TempDir(), "missing-images.gz")
	_, err = dptrain.LoadIDX(missing, missing)
	wantError(t, err, dptrain.StatusIO, "missing-images.gz")
	if !errors.Is(err, dptrain.ErrIO) || !errors.Is(err, dptrain.CategoryIO) {
		t.Fatalf("I/O category: %v", err)
	}

	garbage := filepath.Join(t.TempDir(), "garbage")
	must(t, os.WriteFile(garbage, []byte("not an IDX file at all"), 0o600))
	_, err = dptrain.LoadIDX(garbage, garbage)
	wantError(t, err, dptrain.StatusFormat)

	ctx := newContext(t, 2)
	_, err = ctx.Device(2)
	wantError(t, err, dptrain.StatusDeviceNotFound)
	if !errors.Is(err, dptrain.ErrDevice) {
		t.Fatalf("device category: %v", err)
	}

	_, err = dptrain.NewTrainer(ctx, tinyModel(t), &dptrain.TrainerOptions{Devices: []int{0, 0}})
	wantError(t, err, dptrain.StatusInvalidArgument)
	_, err = dptrain.NewTrainer(ctx, tinyModel(t), &dptrain.TrainerOptions{Devices: []int{5}})
	wantError(t, err, dptrain.StatusDeviceNotFound)
}

func TestErrorsDoNotLeakIntoLaterCalls(t *testing.T) {
	// A failed call leaves nothing behind: the next call on the same goroutine succeeds.
	for i := 0; i < 3; i++ {
		_, err := dptrain.BuiltinModel("nope")
		wantError(t, err, dptrain.StatusInvalidArgument)
		m, err := dptrain.BuiltinModel("mlp")
		must(t, err)
		must(t, m.Close())
	}
}

func TestStatusNames(t *testing.T) {
	for _, c := range []struct {
		status   dptrain.Status
		category dptrain.Category
	}{
		{dptrain.StatusOK, dptrain.CategoryNone},
		{dptrain.StatusSizeMismatch, dptrain.CategoryInvalidArgument},
		{dptrain.StatusBusy, dptrain.CategoryInvalidArgument},
		{dptrain.StatusUnsupported, dptrain.CategoryUnsupported},
		{dptrain.StatusOutOfMemory, dptrain.CategoryDevice},
		{dptrain.StatusTimeout, dptrain.CategoryCommunication},
		{dptrain.StatusFormat, dptrain.CategoryIO},
		{dptrain.StatusInternal, dptrain.CategoryInternal},
	} {
		if c.status.Category() != c.category {
			t.Errorf("%d: category %v, want %v", int(c.status), c.status.Category(), c.category)
		}
		if c.status.String() == "" {
			t.Errorf("%d: empty name", int(c.status))
		}
	}
	if got := dptrain.StatusSizeMismatch.String(); got != "size mismatch" {
		t.Errorf("StatusSizeMismatch.String() = %q", got)
	}
	if got := dptrain.StatusBusy.String(); got != "busy" {
		t.Errorf("StatusBusy.String() = %q", got)
	}
}
