package dptrain_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"dptrain.org/dptrain"
)

// profilingTrainer is shardModel (1x8x8 -> dense 128 -> relu -> dense 3, 8707 parameters) on 3 CPU devices,
// seed 7, SGD, one micro-batch per step and no gradient buckets (BucketBytes < 0, the C API's bucket_bytes 0:
// one all-reduce on each device's thread after backward).
func profilingTrainer(t *testing.T) *dptrain.Trainer {
	t.Helper()
	ctx := newContext(t, shardDevices)
	opts := &dptrain.TrainerOptions{Seed: 7, AccumulationSteps: 1, BucketBytes: -1,
		Optimizer: dptrain.OptimizerOptions{Kind: dptrain.SGD, LearningRate: 0.1}}
	tr := newTrainer(t, ctx, shardModel(t), opts)
	if n, err := tr.DeviceCount(); err != nil || n != shardDevices {
		t.Fatalf("DeviceCount() = %d, %v; want %d", n, err, shardDevices)
	}
	if n, err := tr.ParameterCount(); err != nil || n != shardParameters {
		t.Fatalf("ParameterCount() = %d, %v; want %d", n, err, shardParameters)
	}
	return tr
}

// profilingStep runs one step on a batch of 24 samples (8 per device), which updates the parameters.
func profilingStep(t *testing.T, tr *dptrain.Trainer) dptrain.StepResult {
	t.Helper()
	x, y := shardBatch(24)
	r, err := tr.Step(x, y)
	must(t, err)
	if !r.Applied {
		t.Fatalf("the step did not update the parameters: %+v", r)
	}
	return r
}

// TestReplicaTimes: before any step every figure of every replica is 0. After a step each replica computed,
// all-reduced and updated (each > 0), its idle time is not negative, the four add up to the step's
// TotalSeconds (the reduction ran on the device's own thread: no buckets), and its bus bandwidth times its
// communication seconds is the all-reduce's bus bytes, parameters * 4 * 2 (K - 1) / K. A device past the last
// (or a negative one) is StatusOutOfRange, and the trainer is unharmed.
func TestReplicaTimes(t *testing.T) {
	tr := profilingTrainer(t)
	for d := 0; d < shardDevices; d++ {
		times, err := tr.ReplicaTimes(d)
		must(t, err)
		if times != (dptrain.ReplicaTimes{}) {
			t.Errorf("device %d before any step: %+v, want all 0", d, times)
		}
	}

	r := profilingStep(t, tr)
	if r.TotalSeconds <= 0 {
		t.Fatalf("TotalSeconds = %g", r.TotalSeconds)
	}
	const k = float64(shardDevices)
	busBytes := float64(shardParameters) * 4 * 2 * (k - 1) / k
	for d := 0; d < shardDevices; d++ {
		times, err := tr.ReplicaTimes(d)
		must(t, err)
		what := fmt.Sprintf("device %d: %+v", d, times)
		if times.ComputeSeconds <= 0 || times.CommunicationSeconds <= 0 || times.UpdateSeconds <= 0 {
			t.Errorf("%s: compute, communication and update must be positive", what)
		}
		if times.IdleSeconds < 0 {
			t.Errorf("%s: negative idle time", what)
		}
		sum := times.ComputeSeconds + times.CommunicationSeconds + times.UpdateSeconds + times.IdleSeconds
		if math.Abs(sum-r.TotalSeconds) > 1e-9*r.TotalSeconds {
			t.Errorf("%s: the parts add up to %.12g s, the step took %.12g s", what, sum, r.TotalSeconds)
		}
		if got := times.BusBandwidth * times.CommunicationSeconds; math.Abs(got-busBytes) > 1e-6*busBytes {
			t.Errorf("%s: bus bandwidth * communication = %.9g bytes, want %.9g", what, got, busBytes)
		}
		again, err := tr.ReplicaTimes(d)
		must(t, err)
		if again != times {
			t.Errorf("%s: a second read gives %+v", what, again)
		}
	}

	_, err := tr.ReplicaTimes(shardDevices)
	wantError(t, err, dptrain.StatusOutOfRange, "Trainer.ReplicaTimes", "dpt_trainer_replica_times")
	_, err = tr.ReplicaTimes(-1)
	wantError(t, err, dptrain.StatusOutOfRange, "Trainer.ReplicaTimes", "device is negative (-1)")
	if times, err := tr.ReplicaTimes(shardDevices - 1); err != nil || times.ComputeSeconds <= 0 {
		t.Errorf("the last replica after the refusals: %+v, %v", times, err)
	}
}

// TestReplicaTotals: all 0 before any step; after two steps each figure is the sum of the two steps' (the
// same additions), the bus bandwidth their bytes over their seconds; an evaluation adds nothing; a device past
// the last is StatusOutOfRange.
func TestReplicaTotals(t *testing.T) {
	tr := profilingTrainer(t)
	if totals, err := tr.ReplicaTotals(0); err != nil || totals != (dptrain.ReplicaTimes{}) {
		t.Errorf("before any step: %+v, %v", totals, err)
	}
	var sum [shardDevices]dptrain.ReplicaTimes
	var bytes [shardDevices]float64
	for s := 0; s < 2; s++ {
		profilingStep(t, tr)
		for d := 0; d < shardDevices; d++ {
			times, err := tr.ReplicaTimes(d)
			must(t, err)
			sum[d].ComputeSeconds += times.ComputeSeconds
			sum[d].CommunicationSeconds += times.CommunicationSeconds
			sum[d].UpdateSeconds += times.UpdateSeconds
			sum[d].IdleSeconds += times.IdleSeconds
			bytes[d] += times.BusBandwidth * times.CommunicationSeconds
		}
	}
	x, y := shardBatch(24)
	_, err := tr.Evaluate(x, y)
	must(t, err)
	for d := 0; d < shardDevices; d++ {
		totals, err := tr.ReplicaTotals(d)
		must(t, err)
		want := sum[d]
		want.BusBandwidth = totals.BusBandwidth
		if totals != want {
			t.Errorf("device %d: totals %+v, the steps add up to %+v", d, totals, want)
		}
		if bw := bytes[d] / sum[d].CommunicationSeconds; math.Abs(totals.BusBandwidth-bw) > 1e-9*bw {
			t.Errorf("device %d: bus bandwidth %.9g, want %.9g", d, totals.BusBandwidth, bw)
		}
	}
	_, err = tr.ReplicaTotals(shardDevices)
	wantError(t, err, dptrain.StatusOutOfRange, "Trainer.ReplicaTotals", "dpt_trainer_replica_totals")
}

// traceEvent is one event of a Chrome trace-event file, the fields the test reads.
type traceEvent struct {
	Ph   string          `json:"ph"`
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Args json.RawMessage `json:"args"`
}

// TestTrace: TraceStart(1000), one step and TraceWrite give a Chrome trace-event JSON document whose metadata
// names rows 0 .. 5 ("cpu:D compute" at tid 2D, "cpu:D communication" at 2D+1) and which holds a complete ("X")
// forward event on every compute row, backward events, the all-reduces and the updates. The write stops the
// recording: a second write is StatusInvalidState and writes nothing.
func TestTrace(t *testing.T) {
	tr := profilingTrainer(t)
	must(t, tr.TraceStart(1000))
	profilingStep(t, tr)
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	must(t, tr.TraceWrite(path))

	data, err := os.ReadFile(path)
	must(t, err)
	var doc struct {
		DisplayTimeUnit string       `json:"displayTimeUnit"`
		TraceEvents     []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	if doc.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q, want ms", doc.DisplayTimeUnit)
	}
	names := map[int]string{}
	forward := map[int]int{}
	cats := map[string]int{}
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				var args struct {
					Name string `json:"name"`
				}
				must(t, json.Unmarshal(e.Args, &args))
				names[e.Tid] = args.Name
			}
		case "X":
			cats[e.Cat]++
			if e.Cat == "forward" {
				forward[e.Tid]++
			}
			if e.Dur < 0 || e.Ts < 0 {
				t.Errorf("event %+v: negative time", e)
			}
		}
	}
	for d := 0; d < shardDevices; d++ {
		if want := fmt.Sprintf("cpu:%d compute", d); names[2*d] != want {
			t.Errorf("row %d is named %q, want %q", 2*d, names[2*d], want)
		}
		if want := fmt.Sprintf("cpu:%d communication", d); names[2*d+1] != want {
			t.Errorf("row %d is named %q, want %q", 2*d+1, names[2*d+1], want)
		}
		if forward[2*d] == 0 {
			t.Errorf("no forward event on row %d", 2*d)
		}
	}
	if len(names) != 2*shardDevices {
		t.Errorf("%d named rows, want %d: %v", len(names), 2*shardDevices, names)
	}
	for _, cat := range []string{"forward", "backward", "communication", "update"} {
		if cats[cat] == 0 {
			t.Errorf("no %q event: %v", cat, cats)
		}
	}

	again := filepath.Join(dir, "again.json")
	wantError(t, tr.TraceWrite(again), dptrain.StatusInvalidState, "Trainer.TraceWrite", "dpt_trainer_trace_write")
	if _, err := os.Stat(again); !os.IsNotExist(err) {
		t.Errorf("a refused write left %s: %v", again, err)
	}
}

// TestTraceRefusals: TraceWrite without a recording is StatusInvalidState; TraceStart(0) StatusInvalidArgument,
// above 2^24 or negative StatusOutOfRange; an empty path StatusInvalidArgument; an unwritable path StatusIO,
// which leaves the recording stopped. The trainer still trains and traces afterwards.
func TestTraceRefusals(t *testing.T) {
	tr := profilingTrainer(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "never.json")
	wantError(t, tr.TraceWrite(path), dptrain.StatusInvalidState, "dpt_trainer_trace_write")

	wantError(t, tr.TraceStart(0), dptrain.StatusInvalidArgument, "Trainer.TraceStart", "dpt_trainer_trace_start")
	wantError(t, tr.TraceStart(1<<24+1), dptrain.StatusOutOfRange, "dpt_trainer_trace_start")
	wantError(t, tr.TraceStart(-1), dptrain.StatusOutOfRange, "maxEvents is negative (-1)")
	wantError(t, tr.TraceWrite(path), dptrain.StatusInvalidState, "dpt_trainer_trace_write")

	must(t, tr.TraceStart(10))
	wantError(t, tr.TraceWrite(""), dptrain.StatusInvalidArgument, "Trainer.TraceWrite", "empty path")
	wantError(t, tr.TraceWrite(filepath.Join(dir, "no-such-dir", "trace.json")), dptrain.StatusIO,
		"dpt_trainer_trace_write")
	wantError(t, tr.TraceWrite(path), dptrain.StatusInvalidState, "dpt_trainer_trace_write")

	must(t, tr.TraceStart(10))
	profilingStep(t, tr)
	must(t, tr.TraceWrite(path))
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Errorf("a trace after the refusals: %v, %v", info, err)
	}
}
