package dptrain

import "dptrain.org/dptrain/internal/swig"

// DeviceSelection selects the kinds of devices a context discovers (ContextOptions.Devices).
type DeviceSelection int

// Device selections.
const (
	DevicesCPU  DeviceSelection = 0 // CPU devices only (the default): the CUDA module is never loaded
	DevicesCUDA DeviceSelection = 1 // CUDA devices only; none when the CUDA backend is unavailable
	DevicesAll  DeviceSelection = 2 // CPU devices, then CUDA devices
)

func (s DeviceSelection) String() string {
	switch s {
	case DevicesCPU:
		return "cpu"
	case DevicesCUDA:
		return "cuda"
	case DevicesAll:
		return "all"
	}
	return kindName("DeviceSelection", int(s))
}

// BackendInfo says how the backend of one kind of device fared in a context: whether it was requested
// and loaded, how many devices it gave and, when none, why ("CUDA driver not found (...)", ...).
type BackendInfo struct {
	Kind           DeviceKind
	Requested      bool // the context's Devices selection asked for this kind
	Loaded         bool // CPU: always; CUDA: libdptrain_cuda.so loaded and its interface supported
	DeviceCount    int
	DriverVersion  int    // CUDA driver, 1000*major + 10*minor; 0 = none
	RuntimeVersion int    // CUDA runtime of the module; 0 = not loaded
	ModulePath     string // the loaded module's file
	Reason         string // one line: why DeviceCount is 0; empty when all is well
	Versions       string // runtime, driver and library versions
}

// Backend describes the backend of devices of the given kind in this context.
func (c *Context) Backend(kind DeviceKind) (BackendInfo, error) {
	const op = "Context.Backend"
	if err := c.begin(op); err != nil {
		return BackendInfo{}, err
	}
	defer c.h.release(shared)
	var b BackendInfo
	err := call(op, func() {
		info := c.ptr.BackendInfo(swig.Dpt_device_kind(kind))
		if info.Swigcptr() == 0 {
			return // failed: the error is recorded
		}
		defer swig.DeleteBackendInfo(info)
		b = BackendInfo{
			Kind:           DeviceKind(info.GetKind()),
			Requested:      info.GetRequested() != 0,
			Loaded:         info.GetLoaded() != 0,
			DeviceCount:    int(info.GetDevice_count()),
			DriverVersion:  info.GetDriver_version(),
			RuntimeVersion: info.GetRuntime_version(),
			ModulePath:     info.GetModule_path(),
			Reason:         info.GetReason(),
			Versions:       info.GetVersions(),
		}
	})
	return b, err
}

// CanAccessPeer reports whether device index can access device peer's memory directly (two CUDA devices
// with peer access; false for a device and itself and for CPU devices).
func (c *Context) CanAccessPeer(index, peer int) (bool, error) {
	const op = "Context.CanAccessPeer"
	i, err := toSize(op, "index", index)
	if err != nil {
		return false, err
	}
	p, err := toSize(op, "peer", peer)
	if err != nil {
		return false, err
	}
	if err := c.begin(op); err != nil {
		return false, err
	}
	defer c.h.release(shared)
	var can bool
	err = call(op, func() { can = c.ptr.CanAccessPeer(i, p) })
	return can, err
}
