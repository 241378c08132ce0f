// Package dptrain trains neural networks data-parallel across the devices of this process (CPU devices
// today), in-process, through libdptrain's stable C API.
//
// A Context owns the devices, a Model describes a network, a Dataset holds samples in host memory, and a
// Trainer keeps one parameter replica per device: each Step splits a batch across the devices, all-reduces
// the gradients and updates every replica identically. A Model is built layer by layer (AddConv2D, AddDense,
// ...) or as a graph whose builders name their input Tensors and return the one they make (Conv2D,
// BatchNorm, Add, ...); it has named parameters and buffers and is written and read as JSON (Model.ToJSON,
// ModelFromJSON). A Trainer saves and loads the named weights as safetensors. A token model
// (NewTokenModel, TokenEmbedding, PositionEmbedding, Linear, CausalSelfAttention, Tie for a head tied to the
// embedding, or BuiltinModel("gpt-mini")) reads int32 tokens and trains with StepTokens on token datasets
// (NewTokenDataset, LoadText); a target of IgnoreLabel does not count.
//
//	ctx, err := dptrain.NewContext(&dptrain.ContextOptions{CPUDevices: 2})
//	if err != nil { ... }
//	defer ctx.Close()
//	model, _ := dptrain.BuiltinModel("lenet")
//	defer model.Close()
//	trainer, _ := dptrain.NewTrainer(ctx, model, &dptrain.TrainerOptions{Seed: 1})
//	defer trainer.Close()
//	result, err := trainer.Step(inputs, labels) // []float32 (NCHW), []int32
//
// Conventions:
//   - Constructors return (T, error); every failure is an error, never a panic. Library failures are
//     *Error values carrying the Status, its Category and the library's message; errors.Is matches a
//     Status (dptrain.StatusSizeMismatch) or a category sentinel (dptrain.ErrInvalidArgument), and
//     errors.Is(err, dptrain.ErrClosed) reports use of a closed handle.
//   - Lifetimes are explicit: call Close on every Context, Model, Dataset and Trainer. Close is idempotent;
//     any later use returns an error wrapping ErrClosed. Finalizers only back up a forgotten Close.
//     A handle closed while a call on it is running is released when that call returns; a Context stays
//     alive (closed to new use) until the last Trainer created on it is closed.
//   - Slices cross without copies: the library reads inputs from, and writes outputs into, the caller's
//     []float32 and []int32 during the call and keeps no reference afterwards.
//   - A Trainer or Model is used by one goroutine at a time; a concurrent call returns an error wrapping
//     ErrBusy instead of racing. While Fit is paused in its progress callback, the callback may read the
//     trainer and save checkpoints. Contexts and Datasets may be shared: trainers created on one Context
//     may train on different goroutines, and Datasets are read-only.
//   - Sizes are ints; a negative size is an error (StatusOutOfRange).
package dptrain
