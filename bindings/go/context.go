package dptrain

import (
	"runtime"

	"dptrain.org/dptrain/internal/swig"
)

// MaxCPUDevices is the largest number of CPU devices a context can have (DPT_MAX_CPU_DEVICES).
const MaxCPUDevices = 64

// ContextOptions configures NewContext. The zero value asks for the defaults.
type ContextOptions struct {
	// CPUDevices is the number of CPU devices; 0 = environment DPTRAIN_CPU_DEVICES, else the core count.
	CPUDevices int
	// CPUMemoryLimit caps each CPU device's memory arena in bytes; 0 = unlimited.
	CPUMemoryLimit uint64
	// Devices selects the kinds of devices to discover; the zero value, DevicesCPU, never loads the CUDA
	// module.
	Devices DeviceSelection
}

// DeviceKind is the kind of a device.
type DeviceKind int

// Device kinds.
const (
	DeviceCPU  DeviceKind = 1 // a CPU device: a worker thread with its own memory arena
	DeviceCUDA DeviceKind = 2 // an NVIDIA GPU
)

func (k DeviceKind) String() string {
	switch k {
	case DeviceCPU:
		return "cpu"
	case DeviceCUDA:
		return "cuda"
	}
	return kindName("DeviceKind", int(k))
}

// DeviceInfo describes one device of a context.
type DeviceInfo struct {
	Kind        DeviceKind
	Ordinal     int    // index among the devices of its kind
	Name        string // e.g. "cpu:0"
	TotalMemory uint64 // bytes the device can hold
	MemoryLimit uint64 // arena cap in bytes; 0 = unlimited
	MemoryInUse uint64 // bytes currently allocated
	FreeMemory  uint64 // bytes free now (a GPU's, measured; a CPU device's arena room)
	// ComputeCapabilityMajor and ComputeCapabilityMinor: a GPU's CUDA compute capability; 0 for a CPU device.
	ComputeCapabilityMajor, ComputeCapabilityMinor int
	Multiprocessors                                int    // a GPU's SM count; 0 for a CPU device
	PCIBusID                                       string // a GPU's PCI bus id; empty for a CPU device
	ProductName                                    string // a GPU's product name; empty for a CPU device
}

// Context owns the devices dptrain may use. Close it when done; it stays alive (closed to new use)
// until every Trainer created on it is closed.
type Context struct {
	ptr swig.Context
	h   *handle
}

// NewContext creates a context and discovers its devices. opts may be nil (defaults).
func NewContext(opts *ContextOptions) (*Context, error) {
	const op = "NewContext"
	var o ContextOptions
	if opts != nil {
		o = *opts
	}
	devices, err := toSize(op, "CPUDevices", o.CPUDevices)
	if err != nil {
		return nil, err
	}
	var ptr swig.Context
	selection := swig.Dpt_device_selection(o.Devices)
	if err := call(op, func() { ptr = swig.NewContext__SWIG_3(devices, o.CPUMemoryLimit, selection) }); err != nil {
		return nil, err
	}
	c := &Context{ptr: ptr}
	c.h = newHandle("Context", func() { swig.DeleteContext(ptr) })
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Close releases the context (once its trainers are closed). It is idempotent and always returns nil.
func (c *Context) Close() error {
	if c != nil && c.h != nil {
		c.h.close()
	}
	return nil
}

func (c *Context) begin(op string) error {
	if c == nil || c.h == nil {
		return nilHandle(op, "context")
	}
	_, err := c.h.acquire(op, shared)
	return err
}

// DeviceCount returns the number of devices, CPU and CUDA together.
func (c *Context) DeviceCount() (int, error) {
	const op = "Context.DeviceCount"
	if err := c.begin(op); err != nil {
		return 0, err
	}
	defer c.h.release(shared)
	var n int64
	err := call(op, func() { n = c.ptr.DeviceCount() })
	return int(n), err
}

// Device describes device index (0 .. DeviceCount()-1).
func (c *Context) Device(index int) (DeviceInfo, error) {
	const op = "Context.Device"
	i, err := toSize(op, "index", index)
	if err != nil {
		return DeviceInfo{}, err
	}
	if err := c.begin(op); err != nil {
		return DeviceInfo{}, err
	}
	defer c.h.release(shared)
	var d DeviceInfo
	err = call(op, func() {
		info := c.ptr.DeviceInfo(i)
		if info.Swigcptr() == 0 {
			return // failed: the error is recorded
		}
		defer swig.DeleteDeviceInfo(info)
		d = DeviceInfo{
			Kind:        DeviceKind(info.GetKind()),
			Ordinal:     int(info.GetOrdinal()),
			Name:        info.GetName(),
			TotalMemory: info.GetTotal_memory(),
			MemoryLimit: info.GetMemory_limit(),
			MemoryInUse: info.GetMemory_in_use(),
			FreeMemory:  info.GetFree_memory(),

			ComputeCapabilityMajor: info.GetCompute_capability_major(),
			ComputeCapabilityMinor: info.GetCompute_capability_minor(),
			Multiprocessors:        info.GetMultiprocessor_count(),
			PCIBusID:               info.GetPci_bus_id(),
			ProductName:            info.GetProduct_name(),
		}
	})
	return d, err
}

// Devices describes every device.
func (c *Context) Devices() ([]DeviceInfo, error) {
	n, err := c.DeviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		d, err := c.Device(i)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
