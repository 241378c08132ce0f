package dptrain

import (
	"strconv"
	"strings"

	"dptrain.org/dptrain/internal/swig"
)

// Tensor is the id of a tensor of a model graph: InputTensor (0) is the input, and each added node makes
// one new tensor, numbered in the order of the calls (docs/c-api.md, model.h).
type Tensor int

// InputTensor is the model's input.
const InputTensor Tensor = 0

// TensorKind says which flat vector a named tensor lies in.
type TensorKind int

// Kinds of named tensors.
const (
	TensorParameter TensorKind = 0 // a trainable parameter, in Trainer.Parameters
	TensorBuffer    TensorKind = 1 // a buffer (running statistics of a batch norm), in Trainer.Buffers
)

// String returns "parameter" or "buffer".
func (k TensorKind) String() string {
	switch k {
	case TensorParameter:
		return "parameter"
	case TensorBuffer:
		return "buffer"
	}
	return kindName("TensorKind", int(k))
}

// NamedTensor is a named parameter or buffer of a model: its floats are
// flat[Offset : Offset+Size()] of the trainer's parameter (or buffer) vector.
type NamedTensor struct {
	Kind   TensorKind
	Name   string // e.g. "layer1.0.conv1.weight", "bn1.running_mean"
	Shape  []int  // its whole shape, e.g. [64 1 3 3]
	Offset int    // index of its first float in the flat vector
}

// Size returns the number of floats of the tensor (the product of its shape).
func (t NamedTensor) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// toTensor checks a tensor id argument: a negative id names no tensor (StatusInvalidArgument, as the
// library answers for an id that does not exist).
func toTensor(op, name string, t Tensor) (int64, error) {
	if t < 0 {
		return 0, newError(op, StatusInvalidArgument, "%s: tensor %d does not exist", name, int(t))
	}
	return int64(t), nil
}

// sizes converts size arguments, named by names (one name per value).
func sizes(op string, names []string, values ...int) ([]int64, error) {
	out := make([]int64, len(values))
	for i, v := range values {
		n, err := toSize(op, names[i], v)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// node runs one graph builder: it checks the node name and the input tensors, then calls build under an
// exclusive use of the model and returns the id of the tensor it made.
func (m *Model) node(op, name string, inputs []Tensor, build func(in []int64) int64) (Tensor, error) {
	if err := cString(op, "name", name); err != nil {
		return 0, err
	}
	in := make([]int64, len(inputs))
	for i, t := range inputs {
		v, err := toTensor(op, "input", t)
		if err != nil {
			return 0, err
		}
		in[i] = v
	}
	var out int64
	if err := m.do(op, true, func() { out = build(in) }); err != nil {
		return 0, err
	}
	return Tensor(out), nil
}

// Conv2D adds a 2-D convolution of input ([c, h, w]) with square kernels; bias false leaves out the bias
// (before a batch norm). name "" names the node after its index. It returns the new tensor.
func (m *Model) Conv2D(input Tensor, outChannels, kernel, stride, padding int, bias bool, name string) (Tensor, error) {
	const op = "Model.Conv2D"
	v, err := sizes(op, []string{"outChannels", "kernel", "stride", "padding"}, outChannels, kernel, stride, padding)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.Conv2d(in[0], v[0], v[1], v[2], v[3], bias, name)
	})
}

// Dense adds a fully connected layer with units outputs over input (flattened).
func (m *Model) Dense(input Tensor, units int, bias bool, name string) (Tensor, error) {
	const op = "Model.Dense"
	u, err := toSize(op, "units", units)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 { return m.ptr.Dense(in[0], u, bias, name) })
}

// Linear adds a fully connected layer over the last dimension of input ([..., in] -> [..., units], every
// row by one weight [units, in]), as PyTorch's nn.Linear.
func (m *Model) Linear(input Tensor, units int, bias bool, name string) (Tensor, error) {
	const op = "Model.Linear"
	u, err := toSize(op, "units", units)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 { return m.ptr.Linear(in[0], u, bias, name) })
}

// TokenEmbedding adds a token embedding of a token model's input (InputTensor, [T] tokens) -> [T,
// features], row t the table row of token t (parameter weight [vocabulary, features], GPT-2's wte).
func (m *Model) TokenEmbedding(input Tensor, vocabulary, features int, name string) (Tensor, error) {
	const op = "Model.TokenEmbedding"
	v, err := sizes(op, []string{"vocabulary", "features"}, vocabulary, features)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.TokenEmbedding(in[0], v[0], v[1], name)
	})
}

// PositionEmbedding adds a learned position embedding to input [T, C]: y[t] = x[t] + weight[t] (parameter
// weight [T, C], GPT-2's wpe).
func (m *Model) PositionEmbedding(input Tensor, name string) (Tensor, error) {
	return m.node("Model.PositionEmbedding", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.PositionEmbedding(in[0], name)
	})
}

// CausalSelfAttention adds multi-head causal self-attention over input [T, 3C] (queries, keys and values
// side by side, as a Linear to 3C makes them) -> [T, C]; heads divides C. dropout drops attention
// probabilities in training (keyed by the global sample, as Dropout); 0 = none.
func (m *Model) CausalSelfAttention(input Tensor, heads int, dropout float32, name string) (Tensor, error) {
	const op = "Model.CausalSelfAttention"
	h, err := toSize(op, "heads", heads)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.CausalSelfAttention(in[0], h, dropout, name)
	})
}

// BatchNorm adds a batch norm over the channels of input ([c] or [c, h, w]), as PyTorch's BatchNorm2d
// (parameters weight and bias; buffers running_mean and running_var), e.g. eps 1e-5, momentum 0.1.
func (m *Model) BatchNorm(input Tensor, eps, momentum float32, name string) (Tensor, error) {
	return m.node("Model.BatchNorm", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.BatchNorm(in[0], eps, momentum, name)
	})
}

// LayerNorm adds a layer norm over the last dimension of each sample (parameters weight and bias).
func (m *Model) LayerNorm(input Tensor, eps float32, name string) (Tensor, error) {
	return m.node("Model.LayerNorm", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.LayerNorm(in[0], eps, name)
	})
}

// Activation adds an elementwise activation of input.
func (m *Model) Activation(input Tensor, a Activation, name string) (Tensor, error) {
	return m.node("Model.Activation", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.Activation(in[0], swig.Dpt_activation(a), name)
	})
}

// Pool adds a pooling layer over square windows of input (no padding; the output size rounds down).
func (m *Model) Pool(input Tensor, kind PoolKind, window, stride int, name string) (Tensor, error) {
	const op = "Model.Pool"
	v, err := sizes(op, []string{"window", "stride"}, window, stride)
	if err != nil {
		return 0, err
	}
	return m.node(op, name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.Pool(in[0], swig.Dpt_pool_kind(kind), v[0], v[1], name)
	})
}

// GlobalAvgPool adds global average pooling: [c, h, w] -> [c].
func (m *Model) GlobalAvgPool(input Tensor, name string) (Tensor, error) {
	return m.node("Model.GlobalAvgPool", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.GlobalAvgPool(in[0], name)
	})
}

// Flatten adds a flatten of input: any shape -> its size.
func (m *Model) Flatten(input Tensor, name string) (Tensor, error) {
	return m.node("Model.Flatten", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.Flatten(in[0], name)
	})
}

// Dropout adds inverted dropout of input with the given rate in [0, 1).
func (m *Model) Dropout(input Tensor, rate float32, name string) (Tensor, error) {
	return m.node("Model.Dropout", name, []Tensor{input}, func(in []int64) int64 {
		return m.ptr.Dropout(in[0], rate, name)
	})
}

// Add adds the elementwise sum of a and b, which have one shape (a residual join).
func (m *Model) Add(a, b Tensor, name string) (Tensor, error) {
	return m.node("Model.Add", name, []Tensor{a, b}, func(in []int64) int64 {
		return m.ptr.Add(in[0], in[1], name)
	})
}

// Concat adds the concatenation of 2 or 3 tensors along the channels (dimension 0); their other
// dimensions must agree. (The C API also takes 4; the shared SWIG layer wraps 2 and 3.)
func (m *Model) Concat(inputs []Tensor, name string) (Tensor, error) {
	const op = "Model.Concat"
	switch len(inputs) {
	case 2:
		return m.node(op, name, inputs, func(in []int64) int64 { return m.ptr.Concat2(in[0], in[1], name) })
	case 3:
		return m.node(op, name, inputs, func(in []int64) int64 { return m.ptr.Concat3(in[0], in[1], in[2], name) })
	}
	return 0, newError(op, StatusInvalidArgument, "%d inputs (want 2 or 3)", len(inputs))
}

// Tie ties the parameter named parameter (e.g. "lm_head.weight") to the parameter named source of an
// earlier node ("transformer.wte.weight"): one tensor, as PyTorch's lm_head.weight = wte.weight (GPT-2's
// tied LM head). Both nodes read the source's values; its gradient is the sum of both nodes'
// contributions. The tied parameter leaves the flat parameter vector and NamedParameters (ParameterCount
// drops by its size, the offsets of later parameters move down); Describe, ToJSON ("ties") and checkpoints
// name the tie. A source that is itself tied stands for the parameter it is tied to.
//
// A name that is not "<node name>.<parameter>" of the model ("" included), a parameter already tied or the
// source of a tie, shapes that differ, or a source whose node is not before the parameter's is
// StatusInvalidArgument, and the model is unchanged.
func (m *Model) Tie(parameter, source string) error {
	const op = "Model.Tie"
	for _, a := range []struct{ name, value string }{{"parameter", parameter}, {"source", source}} {
		if a.value == "" { // (the generated layer would pass NULL, which the library calls a null pointer)
			return newError(op, StatusInvalidArgument, "%s is empty (want \"<node name>.<parameter>\")", a.name)
		}
		if err := cString(op, a.name, a.value); err != nil {
			return err
		}
	}
	return m.do(op, true, func() { m.ptr.TieParameter(parameter, source) })
}

// Output returns the model's output tensor (the logits): the last added node's tensor unless SetOutput
// picked another; InputTensor while the model has no node.
func (m *Model) Output() (Tensor, error) {
	var t int64
	err := m.do("Model.Output", false, func() { t = m.ptr.OutputTensor() })
	return Tensor(t), err
}

// SetOutput makes t the model's output (the next added node moves it again).
func (m *Model) SetOutput(t Tensor) error {
	const op = "Model.SetOutput"
	v, err := toTensor(op, "tensor", t)
	if err != nil {
		return err
	}
	return m.do(op, true, func() { m.ptr.SetOutput(v) })
}

// TensorCount returns the number of tensors: 1 (the input) + the number of nodes.
func (m *Model) TensorCount() (int, error) {
	return m.size("Model.TensorCount", func() int64 { return m.ptr.TensorCount() })
}

// TensorShape returns the dimensions of one sample of tensor t, e.g. [64 28 28].
func (m *Model) TensorShape(t Tensor) ([]int, error) {
	const op = "Model.TensorShape"
	v, err := toTensor(op, "tensor", t)
	if err != nil {
		return nil, err
	}
	var text string
	if err := m.do(op, false, func() { text = m.ptr.TensorShape(v) }); err != nil {
		return nil, err
	}
	return parseShape(op, text)
}

// BufferCount returns the number of floats of buffers (running statistics) of one replica; 0 without
// batch norm.
func (m *Model) BufferCount() (int, error) {
	return m.size("Model.BufferCount", func() int64 { return m.ptr.BufferCount() })
}

// NamedParameters returns the model's parameters in the order of the flat parameter vector; their
// offsets and sizes cover it exactly.
func (m *Model) NamedParameters() ([]NamedTensor, error) {
	return m.namedTensors("Model.NamedParameters", TensorParameter)
}

// NamedBuffers returns the model's buffers in the order of the flat buffer vector (Trainer.Buffers).
func (m *Model) NamedBuffers() ([]NamedTensor, error) {
	return m.namedTensors("Model.NamedBuffers", TensorBuffer)
}

// NamedTensors returns the named tensors of kind.
func (m *Model) NamedTensors(kind TensorKind) ([]NamedTensor, error) {
	return m.namedTensors("Model.NamedTensors", kind)
}

func (m *Model) namedTensors(op string, kind TensorKind) ([]NamedTensor, error) {
	if m == nil || m.h == nil {
		return nil, nilHandle(op, "model")
	}
	token, err := m.h.acquire(op, shared) // one use of the model for every query below
	if err != nil {
		return nil, err
	}
	defer m.h.release(token)
	k := swig.Dpt_tensor_kind(kind)
	var n int64
	if err := call(op, func() { n = m.ptr.NamedTensorCount(k) }); err != nil {
		return nil, err
	}
	out := make([]NamedTensor, n)
	for i := range out {
		idx := int64(i)
		var shape string
		var offset int64
		t := &out[i]
		if err := call(op, func() { t.Name = m.ptr.NamedTensorName(k, idx) }); err != nil {
			return nil, err
		}
		if err := call(op, func() { offset = m.ptr.NamedTensorOffset(k, idx) }); err != nil {
			return nil, err
		}
		if err := call(op, func() { shape = m.ptr.NamedTensorShape(k, idx) }); err != nil {
			return nil, err
		}
		if t.Shape, err = parseShape(op, shape); err != nil {
			return nil, err
		}
		t.Kind, t.Offset = kind, int(offset)
	}
	return out, nil
}

// parseShape reads the "d0,d1,..." text of the generated layer ("" = a scalar).
func parseShape(op, text string) ([]int, error) {
	if text == "" {
		return []int{}, nil
	}
	parts := strings.Split(text, ",")
	dims := make([]int, len(parts))
	for i, p := range parts {
		d, err := strconv.Atoi(p)
		if err != nil {
			return nil, newError(op, StatusInternal, "unreadable shape %q from the generated layer", text)
		}
		dims[i] = d
	}
	return dims, nil
}

// ToJSON returns the model as JSON (docs/model-json.md); ModelFromJSON reads it back to the same model.
func (m *Model) ToJSON() (string, error) {
	var s string
	err := m.do("Model.ToJSON", false, func() { s = m.ptr.ToJson() })
	return s, err
}

// ModelFromJSON creates the model a JSON text describes (what Model.ToJSON writes; at most 4 MiB).
// A text that is not a model description is StatusFormat; a well-formed description of a model the
// builders refuse gets the builder's status (StatusInvalidArgument, ...). The message names the line,
// column and node.
func ModelFromJSON(text string) (*Model, error) {
	const op = "ModelFromJSON"
	if text == "" {
		return nil, newError(op, StatusFormat, "the JSON text is empty")
	}
	if err := cString(op, "text", text); err != nil {
		return nil, err
	}
	var ptr swig.Model
	if err := call(op, func() { ptr = swig.ModelFromJson(text) }); err != nil {
		return nil, err
	}
	return wrapModel(ptr), nil
}
