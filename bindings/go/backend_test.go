package dptrain_test

import (
	"strings"
	"testing"

	"dptrain.org/dptrain"
)

// A CPU-only context (the default) never asks for CUDA; an "all" context does, and explains zero GPUs.
func TestBackendInfo(t *testing.T) {
	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
	must(t, err)
	cuda, err := ctx.Backend(dptrain.DeviceCUDA)
	must(t, err)
	if cuda.Requested || cuda.Loaded || cuda.DeviceCount != 0 || !strings.Contains(cuda.Reason, "not requested") {
		t.Fatalf("CPU-only context, CUDA backend: %+v", cuda)
	}
	cpu, err := ctx.Backend(dptrain.DeviceCPU)
	must(t, err)
	if !cpu.Requested || !cpu.Loaded || cpu.DeviceCount != 2 || cpu.Reason != "" {
		t.Fatalf("CPU backend: %+v", cpu)
	}
	if _, err := ctx.Backend(dptrain.DeviceKind(7)); err == nil {
		t.Fatal("Backend(7) did not fail")
	}
	must(t, ctx.Close())

	all, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2, Devices: dptrain.DevicesAll})
	must(t, err)
	defer all.Close()
	cuda, err = all.Backend(dptrain.DeviceCUDA)
	must(t, err)
	n, err := all.DeviceCount()
	must(t, err)
	if !cuda.Requested || n != 2+cuda.DeviceCount || (cuda.DeviceCount == 0 && cuda.Reason == "") {
		t.Fatalf("all-devices context (%d devices), CUDA backend: %+v", n, cuda)
	}
	t.Logf("CUDA backend: %+v", cuda)
	d, err := all.Device(0)
	must(t, err)
	if d.FreeMemory != d.TotalMemory-d.MemoryInUse || d.ComputeCapabilityMajor != 0 || d.ProductName != "" {
		t.Fatalf("cpu:0: %+v", d)
	}
	can, err := all.CanAccessPeer(0, 1)
	must(t, err)
	if can {
		t.Fatal("CPU devices report peer access")
	}
	if _, err := all.CanAccessPeer(0, n); err == nil {
		t.Fatal("CanAccessPeer past the last device did not fail")
	}
	if _, err := dptrain.NewContext(&dptrain.ContextOptions{Devices: dptrain.DeviceSelection(9)}); err == nil {
		t.Fatal("Devices 9 did not fail")
	}
}
