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
	if err := call(op, func() { ptr = swig.NewContext__SWIG_0(devices, o.CPUMemoryLimit) }); err != nil {
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
