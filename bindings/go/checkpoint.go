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
