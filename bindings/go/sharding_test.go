package dptrain_test

import (
	"fmt"
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

// shardRun is what one run leaves: its start, every replica's parameters, the checksum and every replica's
// memory.
type shardRun struct {
	start    []float32
	replicas [shardDevices][]float32
	checksum string
	memory   [shardDevices]dptrain.ReplicaMemory
}

// checkParts: parameters and gradients are float32 (4 bytes a parameter), no buffers, and the total is the sum.
func checkParts(t *testing.T, m dptrain.ReplicaMemory, what string) {
	t.Helper()
	if m.Parameters != 4*shardParameters || m.Gradients != 4*shardParameters {
		t.Errorf("%s: parameters %d and gradients %d bytes, want %d each", what, m.Parameters, m.Gradients,
			4*shardParameters)
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
	x, y := shardBatch(24) // 8 samples per device
	train := func(shard dptrain.ShardMode) (run shardRun) {
		t.Helper()
		opts := &dptrain.TrainerOptions{Seed: 7, Shard: shard, Optimizer: dptrain.OptimizerOptions{
			Kind: dptrain.AdamW, LearningRate: 0.01, WeightDecay: 0.01, ClipNorm: 0.5}}
		tr := newTrainer(t, ctx, m, opts)
		if n, err := tr.DeviceCount(); err != nil || n != shardDevices {
			t.Fatalf("DeviceCount() = %d, %v; want %d", n, err, shardDevices)
		}
		var err error
		run.start, err = tr.Parameters()
		must(t, err)
		if len(run.start) != shardParameters {
			t.Fatalf("%d parameters, want %d", len(run.start), shardParameters)
		}
		for i := 0; i < 3; i++ {
			r, err := tr.Step(x, y)
			must(t, err)
			if !r.Applied {
				t.Fatalf("ShardMode %d, step %d: not applied: %+v", shard, i+1, r)
			}
		}
		for d := 0; d < shardDevices; d++ {
			run.replicas[d] = make([]float32, shardParameters)
			must(t, tr.ReadReplicaParameters(d, run.replicas[d]))
			run.memory[d], err = tr.ReplicaMemory(d)
			must(t, err)
		}
		run.checksum, err = tr.Checksum()
		must(t, err)
		return run
	}
	none := train(dptrain.ShardNone)
	sharded := train(dptrain.ShardOptimizer)
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
		checkParts(t, none.memory[d], fmt.Sprintf("ShardNone, device %d", d))
		checkParts(t, sharded.memory[d], fmt.Sprintf("ShardOptimizer, device %d", d))
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

// TestShardRefusals: a device past the last (or a negative one) is StatusOutOfRange, and the trainer is
// unharmed; a shard mode outside the enum (2, -1) is StatusInvalidArgument, naming the option.
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
	for _, bad := range []dptrain.ShardMode{2, -1} {
		_, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Shard: bad})
		wantError(t, err, dptrain.StatusInvalidArgument, "shard mode")
	}
	optimizer, err := dptrain.NewTrainer(ctx, m, &dptrain.TrainerOptions{Shard: dptrain.ShardOptimizer})
	must(t, err)
	optimizer.Close()
}
