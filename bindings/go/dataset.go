package dptrain

import (
	"runtime"

	"dptrain.org/dptrain/internal/swig"
)

// DatasetPart selects the part of a standard dataset.
type DatasetPart int

// Dataset parts.
const (
	DatasetTrain DatasetPart = 0 // the training set (train-*)
	DatasetTest  DatasetPart = 1 // the test set (t10k-*)
)

// DefaultFashionMNISTDir is where Debian's dataset-fashion-mnist package puts the data.
const DefaultFashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// IgnoreLabel is a label (target) that does not count, as PyTorch's ignore_index: no loss, no gradient,
// not in the count the loss is divided by (StepResult.Targets).
const IgnoreLabel = -1

// TextVocabulary is the vocabulary of LoadText: one token per byte.
const TextVocabulary = 256

// InputType says what the samples of a dataset (or the input of a model) are.
type InputType int

// Input types.
const (
	InputFloat32 InputType = 0 // float32 values (images NCHW)
	InputTokens  InputType = 1 // int32 tokens, each in [0, vocabulary)
)

// String returns "float32" or "tokens".
func (t InputType) String() string {
	switch t {
	case InputFloat32:
		return "float32"
	case InputTokens:
		return "tokens"
	}
	return kindName("InputType", int(t))
}

// Dataset is a dataset held in host memory: float32 NCHW samples with one int32 label each, or int32
// token sequences with one target per position (next-token targets) or per sample. A label of
// IgnoreLabel does not count. It is read-only, so it may be shared between goroutines and trainers.
type Dataset struct {
	ptr swig.Dataset
	h   *handle
}

func wrapDataset(ptr swig.Dataset) *Dataset {
	d := &Dataset{ptr: ptr, h: newHandle("Dataset", func() { swig.DeleteDataset(ptr) })}
	runtime.SetFinalizer(d, (*Dataset).Close)
	return d
}

// NewDataset creates a dataset from len(labels) samples of channels x height x width floats each
// (copied; the caller keeps its slices). Labels lie in [0, classes).
func NewDataset(inputs []float32, labels []int32, channels, height, width, classes int) (*Dataset, error) {
	const op = "NewDataset"
	if inputs == nil {
		return nil, nilSlice(op, "inputs")
	}
	if labels == nil {
		return nil, nilSlice(op, "labels")
	}
	var dims [4]int64
	for i, a := range []struct {
		name string
		v    int
	}{{"channels", channels}, {"height", height}, {"width", width}, {"classes", classes}} {
		n, err := toSize(op, a.name, a.v)
		if err != nil {
			return nil, err
		}
		dims[i] = n
	}
	var ptr swig.Dataset
	if err := call(op, func() { ptr = swig.NewDataset(inputs, labels, dims[0], dims[1], dims[2], dims[3]) }); err != nil {
		return nil, err
	}
	return wrapDataset(ptr), nil
}

// NewTokenDataset creates a token dataset from samples sequences of sequenceLength tokens (tokens:
// samples * sequenceLength, each in [0, vocabulary)) and their targets: one per position (samples *
// sequenceLength, for a model whose output is [sequenceLength, vocabulary]) or one per sample, each in
// [0, vocabulary) or IgnoreLabel. Both slices are copied.
func NewTokenDataset(tokens, targets []int32, samples, sequenceLength, vocabulary int) (*Dataset, error) {
	const op = "NewTokenDataset"
	if tokens == nil {
		return nil, nilSlice(op, "tokens")
	}
	if targets == nil {
		return nil, nilSlice(op, "targets")
	}
	v, err := sizes(op, []string{"samples", "sequenceLength", "vocabulary"}, samples, sequenceLength, vocabulary)
	if err != nil {
		return nil, err
	}
	var ptr swig.Dataset
	if err := call(op, func() { ptr = swig.DatasetCreateTokens(tokens, targets, v[0], v[1], v[2]) }); err != nil {
		return nil, err
	}
	return wrapDataset(ptr), nil
}

// LoadText loads byte-level text: every byte is a token (vocabulary TextVocabulary), cut into windows of
// contextLength + 1 bytes: a sample's tokens are the first contextLength, its targets the next byte at
// every position. The last validationFraction (in (0, 1)) of the bytes make the validation part, the rest
// the training part. path is a UTF-8 text file, or a directory whose text files are read in name order.
// A path that cannot be read is StatusIO; a file that is not UTF-8 text StatusFormat.
func LoadText(path string, contextLength int, validationFraction float64) (train, validation *Dataset, err error) {
	const op = "LoadText"
	if path == "" {
		return nil, nil, newError(op, StatusInvalidArgument, "empty path")
	}
	if err := cString(op, "path", path); err != nil {
		return nil, nil, err
	}
	n, err := toSize(op, "contextLength", contextLength)
	if err != nil {
		return nil, nil, err
	}
	var t, v swig.Dataset
	err = call(op, func() {
		parts := swig.DatasetLoadText(path, n, validationFraction)
		if parts.Swigcptr() == 0 {
			return // failed: the error is recorded
		}
		defer swig.DeleteTextParts(parts)
		t = parts.TakeTrain()
		v = parts.TakeValidation()
	})
	if err != nil {
		return nil, nil, err
	}
	return wrapDataset(t), wrapDataset(v), nil
}

// LoadIDX loads an IDX image file and its IDX label file (gzip-compressed or plain).
func LoadIDX(imagesPath, labelsPath string) (*Dataset, error) {
	const op = "LoadIDX"
	if imagesPath == "" || labelsPath == "" {
		return nil, newError(op, StatusInvalidArgument, "empty path (images %q, labels %q)", imagesPath, labelsPath)
	}
	if err := cString(op, "imagesPath", imagesPath); err != nil {
		return nil, err
	}
	if err := cString(op, "labelsPath", labelsPath); err != nil {
		return nil, err
	}
	var ptr swig.Dataset
	if err := call(op, func() { ptr = swig.DatasetLoadIdx(imagesPath, labelsPath) }); err != nil {
		return nil, err
	}
	return wrapDataset(ptr), nil
}

// LoadFashionMNIST loads a part of Fashion-MNIST from dir ({train,t10k}-{images-idx3,labels-idx1}-ubyte.gz).
// An empty dir means environment DPTRAIN_DATA_DIR if set, else DefaultFashionMNISTDir.
func LoadFashionMNIST(dir string, part DatasetPart) (*Dataset, error) {
	const op = "LoadFashionMNIST"
	if err := cString(op, "dir", dir); err != nil {
		return nil, err
	}
	var ptr swig.Dataset
	// The generated layer passes "" as NULL: the library's default directory.
	if err := call(op, func() { ptr = swig.DatasetLoadFashionMnist(dir, swig.Dpt_dataset_part(part)) }); err != nil {
		return nil, err
	}
	return wrapDataset(ptr), nil
}

// Close releases the dataset. It is idempotent and always returns nil.
func (d *Dataset) Close() error {
	if d != nil && d.h != nil {
		d.h.close()
	}
	return nil
}

// begin starts a (shared) call on the dataset; end it with d.h.release(shared).
func (d *Dataset) begin(op string) error {
	if d == nil || d.h == nil {
		return nilHandle(op, "dataset")
	}
	_, err := d.h.acquire(op, shared)
	return err
}

func (d *Dataset) do(op string, f func()) error {
	if err := d.begin(op); err != nil {
		return err
	}
	defer d.h.release(shared)
	return call(op, f)
}

// Subset returns a new dataset holding a copy of samples [start, start+count).
func (d *Dataset) Subset(start, count int) (*Dataset, error) {
	const op = "Dataset.Subset"
	s, err := toSize(op, "start", start)
	if err != nil {
		return nil, err
	}
	n, err := toSize(op, "count", count)
	if err != nil {
		return nil, err
	}
	var ptr swig.Dataset
	if err := d.do(op, func() { ptr = d.ptr.Subset(s, n) }); err != nil {
		return nil, err
	}
	return wrapDataset(ptr), nil
}

// Len returns the number of samples.
func (d *Dataset) Len() (int, error) {
	var n int64
	err := d.do("Dataset.Len", func() { n = d.ptr.SampleCount() })
	return int(n), err
}

// Shape returns the shape of one sample.
func (d *Dataset) Shape() (channels, height, width int, err error) {
	var c, h, w int64
	err = d.do("Dataset.Shape", func() {
		c = d.ptr.Channels()
		h = d.ptr.Height()
		w = d.ptr.Width()
	})
	return int(c), int(h), int(w), err
}

// ClassCount returns the number of classes (a token dataset: its vocabulary).
func (d *Dataset) ClassCount() (int, error) {
	var n int64
	err := d.do("Dataset.ClassCount", func() { n = d.ptr.ClassCount() })
	return int(n), err
}

// InputType says whether the samples are float32 values or int32 tokens.
func (d *Dataset) InputType() (InputType, error) {
	var t swig.Dpt_input_type
	err := d.do("Dataset.InputType", func() { t = d.ptr.InputType() })
	return InputType(t), err
}

// TargetsPerSample returns the labels per sample: 1 for a classification dataset, the sequence length
// for next-token targets.
func (d *Dataset) TargetsPerSample() (int, error) {
	var n int64
	err := d.do("Dataset.TargetsPerSample", func() { n = d.ptr.TargetsPerSample() })
	return int(n), err
}

// CopyBatch copies samples [start, start+count) into inputs (count * sample size floats) and labels
// (count entries), the caller's slices, without intermediate copies.
func (d *Dataset) CopyBatch(start, count int, inputs []float32, labels []int32) error {
	const op = "Dataset.CopyBatch"
	s, err := toSize(op, "start", start)
	if err != nil {
		return err
	}
	n, err := toSize(op, "count", count)
	if err != nil {
		return err
	}
	if inputs == nil {
		return nilSlice(op, "inputs")
	}
	if labels == nil {
		return nilSlice(op, "labels")
	}
	return d.do(op, func() { d.ptr.CopyBatch(s, n, inputs, labels) })
}

// CopyTokens copies samples [start, start+count) of a token dataset into tokens (count * sequence length
// entries) and targets (count * TargetsPerSample() entries), the caller's slices, without intermediate
// copies. A float32 dataset is StatusInvalidArgument (use CopyBatch).
func (d *Dataset) CopyTokens(start, count int, tokens, targets []int32) error {
	const op = "Dataset.CopyTokens"
	v, err := sizes(op, []string{"start", "count"}, start, count)
	if err != nil {
		return err
	}
	if tokens == nil {
		return nilSlice(op, "tokens")
	}
	if targets == nil {
		return nilSlice(op, "targets")
	}
	return d.do(op, func() { d.ptr.CopyTokens(v[0], v[1], tokens, targets) })
}
