package dptrain

import (
	"runtime/debug"

	"dptrain.org/dptrain/internal/swig"
)

// ProgressKind says when a progress report is made.
type ProgressKind int

// Progress report kinds.
const (
	ProgressBatch ProgressKind = 0 // every FitOptions.ProgressEvery batches during an epoch
	ProgressEpoch ProgressKind = 1 // once at the end of each epoch, after evaluation
)

// Progress is a report passed to the FitOptions.Progress callback.
type Progress struct {
	Kind             ProgressKind
	Epoch            int     // 1-based epoch of this Fit call
	Epochs           int     // epochs requested
	Batch            int     // batches done in this epoch
	Batches          int     // batches per epoch
	Samples          uint64  // samples done in this epoch
	Loss             float64 // mean training loss over the epoch so far
	Accuracy         float64 // training accuracy over the epoch so far
	SamplesPerSecond float64 // training throughput over the epoch so far
	EpochSeconds     float64 // seconds spent in this epoch so far (training only)
	HasTest          bool    // epoch reports: a test set was evaluated
	TestLoss         float64 // epoch reports with HasTest
	TestAccuracy     float64 // epoch reports with HasTest
	LearningRate     float64 // learning rate of the latest update
	LossScale        float64 // the loss scale now (PrecisionFP16; 1 without loss scaling)
}

// FitOptions configures Trainer.Fit. Zero fields take the library's defaults, as noted.
type FitOptions struct {
	Epochs        int  // 0 = 1
	BatchSize     int  // global batch size; 0 = 256. The last batch may be smaller.
	NoShuffle     bool // keep the sample order (by default each epoch draws a permutation from the seed)
	ProgressEvery int  // batch reports every this many batches; 0 = epoch reports only
	EvalBatchSize int  // batch size of the test-set evaluation; 0 = 1000

	// Progress, if not nil, is called with each report; return false to stop training after it (Fit then
	// returns normally with FitResult.Stopped set). It runs on its own goroutine while Fit waits, so it
	// may block, use other handles or call runtime.Goexit. On this Trainer it may read (Parameters,
	// Checksum, EpochCount, ...), SaveCheckpoint and Close (training then stops); other calls (Step,
	// SetParameters, ...) return an error wrapping ErrBusy. A panic inside it stops training and Fit
	// returns a *CallbackError.
	Progress func(Progress) bool
}

// FitResult is the outcome of Trainer.Fit.
type FitResult struct {
	EpochsCompleted  int     // epochs fully trained
	Stopped          bool    // the callback asked to stop (or failed, or the trainer was closed)
	TrainLoss        float64 // mean training loss of the last (possibly partial) epoch
	TrainAccuracy    float64 // training accuracy of the last (possibly partial) epoch
	HasTest          bool    // a test set was evaluated
	TestLoss         float64 // test loss after the last epoch
	TestAccuracy     float64 // test accuracy after the last epoch
	TrainSeconds     float64 // seconds spent training (evaluation excluded)
	SamplesPerSecond float64 // training throughput over all epochs
	OptimizerSteps   uint64  // optimizer steps taken by the trainer so far
	NonFiniteSteps   uint64  // windows the trainer discarded for non-finite values so far
	OverflowSteps    uint64  // windows the loss scaler skipped so far (PrecisionFP16)
	LossScale        float64 // the loss scale at the end (PrecisionFP16; 1 without loss scaling)
}

// listener is the Go side of the SWIG director: it turns each report into a Progress and runs the
// user's callback on a fresh goroutine, so that a panic or runtime.Goexit there never unwinds through
// the library's C++ frames.
type listener struct {
	fn      func(Progress) bool
	trainer *Trainer
	err     error // the first callback failure; training stops
}

type callbackOutcome struct {
	cont bool
	err  error
}

// OnProgress is called by the library (through the director) on the goroutine running Fit.
func (l *listener) OnProgress(p swig.Progress) bool {
	if l.err != nil {
		return true
	}
	report := Progress{
		Kind:             ProgressKind(p.GetKind()),
		Epoch:            int(p.GetEpoch()),
		Epochs:           int(p.GetEpochs()),
		Batch:            int(p.GetBatch()),
		Batches:          int(p.GetBatches()),
		Samples:          p.GetSamples(),
		Loss:             p.GetLoss(),
		Accuracy:         p.GetAccuracy(),
		SamplesPerSecond: p.GetSamples_per_second(),
		EpochSeconds:     p.GetEpoch_seconds(),
		HasTest:          p.GetHas_test() != 0,
		TestLoss:         p.GetTest_loss(),
		TestAccuracy:     p.GetTest_accuracy(),
		LearningRate:     p.GetLearning_rate(),
		LossScale:        p.GetLoss_scale(),
	}
	done := make(chan callbackOutcome, 1)
	// While the callback runs, the paused Fit lets it read the trainer and save checkpoints.
	l.trainer.h.enterCallback()
	go func() {
		returned := false
		var cont bool
		defer func() {
			if returned {
				done <- callbackOutcome{cont: cont}
				return
			}
			// Either a panic (recover returns its value) or runtime.Goexit (recover returns nil).
			r := recover()
			done <- callbackOutcome{err: &CallbackError{Value: r, Stack: debug.Stack()}}
		}()
		cont = l.fn(report)
		returned = true
	}()
	out := <-done
	l.trainer.h.exitCallback() // waits for a call the callback started on another goroutine
	if out.err != nil {
		l.err = out.err
		return true
	}
	return !out.cont || l.trainer.h.isClosed()
}

// Fit trains for opts.Epochs epochs over train, evaluating test (may be nil) after each epoch. opts may
// be nil. Epoch numbering, and so the shuffle order, continues across calls.
func (t *Trainer) Fit(train, test *Dataset, opts *FitOptions) (FitResult, error) {
	const op = "Trainer.Fit"
	var o FitOptions
	if opts != nil {
		o = *opts
	}
	if train == nil {
		return FitResult{}, nilHandle(op, "train dataset")
	}
	var sizes [4]int64
	for i, a := range []struct {
		name string
		v    int
	}{{"Epochs", o.Epochs}, {"BatchSize", o.BatchSize}, {"ProgressEvery", o.ProgressEvery}, {"EvalBatchSize", o.EvalBatchSize}} {
		n, err := toSize(op, a.name, a.v)
		if err != nil {
			return FitResult{}, err
		}
		sizes[i] = n
	}
	if err := train.begin(op); err != nil {
		return FitResult{}, err
	}
	defer train.h.release(shared)
	var testPtr swig.Dataset
	if test != nil {
		if err := test.begin(op); err != nil {
			return FitResult{}, err
		}
		defer test.h.release(shared)
		testPtr = test.ptr
	}

	var l *listener
	var out FitResult
	err := t.do(op, func() {
		fo := swig.NewFitOptions()
		defer swig.DeleteFitOptions(fo)
		if sizes[0] != 0 {
			fo.SetEpochs(sizes[0])
		}
		if sizes[1] != 0 {
			fo.SetBatch_size(sizes[1])
		}
		if o.NoShuffle {
			fo.SetShuffle(0)
		}
		fo.SetProgress_every(sizes[2])
		if sizes[3] != 0 {
			fo.SetEval_batch_size(sizes[3])
		}
		var director swig.ProgressListener
		if o.Progress != nil {
			l = &listener{fn: o.Progress, trainer: t}
			director = swig.NewDirectorProgressListener(l)
			defer swig.DeleteDirectorProgressListener(director)
		}
		r := t.ptr.Fit(train.ptr, testPtr, fo, director)
		if r.Swigcptr() == 0 {
			return // failed: the error is recorded
		}
		defer swig.DeleteFitResult(r)
		out = FitResult{
			EpochsCompleted:  int(r.GetEpochs_completed()),
			Stopped:          r.GetStopped() != 0,
			TrainLoss:        r.GetTrain_loss(),
			TrainAccuracy:    r.GetTrain_accuracy(),
			HasTest:          r.GetHas_test() != 0,
			TestLoss:         r.GetTest_loss(),
			TestAccuracy:     r.GetTest_accuracy(),
			TrainSeconds:     r.GetTrain_seconds(),
			SamplesPerSecond: r.GetSamples_per_second(),
			OptimizerSteps:   r.GetOptimizer_steps(),
			NonFiniteSteps:   r.GetNonfinite_steps(),
			OverflowSteps:    r.GetOverflow_steps(),
			LossScale:        r.GetLoss_scale(),
		}
	})
	if err == nil && l != nil && l.err != nil {
		err = l.err
	}
	return out, err
}
