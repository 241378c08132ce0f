package dptrain

// SaveCheckpoint saves the trainer's state (parameters, optimizer state, step and epoch counters, seed,
// model description) to path atomically: after a crash path holds the previous checkpoint or the new one.
// Fit saves nothing by itself: call this between Fit calls or from Fit's progress callback (an epoch
// report; inside an unfinished accumulation window the library refuses with StatusInvalidState).
func (t *Trainer) SaveCheckpoint(path string) error {
	const op = "Trainer.SaveCheckpoint"
	if err := checkPath(op, path); err != nil {
		return err
	}
	return t.read(op, func() { t.ptr.SaveCheckpoint(path) })
}

// LoadCheckpoint loads a checkpoint into a trainer created with the same model and optimizer kind, on any
// devices. The seed and the step and epoch counters are replaced too, so a following Fit continues exactly
// where the saved run stopped. On error the trainer is unchanged.
func (t *Trainer) LoadCheckpoint(path string) error {
	const op = "Trainer.LoadCheckpoint"
	if err := checkPath(op, path); err != nil {
		return err
	}
	return t.do(op, func() { t.ptr.LoadCheckpoint(path) })
}

// EpochCount returns the epochs completed by Fit so far (restored by LoadCheckpoint).
func (t *Trainer) EpochCount() (uint64, error) {
	var n uint64
	err := t.read("Trainer.EpochCount", func() { n = t.ptr.EpochCount() })
	return n, err
}

// StepCount returns the optimizer steps taken so far (restored by LoadCheckpoint).
func (t *Trainer) StepCount() (uint64, error) {
	var n uint64
	err := t.read("Trainer.StepCount", func() { n = t.ptr.StepCount() })
	return n, err
}

func checkPath(op, path string) error {
	if path == "" {
		return newError(op, StatusInvalidArgument, "empty path")
	}
	return cString(op, "path", path)
}

// SaveSafetensors writes the trainer's weights to path as a safetensors file (PyTorch's
// safetensors.torch.load_file reads it): every named parameter and buffer as F32 in its shape, and for
// each batch norm "<node>.num_batches_tracked" (docs/safetensors.md). Only weights: no optimizer state or
// counters (SaveCheckpoint keeps those). Like SaveCheckpoint, also allowed from Fit's progress callback.
func (t *Trainer) SaveSafetensors(path string) error {
	const op = "Trainer.SaveSafetensors"
	if err := checkPath(op, path); err != nil {
		return err
	}
	return t.read(op, func() { t.ptr.SaveSafetensors(path) })
}

// LoadSafetensors sets the parameters and buffers of every replica, by name, from a safetensors file (as
// SaveSafetensors or safetensors.torch.save_file(module.state_dict(), path) writes it). Every tensor of
// the model must be there with its exact shape; the optimizer state and counters are untouched. On error
// the trainer is unchanged.
func (t *Trainer) LoadSafetensors(path string) error {
	const op = "Trainer.LoadSafetensors"
	if err := checkPath(op, path); err != nil {
		return err
	}
	return t.do(op, func() { t.ptr.LoadSafetensors(path) })
}

// BufferCount returns the number of floats of buffers (running statistics) of one replica, the model's
// BufferCount; 0 without batch norm.
func (t *Trainer) BufferCount() (int, error) {
	if err := t.read("Trainer.BufferCount", func() {}); err != nil {
		return 0, err
	}
	return t.buffers, nil
}

// ReadBuffers copies the buffers (of the first replica; every replica holds the same) into dst, whose
// length must be BufferCount(), in the order of Model.NamedBuffers.
func (t *Trainer) ReadBuffers(dst []float32) error {
	const op = "Trainer.ReadBuffers"
	if dst == nil {
		return nilSlice(op, "dst")
	}
	return t.read(op, func() { t.ptr.GetBuffers(dst) })
}

// Buffers returns a new slice holding the buffers (running statistics); empty without batch norm.
func (t *Trainer) Buffers() ([]float32, error) {
	n, err := t.BufferCount()
	if err != nil {
		return nil, err
	}
	dst := make([]float32, n)
	if n == 0 {
		return dst, nil // nothing to copy (the library would be given a NULL pointer for an empty slice)
	}
	if err := t.ReadBuffers(dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// SetBuffers sets the buffers of every replica from src (length BufferCount()).
func (t *Trainer) SetBuffers(src []float32) error {
	const op = "Trainer.SetBuffers"
	if src == nil {
		return nilSlice(op, "src")
	}
	return t.do(op, func() { t.ptr.SetBuffers(src) })
}
