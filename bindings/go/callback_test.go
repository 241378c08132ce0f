package dptrain_test

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"dptrain.org/dptrain"
)

// 96 samples in batches of 16: 6 batches per epoch.
func fitSetup(t *testing.T) (*dptrain.Trainer, *dptrain.Dataset, *dptrain.Dataset) {
	t.Helper()
	tr := newTrainer(t, newContext(t, 2), tinyModel(t),
		&dptrain.TrainerOptions{Seed: 3, Optimizer: dptrain.OptimizerOptions{LearningRate: 0.5}})
	return tr, tinyDataset(t, 96, 1), tinyDataset(t, 30, 2)
}

func TestFitReportsProgressFromAnotherGoroutine(t *testing.T) {
	tr, train, test := fitSetup(t)
	testGoroutine := goroutineID()
	type outcome struct {
		result  dptrain.FitResult
		err     error
		reports []dptrain.Progress
		fitG    uint64
		cbG     map[uint64]bool
	}
	done := make(chan outcome)
	// Fit runs on a goroutine other than the test's; so do the callbacks.
	go func() {
		o := outcome{fitG: goroutineID(), cbG: map[uint64]bool{}}
		o.result, o.err = tr.Fit(train, test, &dptrain.FitOptions{
			Epochs: 3, BatchSize: 16, ProgressEvery: 2,
			Progress: func(p dptrain.Progress) bool {
				o.cbG[goroutineID()] = true
				o.reports = append(o.reports, p)
				return true
			},
		})
		done <- o
	}()
	o := <-done
	must(t, o.err)
	if o.cbG[testGoroutine] || o.cbG[o.fitG] || len(o.cbG) == 0 {
		t.Fatalf("callback goroutines %v (test %d, Fit %d)", o.cbG, testGoroutine, o.fitG)
	}
	// Per epoch: batch reports after batches 2 and 4 (the last batch has the epoch report), then the
	// epoch report.
	if len(o.reports) != 3*3 {
		t.Fatalf("%d reports, want 9", len(o.reports))
	}
	for i, p := range o.reports {
		epoch := i/3 + 1
		if p.Epoch != epoch || p.Epochs != 3 || p.Batches != 6 {
			t.Fatalf("report %d: %+v", i, p)
		}
		if i%3 < 2 {
			if p.Kind != dptrain.ProgressBatch || p.Batch != 2*(i%3+1) || p.HasTest {
				t.Fatalf("batch report %d: %+v", i, p)
			}
		} else if p.Kind != dptrain.ProgressEpoch || p.Batch != 6 || p.Samples != 96 || !p.HasTest ||
			p.TestAccuracy < 0 || p.TestAccuracy > 1 || p.LearningRate != 0.5 {
			t.Fatalf("epoch report %d: %+v", i, p)
		}
	}
	last := o.reports[len(o.reports)-1]
	if o.result.EpochsCompleted != 3 || o.result.Stopped || !o.result.HasTest ||
		o.result.TestAccuracy != last.TestAccuracy || o.result.OptimizerSteps != 18 {
		t.Fatalf("result %+v, last report %+v", o.result, last)
	}
	if !(last.Loss < o.reports[2].Loss) {
		t.Fatalf("epoch loss did not fall: %.4f -> %.4f", o.reports[2].Loss, last.Loss)
	}
}

func TestCallbackStopsTraining(t *testing.T) {
	tr, train, _ := fitSetup(t)
	calls := 0
	r, err := tr.Fit(train, nil, &dptrain.FitOptions{Epochs: 5, BatchSize: 16, ProgressEvery: 1,
		Progress: func(p dptrain.Progress) bool {
			calls++
			return p.Batch < 4 // stop after the 4th batch
		}})
	must(t, err)
	if calls != 4 || !r.Stopped || r.EpochsCompleted != 0 || r.OptimizerSteps != 4 {
		t.Fatalf("calls %d, result %+v", calls, r)
	}
}

var errBoom = errors.New("boom")

func TestPanickingCallbackComesBackAsError(t *testing.T) {
	tr, train, _ := fitSetup(t)
	var calls int32
	_, err := tr.Fit(train, nil, &dptrain.FitOptions{Epochs: 3, BatchSize: 16, ProgressEvery: 1,
		Progress: func(p dptrain.Progress) bool {
			if atomic.AddInt32(&calls, 1) == 2 {
				panic(errBoom)
			}
			return true
		}})
	var cbErr *dptrain.CallbackError
	if !errors.As(err, &cbErr) || !errors.Is(err, errBoom) {
		t.Fatalf("want a *CallbackError wrapping errBoom, got %T %v", err, err)
	}
	if !strings.Contains(err.Error(), "panicked: boom") || !strings.Contains(string(cbErr.Stack), "callback_test.go") {
		t.Fatalf("error %q, stack:\n%s", err, cbErr.Stack)
	}
	if calls != 2 {
		t.Fatalf("callback called %d times after the panic stopped training", calls)
	}
	// The trainer is still usable: training stopped cleanly at the report.
	x, y := tinyBatch(16, 1)
	r, err := tr.Step(x, y)
	must(t, err)
	if r.OptimizerSteps != 3 { // 2 batches of Fit, then this step
		t.Fatalf("OptimizerSteps = %d, want 3", r.OptimizerSteps)
	}
	// A panic with a non-error value.
	_, err = tr.Fit(train, nil, &dptrain.FitOptions{Progress: func(dptrain.Progress) bool { panic("plain string") }})
	if !errors.As(err, &cbErr) || cbErr.Value != "plain string" || errors.Unwrap(err) != nil {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestGoexitInCallbackComesBackAsError(t *testing.T) {
	tr, train, _ := fitSetup(t)
	_, err := tr.Fit(train, nil, &dptrain.FitOptions{Epochs: 2, BatchSize: 16,
		Progress: func(dptrain.Progress) bool { runtime.Goexit(); return true }})
	var cbErr *dptrain.CallbackError
	if !errors.As(err, &cbErr) || cbErr.Value != nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("got %T %v", err, err)
	}
}

func TestCallbackMayOnlyReadItsTrainer(t *testing.T) {
	tr, train, _ := fitSetup(t)
	x, y := tinyBatch(16, 1)
	var stepErr, setErr, sumErr, asyncErr error
	var sums []string
	_, err := tr.Fit(train, nil, &dptrain.FitOptions{Epochs: 2, BatchSize: 16, Progress: func(dptrain.Progress) bool {
		_, stepErr = tr.Step(x, y)
		setErr = tr.SetParameters(make([]float32, 67))
		var sum string
		sum, sumErr = tr.Checksum()
		sums = append(sums, sum)
		// A read from another goroutine while the callback runs is allowed too; the report waits for it.
		done := make(chan error)
		go func() { _, err := tr.Parameters(); done <- err }()
		asyncErr = <-done
		return true
	}})
	must(t, err)
	for _, e := range []error{stepErr, setErr} {
		wantError(t, e, dptrain.StatusBusy, "in use") // as the library's own check
		if !errors.Is(e, dptrain.ErrBusy) {
			t.Fatalf("want ErrBusy: %v", e)
		}
	}
	must(t, sumErr)
	must(t, asyncErr)
	final, err := tr.Checksum()
	must(t, err)
	if len(sums) != 2 || sums[0] == sums[1] || sums[1] != final {
		t.Fatalf("checksums in the callback %v, after Fit %s", sums, final)
	}
	// Outside a callback, a concurrent call on a trainer busy in Fit is refused.
	block := make(chan struct{})
	entered := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = tr.Fit(train, nil, &dptrain.FitOptions{BatchSize: 16, Progress: func(dptrain.Progress) bool {
			close(entered)
			<-block
			return false
		}})
	}()
	<-entered
	_, err = tr.Step(x, y) // a write while Fit is paused in its callback
	wantError(t, err, dptrain.StatusBusy, "in use")
	close(block)
	<-finished
}

func TestClosingTheTrainerFromItsCallbackStopsTraining(t *testing.T) {
	tr, train, _ := fitSetup(t)
	calls := 0
	r, err := tr.Fit(train, nil, &dptrain.FitOptions{Epochs: 4, BatchSize: 16, ProgressEvery: 1,
		Progress: func(p dptrain.Progress) bool {
			calls++
			if calls == 3 {
				must(t, tr.Close()) // released once Fit returns
			}
			return true
		}})
	must(t, err)
	if calls != 3 || !r.Stopped {
		t.Fatalf("calls %d, result %+v", calls, r)
	}
	_, err = tr.Checksum()
	wantClosed(t, err)
}
