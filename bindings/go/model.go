package dptrain

import (
	"runtime"

	"dptrain.org/dptrain/internal/swig"
)

// Activation is an elementwise activation function.
type Activation int

// Activations.
const (
	ReLU     Activation = 0 // max(0, x)
	Sigmoid  Activation = 1 // 1 / (1 + exp(-x))
	Tanh     Activation = 2 // tanh(x)
	GELU     Activation = 3 // x * Phi(x), Phi the normal distribution function (erf)
	GELUTanh Activation = 4 // GELU's tanh approximation
)

// PoolKind is a pooling kind.
type PoolKind int

// Pooling kinds.
const (
	PoolAvg PoolKind = 0 // average over the window
	PoolMax PoolKind = 1 // maximum over the window
)

// Model describes a classifier (a graph of ops and the shapes of its tensors, not weights). Every model
// ends in a softmax cross-entropy loss over its output tensor. The AddXxx methods append a node on the
// current output (a sequential model); the graph builders (Conv2D, BatchNorm, Add, ...) name the tensors
// they read and return the Tensor they make, so any DAG can be built (see graph.go). A Trainer copies the
// model, so the Model may be closed once trainers exist.
type Model struct {
	ptr swig.Model
	h   *handle
}

func wrapModel(ptr swig.Model) *Model {
	m := &Model{ptr: ptr, h: newHandle("Model", func() { swig.DeleteModel(ptr) })}
	runtime.SetFinalizer(m, (*Model).Close)
	return m
}

// NewModel creates an empty model whose samples have shape channels x height x width.
func NewModel(channels, height, width int) (*Model, error) {
	const op = "NewModel"
	c, err := toSize(op, "channels", channels)
	if err != nil {
		return nil, err
	}
	hh, err := toSize(op, "height", height)
	if err != nil {
		return nil, err
	}
	w, err := toSize(op, "width", width)
	if err != nil {
		return nil, err
	}
	var ptr swig.Model
	if err := call(op, func() { ptr = swig.NewModel(c, hh, w) }); err != nil {
		return nil, err
	}
	return wrapModel(ptr), nil
}

// NewTokenModel creates an empty model whose samples are sequences of sequenceLength int32 tokens
// (InputTensor, read only by TokenEmbedding). Train it with Trainer.StepTokens.
func NewTokenModel(sequenceLength int) (*Model, error) {
	const op = "NewTokenModel"
	n, err := toSize(op, "sequenceLength", sequenceLength)
	if err != nil {
		return nil, err
	}
	var ptr swig.Model
	if err := call(op, func() { ptr = swig.ModelCreateTokens(n) }); err != nil {
		return nil, err
	}
	return wrapModel(ptr), nil
}

// BuiltinModel creates a built-in model: "lenet", "mlp" or "resnet18" for 1x28x28 inputs and 10 classes
// (resnet18: ResNet-18 with batch norm, 11.17 M parameters, named as torchvision names them), or
// "gpt-mini", a GPT-2-style decoder on 128 byte tokens (LoadText) with 256 logits at every position (3.32 M
// parameters, named as nanoGPT names them).
func BuiltinModel(name string) (*Model, error) {
	const op = "BuiltinModel"
	if name == "" {
		return nil, newError(op, StatusInvalidArgument,
			"the model name is empty (want \"lenet\", \"mlp\", \"resnet18\" or \"gpt-mini\")")
	}
	if err := cString(op, "name", name); err != nil {
		return nil, err
	}
	var ptr swig.Model
	if err := call(op, func() { ptr = swig.ModelBuiltin(name) }); err != nil {
		return nil, err
	}
	return wrapModel(ptr), nil
}

// Close releases the model. It is idempotent and always returns nil.
func (m *Model) Close() error {
	if m != nil && m.h != nil {
		m.h.close()
	}
	return nil
}

// do runs f as one call on the model.
func (m *Model) do(op string, modifies bool, f func()) error {
	if m == nil || m.h == nil {
		return nilHandle(op, "model")
	}
	a := shared
	if modifies {
		a = exclusive
	}
	token, err := m.h.acquire(op, a)
	if err != nil {
		return err
	}
	defer m.h.release(token)
	return call(op, f)
}

// AddDense appends a fully connected layer with units outputs (it flattens its input).
func (m *Model) AddDense(units int) error {
	const op = "Model.AddDense"
	u, err := toSize(op, "units", units)
	if err != nil {
		return err
	}
	return m.do(op, true, func() { m.ptr.AddDense(u) })
}

// AddConv2D appends a 2-D convolution with square kernels.
func (m *Model) AddConv2D(outChannels, kernel, stride, padding int) error {
	const op = "Model.AddConv2D"
	var v [4]int64
	for i, a := range []struct {
		name string
		v    int
	}{{"outChannels", outChannels}, {"kernel", kernel}, {"stride", stride}, {"padding", padding}} {
		n, err := toSize(op, a.name, a.v)
		if err != nil {
			return err
		}
		v[i] = n
	}
	return m.do(op, true, func() { m.ptr.AddConv2d(v[0], v[1], v[2], v[3]) })
}

// AddPool appends a pooling layer over square windows (no padding).
func (m *Model) AddPool(kind PoolKind, window, stride int) error {
	const op = "Model.AddPool"
	w, err := toSize(op, "window", window)
	if err != nil {
		return err
	}
	s, err := toSize(op, "stride", stride)
	if err != nil {
		return err
	}
	return m.do(op, true, func() { m.ptr.AddPool(swig.Dpt_pool_kind(kind), w, s) })
}

// AddActivation appends an elementwise activation.
func (m *Model) AddActivation(a Activation) error {
	return m.do("Model.AddActivation", true, func() { m.ptr.AddActivation(swig.Dpt_activation(a)) })
}

// AddFlatten appends a flatten layer (C x H x W -> CHW x 1 x 1).
func (m *Model) AddFlatten() error {
	return m.do("Model.AddFlatten", true, func() { m.ptr.AddFlatten() })
}

// AddDropout appends inverted dropout with the given rate in [0, 1).
func (m *Model) AddDropout(rate float32) error {
	return m.do("Model.AddDropout", true, func() { m.ptr.AddDropout(rate) })
}

func (m *Model) size(op string, get func() int64) (int, error) {
	var n int64
	err := m.do(op, false, func() { n = get() })
	return int(n), err
}

// InputSize returns the number of floats per input sample (channels * height * width); a token model:
// the tokens per sample.
func (m *Model) InputSize() (int, error) {
	return m.size("Model.InputSize", func() int64 { return m.ptr.InputSize() })
}

// InputType says whether the model reads float32 values or int32 tokens.
func (m *Model) InputType() (InputType, error) {
	var t swig.Dpt_input_type
	err := m.do("Model.InputType", false, func() { t = m.ptr.InputType() })
	return InputType(t), err
}

// OutputSize returns the number of outputs (classes): the floats of one sample of the output tensor (a
// language model's [T, V] logits: T * V).
func (m *Model) OutputSize() (int, error) {
	return m.size("Model.OutputSize", func() int64 { return m.ptr.OutputSize() })
}

// ParameterCount returns the number of trainable parameters (floats).
func (m *Model) ParameterCount() (int, error) {
	return m.size("Model.ParameterCount", func() int64 { return m.ptr.ParameterCount() })
}

// LayerCount returns the number of layers.
func (m *Model) LayerCount() (int, error) {
	return m.size("Model.LayerCount", func() int64 { return m.ptr.LayerCount() })
}

// Describe returns a one-line description, e.g. "1x28x28 conv3x3s1p0:20 relu ... dense:10".
func (m *Model) Describe() (string, error) {
	var s string
	err := m.do("Model.Describe", false, func() { s = m.ptr.Describe() })
	return s, err
}
