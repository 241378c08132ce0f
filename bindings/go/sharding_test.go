package dptrain_test

import (
	"fmt"
	"math"
	"testing"

	"dptrain.org/dptrain"
)

const (
	shardDevices = 3
	shardSide    = 8 // samples are 1 x 8 x 8
	shardIn      = shardSide * shardSide
	// shardParameters: 64 -> 128 -> 3 is three norm blocks of 4096 parameters, so each of the 3 devices owns
	// one range.
	shardParameters = shardIn*128 + 128 + 128*tinyClasses + tinyClasses
	// shardDeepLayers hidden layers of 64 units: shardDeepModel's layers are alike, so that a small bucket size
	// cuts its gradient into several buckets of about one layer each.
	shardDeepLayers     = 6
	shardDeepParameters = shardIn*64 + 64 + (shardDeepLayers-1)*(64*64+64) + 64*tinyClasses + tinyClasses
	// shardBucketBytes: ShardGradients' and ShardParameters' runs use buckets of 4096 bytes (whole layers, each
	// at least this size).
	shardBucketBytes = 4096
)

// shardModel is 1x8x8 -> dense 128 -> relu -> dense 3: 8707 parameters.
func shardModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(1, shardSide, shardSide)
	must(t, err)
	must(t, m.AddDense(128))
	must(t, m.AddActivation(dptrain.ReLU))
	must(t, m.AddDense(tinyClasses))
	t.Cleanup(func() { m.Close() })
	return m
}

// shardDeepModel is 1x8x8 -> 6 x (dense 64 -> relu) -> dense 3: 25155 parameters, six buckets of 4096 bytes
// (the head's 195 parameters join the last hidden layer's bucket).
func shardDeepModel(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewModel(1, shardSide, shardSide)
	must(t, err)
	for i := 0; i < shardDeepLayers; i++ {
		must(t, m.AddDense(64))
		must(t, m.AddActivation(dptrain.ReLU))
	}
	must(t, m.AddDense(tinyClasses))
	t.Cleanup(func() { m.Close() })
	return m
}

// shardBatch returns n samples of shardModel's shape: sample s has label s % 3 and bright pixels where j % 3
// is its label, plus a deterministic ripple.
func shardBatch(n int) ([]float32, []int32) {
	x := make([]float32, n*shardIn)
	y := make([]int32, n)
	for s := 0; s < n; s++ {
		label := s % tinyClasses
		y[s] = int32(label)
		for j := 0; j < shardIn; j++ {
			ripple := float32(float64((s*31+j*17)%13)/13.0-0.5) * 0.2
			signal := float32(0)
			if j%tinyClasses == label {
				signal = 1
			}
			x[s*shardIn+j] = signal + ripple
		}
	}
	return x, y
}

// shardRun is what one run leaves: its start, every replica's parameters, the checksum, every replica's
// memory and an evaluation of the batch after the steps.
type shardRun struct {
	start    []float32
	replicas [shardDevices][]float32
	checksum string
	memory   [shardDevices]dptrain.ReplicaMemory
	eval     dptrain.EvalResult
}

// checkParts: parameters (and, unless the gradient is sharded, gradients) are float32 (4 bytes a parameter), no
// buffers, and the total is the sum.
func checkParts(t *testing.T, m dptrain.ReplicaMemory, parameters int, wholeGradient bool, what string) {
	t.Helper()
	if m.Parameters != uint64(4*parameters) {
		t.Errorf("%s: parameters %d bytes, want %d", what, m.Parameters, 4*parameters)
	}
	if wholeGradient && m.Gradients != uint64(4*parameters) {
		t.Errorf("%s: gradients %d bytes, want %d", what, m.Gradients, 4*parameters)
	}
	if m.Buffers != 0 {
		t.Errorf("%s: %d bytes of buffers without batch norm", what, m.Buffers)
	}
	if m.Activations == 0 {
		t.Errorf("%s: no activation bytes after 3 steps", what)
	}
	if sum := m.Parameters + m.Gradients + m.OptimizerState + m.Buffers + m.Activations; m.Total != sum {
		t.Errorf("%s: total %d, the parts add up to %d", what, m.Total, sum)
	}
}

// shardTrain trains m on 3 CPU devices, seed 7, AdamW (decoupled weight decay, gradient clipping: each device
// clips with the blocked norm), 3 steps on one batch of 24 samples (8 per device), with the given shard mode
// and bucket size (0: the default), then evaluates the batch.
func shardTrain(t *testing.T, ctx *dptrain.Context, m *dptrain.Model, shard dptrain.ShardMode,
	bucketBytes int) (run shardRun) {
	t.Helper()
	x, y := shardBatch(24)
	opts := &dptrain.TrainerOptions{Seed: 7, Shard: shard, BucketBytes: bucketBytes,
		Optimizer: dptrain.OptimizerOptions{Kind: dptrain.AdamW, LearningRate: 0.01, WeightDecay: 0.01, ClipNorm: 0.5}}
	tr := newTrainer(t, ctx, m, opts)
	if n, err := tr.DeviceCount(); err != nil || n != shardDevices {
		t.Fatalf("DeviceCount() = %d, %v; want %d", n, err, shardDevices)
	}
	want, err := m.ParameterCount()
	must(t, err)
	run.start, err = tr.Parameters()
	must(t, err)
	if len(run.start) != want {
		t.Fatalf("%d parameters, want %d", len(run.start), want)
	}
	for i := 0; i < 3; i++ {
		r, err := tr.Step(x, y)
		must(t, err)
		if !r.Applied {
			t.Fatalf("ShardMode %d, step %d: not applied: %+v", shard, i+1, r)
		}
	}
	for d := 0; d < shardDevices; d++ {
		run.replicas[d] = make([]float32, want)
		must(t, tr.ReadReplicaParameters(d, run.replicas[d]))
		run.memory[d], err = tr.ReplicaMemory(d)
		must(t, err)
	}
	run.checksum, err = tr.Checksum()
	must(t, err)
	run.eval, err = tr.Evaluate(x, y)
	must(t, err)
	if run.eval.Samples != 24 {
		t.Fatalf("ShardMode %d: evaluated %d samples, want 24", shard, run.eval.Samples)
	}
	return run
}

// TestShardOptimizer: the zero TrainerOptions does not shard. The MLP on 3 CPU devices, seed 7, AdamW (decoupled
// weight decay, gradient clipping: each device clips with the blocked norm), 3 steps on one batch: ShardOptimizer
// trains to the very bits of ShardNone (every replica, and the checksum), while each device keeps a part of
// AdamW's state (8 bytes per parameter): the parts add up to the state of one unsharded replica, each smaller
// than it.
func TestShardOptimizer(t *testing.T) {
	if (dptrain.TrainerOptions{}).Shard != dptrain.ShardNone {
		t.Fatal("the zero TrainerOptions shards")
	}
	ctx := newContext(t, shardDevices)
	m := shardModel(t)
	none := shardTrain(t, ctx, m, dptrain.ShardNone, 0)
	sharded := shardTrain(t, ctx, m, dptrain.ShardOptimizer, 0)
	if !bitwiseEqual(none.start, sharded.start) {
		t.Fatal("the same seed starts on different parameters")
	}
	if bitwiseEqual(none.start, none.replicas[0]) {
		t.Fatal("3 steps left the parameters unchanged")
	}
	for d := 0; d < shardDevices; d++ {
		if !bitwiseEqual(none.replicas[0], none.replicas[d]) {
			t.Errorf("ShardNone: replica %d differs from replica 0", d)
		}
		if !bitwiseEqual(none.replicas[d], sharded.replicas[d]) {
			t.Errorf("replica %d: ShardOptimizer trains to other bits than ShardNone", d)
		}
	}
	if none.checksum != sharded.checksum {
		t.Errorf("checksum: ShardNone %s, ShardOptimizer %s", none.checksum, sharded.checksum)
	}

	whole := none.memory[0].OptimizerState
	if whole != 8*shardParameters {
		t.Fatalf("AdamW's state of an unsharded replica: %d bytes, want %d", whole, 8*shardParameters)
	}
	var sum uint64
	for d := 0; d < shardDevices; d++ {
		checkParts(t, none.memory[d], shardParameters, true, fmt.Sprintf("ShardNone, device %d", d))
		checkParts(t, sharded.memory[d], shardParameters, true, fmt.Sprintf("ShardOptimizer, device %d", d))
		if got := none.memory[d].OptimizerState; got != whole {
			t.Errorf("ShardNone, device %d: optimizer state %d bytes, want the whole %d", d, got, whole)
		}
		part := sharded.memory[d].OptimizerState
		if part == 0 || part >= whole {
			t.Errorf("ShardOptimizer, device %d: optimizer state %d bytes, want a part of %d", d, part, whole)
		}
		t.Logf("device %d: %+v", d, sharded.memory[d])
		sum += part
	}
	if sum != whole {
		t.Errorf("the devices' parts of the optimizer state add up to %d bytes, not the unsharded %d", sum, whole)
	}
}

// TestShardGradients: ShardGradients with buckets of 4096 bytes and one micro-batch per step trains to the very
// bits of ShardNone (every replica, and the checksum) on the MLP and on a deeper one. Each device keeps the
// optimizer state of the same range as with ShardOptimizer (the parts add up to the unsharded state) and the
// summed gradient of that range (AdamW: half its state's bytes) plus two staging buckets, the same on every
// device: over the devices the ranges add up to one unsharded gradient. The MLP's 8320-parameter layer fills
// its buckets, so there sharding the gradient saves nothing; on the deeper MLP (six alike layers, six buckets)
// each device reports less than an unsharded replica's gradient, and the three together less than three
// unsharded replicas'.
func TestShardGradients(t *testing.T) {
	ctx := newContext(t, shardDevices)
	for _, c := range []struct {
		name       string
		model      *dptrain.Model
		parameters int
		saves      bool // sharding the gradient saves memory
	}{
		{"MLP", shardModel(t), shardParameters, false},
		{"deep MLP", shardDeepModel(t), shardDeepParameters, true},
	} {
		none := shardTrain(t, ctx, c.model, dptrain.ShardNone, 0)
		optimizer := shardTrain(t, ctx, c.model, dptrain.ShardOptimizer, 0)
		gradients := shardTrain(t, ctx, c.model, dptrain.ShardGradients, shardBucketBytes)
		if bitwiseEqual(none.start, none.replicas[0]) {
			t.Fatalf("%s: 3 steps left the parameters unchanged", c.name)
		}
		for d := 0; d < shardDevices; d++ {
			if !bitwiseEqual(none.replicas[d], gradients.replicas[d]) {
				t.Errorf("%s, replica %d: ShardGradients trains to other bits than ShardNone", c.name, d)
			}
		}
		if none.checksum != gradients.checksum {
			t.Errorf("%s: checksum: ShardNone %s, ShardGradients %s", c.name, none.checksum, gradients.checksum)
		}

		whole := none.memory[0].Gradients
		if whole != uint64(4*c.parameters) {
			t.Fatalf("%s: the gradient of an unsharded replica: %d bytes, want %d", c.name, whole, 4*c.parameters)
		}
		staging := gradients.memory[0].Gradients - gradients.memory[0].OptimizerState/2
		var state, ranges, sum uint64
		for d := 0; d < shardDevices; d++ {
			what := fmt.Sprintf("%s, ShardGradients, device %d", c.name, d)
			m := gradients.memory[d]
			checkParts(t, m, c.parameters, false, what)
			if m.OptimizerState != optimizer.memory[d].OptimizerState {
				t.Errorf("%s: optimizer state %d bytes, ShardOptimizer's %d", what, m.OptimizerState,
					optimizer.memory[d].OptimizerState)
			}
			// The range's gradient takes 4 bytes per parameter, its AdamW state 8.
			if m.Gradients < m.OptimizerState/2 || m.Gradients-m.OptimizerState/2 != staging {
				t.Errorf("%s: gradients %d bytes, want the range's %d plus device 0's staging %d", what,
					m.Gradients, m.OptimizerState/2, staging)
			}
			if c.saves && m.Gradients >= whole {
				t.Errorf("%s: gradients %d bytes, not less than an unsharded replica's %d", what, m.Gradients, whole)
			}
			t.Logf("%s: %+v", what, m)
			state += m.OptimizerState
			ranges += m.Gradients - staging
			sum += m.Gradients
		}
		if staging == 0 {
			t.Errorf("%s: no staging buckets", c.name)
		}
		if state != none.memory[0].OptimizerState {
			t.Errorf("%s: the devices' optimizer states add up to %d bytes, not the unsharded %d", c.name, state,
				none.memory[0].OptimizerState)
		}
		if ranges != whole {
			t.Errorf("%s: the devices' ranges of the gradient add up to %d bytes, not the unsharded %d", c.name,
				ranges, whole)
		}
		if c.saves && sum >= shardDevices*whole {
			t.Errorf("%s: the devices' gradients take %d bytes, not less than %d unsharded", c.name, sum,
				shardDevices*whole)
		}
	}
}

// TestShardParameters: ShardParameters with buckets of 4096 bytes and one micro-batch per step trains the
// deeper MLP (six alike layers, six buckets) to the very bits of ShardNone: every replica's parameters (each
// gathered from the devices' ranges), the checksum, and the loss and accuracy of an evaluation after the steps
// (whose passes gather the parameters as training does); the start gathers to ShardNone's too. Each device
// keeps ShardGradients' optimizer state and gradient, and of the parameters its range (AdamW: half its state's
// bytes) plus a gather buffer, the same on every device: over the devices the ranges add up to one unsharded
// replica's parameters, and each device's parameters take less than an unsharded replica's.
func TestShardParameters(t *testing.T) {
	ctx := newContext(t, shardDevices)
	m := shardDeepModel(t)
	none := shardTrain(t, ctx, m, dptrain.ShardNone, 0)
	gradients := shardTrain(t, ctx, m, dptrain.ShardGradients, shardBucketBytes)
	parameters := shardTrain(t, ctx, m, dptrain.ShardParameters, shardBucketBytes)
	if !bitwiseEqual(none.start, parameters.start) {
		t.Fatal("the same seed starts on different parameters")
	}
	if bitwiseEqual(none.start, none.replicas[0]) {
		t.Fatal("3 steps left the parameters unchanged")
	}
	for d := 0; d < shardDevices; d++ {
		if !bitwiseEqual(none.replicas[d], parameters.replicas[d]) {
			t.Errorf("replica %d: ShardParameters trains to other bits than ShardNone", d)
		}
	}
	if none.checksum != parameters.checksum {
		t.Errorf("checksum: ShardNone %s, ShardParameters %s", none.checksum, parameters.checksum)
	}
	if math.Float64bits(none.eval.Loss) != math.Float64bits(parameters.eval.Loss) ||
		none.eval.Accuracy != parameters.eval.Accuracy {
		t.Errorf("the evaluation: ShardNone loss %v accuracy %v, ShardParameters loss %v accuracy %v",
			none.eval.Loss, none.eval.Accuracy, parameters.eval.Loss, parameters.eval.Accuracy)
	}

	whole := none.memory[0].Parameters
	if whole != 4*shardDeepParameters {
		t.Fatalf("the parameters of an unsharded replica: %d bytes, want %d", whole, 4*shardDeepParameters)
	}
	gather := parameters.memory[0].Parameters - parameters.memory[0].OptimizerState/2
	var ranges, sum uint64
	for d := 0; d < shardDevices; d++ {
		what := fmt.Sprintf("ShardParameters, device %d", d)
		m := parameters.memory[d]
		if g := gradients.memory[d]; m.OptimizerState != g.OptimizerState || m.Gradients != g.Gradients {
			t.Errorf("%s: optimizer state %d and gradients %d bytes, ShardGradients' %d and %d", what,
				m.OptimizerState, m.Gradients, g.OptimizerState, g.Gradients)
		}
		// The range's parameters take 4 bytes per parameter, its AdamW state 8.
		if m.Parameters < m.OptimizerState/2 || m.Parameters-m.OptimizerState/2 != gather {
			t.Errorf("%s: parameters %d bytes, want the range's %d plus device 0's gather buffer %d", what,
				m.Parameters, m.OptimizerState/2, gather)
		}
		if m.Parameters >= whole {
			t.Errorf("%s: parameters %d bytes, not less than an unsharded replica's %d", what, m.Parameters, whole)
		}
		if m.Buffers != 0 {
			t.Errorf("%s: %d bytes of buffers without batch norm", what, m.Buffers)
		}
		if m.Activations == 0 {
			t.Errorf("%s: no activation bytes after 3 steps", what)
		}
		if s := m.Parameters + m.Gradients + m.OptimizerState + m.Buffers + m.Activations; m.Total != s {
			t.Errorf("%s: total %d, the parts add up to %d", what, m.Total, s)
		}
		t.Logf("%s: %+v", what, m)
		ranges += m.Parameters - gather
		sum += m.Parameters
	}
	if gather == 0 {
		t.Error("no gather buffer")
	}
	if ranges != whole {
		t.Errorf("the devices' ranges of the parameters add up to %d bytes, not the unsharded %d", ranges, whole)
	}
	if sum >= shardDevices*whole {
		t.Errorf("the devices' parameters take %d bytes, not less than %d unsharded", sum, shardDevices*whole)
	}
}

// TestShardRefusals: a device past the last (or a negative one) is StatusOutOfRange, and the trainer is
// unharmed; a shard mode outside the enum (4, -1) is StatusInvalidArgument, naming the option, and so is a
// shard scope outside it (2, -1); ShardScopeWorld without a communicator shards within the process.
func TestShardRefusals(t *testing.T) {
	ctx := newContext(t, shardDevices)
	m := tinyModel(t)
	tr := newTrainer(t, ctx, m, nil)
	_, err := tr.ReplicaMemory(shardDevices)
	wantError(t, err, dptrain.StatusOutOfRange, "Trainer.ReplicaMemory", "dpt_trainer_replica_memory")
	_, err = tr.ReplicaMemory(-1)
	wantError(t, err, dptrain.StatusOutOfRange, "Trainer.ReplicaMemory", "device is negative (-1)")
	mem, err := tr.ReplicaMemory(shardDevices - 1)
	must(t, err)
	if n, _ := tr.ParameterCount(); mem.Parameters != uint64(4*n) {
		t.Errorf("the last replica's parameters take %d bytes, want %d", mem.Parameters, 4*n)
	}
	for _, bad := range []dptrain.ShardMode{4, -1} {
		_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Shard: bad})
		wantError(t, err, dptrain.StatusInvalidArgument, "shard mode")
	}
	for _, bad := range []dptrain.ShardScope{2, -1} {
		_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Shard: dptrain.ShardOptimizer, ShardScope: bad})
		wantError(t, err, dptrain.StatusInvalidArgument, "shard scope")
	}
	world, err := dptrain.NewTrainer(ctx, m,
		&dptrain.TrainerOptions{Shard: dptrain.ShardOptimizer, ShardScope: dptrain.ShardScopeWorld})
	must(t, err)
	var parts uint64
	for d := 0; d < shardDevices; d++ {
		part, err := world.ReplicaMemory(d)
		must(t, err)
		parts += part.OptimizerState
	}
	if whole, err := tr.ReplicaMemory(0); err != nil || parts != whole.OptimizerState {
		t.Errorf("ShardScopeWorld in one process: the devices keep %d bytes of state, one unsharded device %d (%v)",
			parts, whole.OptimizerState, err)
	}
	world.Close()
	for _, mode := range []dptrain.ShardMode{
		dptrain.ShardOptimizer, dptrain.ShardGradients, dptrain.ShardParameters} {
		sharded, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Shard: mode})
		must(t, err)
		sharded.Close()
	}
}

// TestShardTiedParameters: the deep MLP with its third hidden layer's weight tied to its second's (Model.Tie:
// one parameter, two writers of its gradient, in different buckets): ShardGradients and ShardParameters train
// to the very bits of ShardNone (every replica, the checksum and the evaluation).
func TestShardTiedParameters(t *testing.T) {
	ctx := newContext(t, shardDevices)
	m := shardDeepModel(t)
	must(t, m.Tie("4.weight", "2.weight"))
	plain := shardTrain(t, ctx, m, dptrain.ShardNone, shardBucketBytes)
	for _, mode := range []dptrain.ShardMode{dptrain.ShardGradients, dptrain.ShardParameters} {
		run := shardTrain(t, ctx, m, mode, shardBucketBytes)
		for d := 0; d < shardDevices; d++ {
			if !bitwiseEqual(run.replicas[d], plain.replicas[0]) {
				t.Errorf("ShardMode %d, tied: replica %d differs from ShardNone", mode, d)
			}
		}
		if run.checksum != plain.checksum || run.eval.Loss != plain.eval.Loss {
			t.Errorf("ShardMode %d, tied: checksum %s, loss %v; ShardNone %s, %v", mode, run.checksum,
				run.eval.Loss, plain.checksum, plain.eval.Loss)
		}
	}
}
