package dptrain_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dptrain.org/dptrain"
)

// A one-block GPT in small: tokens [T] -> wte (V x 8) -> wpe -> layer norm -> linear 24 (queries, keys,
// values) -> causal self-attention (2 heads) -> lm_head: logits [T, V].
const (
	gptT, gptV, gptC = 6, 11, 8
	gptBatch         = 4
	// wte, wpe, ln_1 (weight, bias), c_attn (weight, bias), lm_head (no bias).
	gptParameters = gptV*gptC + gptT*gptC + 2*gptC + 3*gptC*gptC + 3*gptC + gptV*gptC
)

func tinyGPT(t *testing.T, seqLen, vocabulary int) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewTokenModel(seqLen)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	x, err := m.TokenEmbedding(dptrain.InputTensor, vocabulary, gptC, "wte")
	must(t, err)
	x, err = m.PositionEmbedding(x, "wpe")
	must(t, err)
	x, err = m.LayerNorm(x, 1e-5, "ln_1")
	must(t, err)
	x, err = m.Linear(x, 3*gptC, true, "c_attn")
	must(t, err)
	x, err = m.CausalSelfAttention(x, 2, 0, "attn")
	must(t, err)
	_, err = m.Linear(x, vocabulary, false, "lm_head")
	must(t, err)
	return m
}

// tokenBatch returns step's batch: gptBatch sequences of gptT tokens, each target the next token or (some)
// IgnoreLabel.
func tokenBatch(step int) (tokens, targets []int32) {
	tokens = make([]int32, gptBatch*gptT)
	targets = make([]int32, gptBatch*gptT)
	for s := 0; s < gptBatch; s++ {
		for p := 0; p < gptT; p++ {
			i := s*gptT + p
			tokens[i] = int32((3*s + 5*p + 7*step) % gptV)
			if (i+step)%5 == 2 {
				targets[i] = dptrain.IgnoreLabel
			} else {
				targets[i] = (tokens[i] + 1) % gptV
			}
		}
	}
	return tokens, targets
}

func counted(targets []int32) uint64 {
	n := uint64(0)
	for _, y := range targets {
		if y != dptrain.IgnoreLabel {
			n++
		}
	}
	return n
}

func adamW(seed uint64, scope dptrain.WeightDecayScope, devices ...int) *dptrain.TrainerOptions {
	return &dptrain.TrainerOptions{Seed: seed, Devices: devices, Optimizer: dptrain.OptimizerOptions{
		Kind: dptrain.AdamW, LearningRate: 0.01, WeightDecay: 0.1, WeightDecayScope: scope}}
}

// withoutKeyBias returns a copy of parameters p of tinyGPT without the keys' bias (c_attn.bias[C:2C], set
// to 0). Its gradient is exactly 0 in exact arithmetic (adding b to every key adds q.b to a whole row of
// scores, which the softmax ignores), so in floating point it is rounding noise whose sign differs between
// a 1-device and a 2-device sum, and AdamW's first steps (about lr * sign(g)) make a full step of it either
// way: 3e-3 relative error on this model. The contract holds for it only to within its noise, as in any
// framework (tests/core/test_transformer_equivalence.cpp, whose model leaves the bias out instead).
func withoutKeyBias(t *testing.T, m *dptrain.Model, p []float32) []float32 {
	t.Helper()
	params, err := m.NamedParameters()
	must(t, err)
	out := append([]float32(nil), p...)
	for _, n := range params {
		if n.Name == "c_attn.bias" {
			for i := n.Offset + gptC; i < n.Offset+2*gptC; i++ {
				out[i] = 0
			}
			return out
		}
	}
	t.Fatal("no c_attn.bias")
	return nil
}

func distance(a, b []float32) float64 {
	sum := 0.0
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		sum += d * d
	}
	return math.Sqrt(sum)
}

// englishText returns a few KB of English text, the same on every run.
func englishText() []byte {
	sentences := []string{
		"The quick brown fox jumps over the lazy dog. ",
		"A small model learns the letters of a language before its words. ",
		"Every morning the baker opened the shop and the smell of bread filled the street. ",
		"She wrote the numbers down, checked them twice, and sent the letter. ",
		"Rivers run to the sea, yet the sea is never full. ",
		"He said that the train would leave at seven, but it left at eight. ",
		"When the wind turned, the boats came back to the harbour one by one.\n",
	}
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		text.WriteString(sentences[(i*3+i/7)%len(sentences)])
	}
	return []byte(text.String())
}

func TestTinyGPTShapesNamesAndInputType(t *testing.T) {
	m := tinyGPT(t, gptT, gptV)
	typ, err := m.InputType()
	must(t, err)
	if typ != dptrain.InputTokens || typ.String() != "tokens" {
		t.Fatalf("InputType = %v", typ)
	}
	for _, c := range []struct {
		tensor dptrain.Tensor
		want   []int
	}{{dptrain.InputTensor, []int{gptT}}, {1, []int{gptT, gptC}}, {4, []int{gptT, 3 * gptC}},
		{5, []int{gptT, gptC}}, {6, []int{gptT, gptV}}} {
		shape, err := m.TensorShape(c.tensor)
		must(t, err)
		if !equalInts(shape, c.want) {
			t.Fatalf("tensor %d: shape %v, want %v", c.tensor, shape, c.want)
		}
	}
	if out, err := m.OutputSize(); err != nil || out != gptT*gptV {
		t.Fatalf("OutputSize = %d, %v", out, err)
	}
	if n, err := m.ParameterCount(); err != nil || n != gptParameters {
		t.Fatalf("ParameterCount = %d, %v; want %d", n, err, gptParameters)
	}
	params, err := m.NamedParameters()
	must(t, err)
	first, last := params[0], params[len(params)-1]
	if first.Name != "wte.weight" || !equalInts(first.Shape, []int{gptV, gptC}) || params[1].Name != "wpe.weight" ||
		last.Name != "lm_head.weight" || !equalInts(last.Shape, []int{gptV, gptC}) {
		t.Fatalf("parameters %+v", params)
	}
	if typ, err := tinyModel(t).InputType(); err != nil || typ != dptrain.InputFloat32 {
		t.Fatalf("a float model's InputType = %v, %v", typ, err)
	}

	gpt, err := dptrain.BuiltinModel("gpt-mini")
	must(t, err)
	defer gpt.Close()
	if typ, err := gpt.InputType(); err != nil || typ != dptrain.InputTokens {
		t.Fatalf("gpt-mini InputType = %v, %v", typ, err)
	}
	if n, err := gpt.ParameterCount(); err != nil || n != 3323392 {
		t.Fatalf("gpt-mini ParameterCount = %d, %v", n, err)
	}
	gptParams, err := gpt.NamedParameters()
	must(t, err)
	found := false
	for _, p := range gptParams {
		found = found || (p.Name == "transformer.h.0.attn.c_attn.weight" && equalInts(p.Shape, []int{768, 256}))
	}
	if !found {
		t.Fatal("gpt-mini has no transformer.h.0.attn.c_attn.weight [768 256]")
	}
	out, err := gpt.Output()
	must(t, err)
	if shape, err := gpt.TensorShape(out); err != nil || !equalInts(shape, []int{128, 256}) {
		t.Fatalf("gpt-mini logits %v, %v", shape, err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTokenStepsOnTwoDevicesEqualOneDevice(t *testing.T) {
	ctx := newContext(t, 2)
	m := tinyGPT(t, gptT, gptV)
	two := newTrainer(t, ctx, m, adamW(7, dptrain.WeightDecayMatrices))
	one := newTrainer(t, ctx, m, adamW(7, dptrain.WeightDecayMatrices, 0))
	all := newTrainer(t, ctx, m, adamW(7, dptrain.WeightDecayAll, 0))
	if n, err := two.DeviceCount(); err != nil || n != 2 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	start, err := one.Parameters()
	must(t, err)
	if p, err := two.Parameters(); err != nil || !bitwiseEqual(p, start) {
		t.Fatalf("the same seed gives other initial parameters (%v)", err)
	}
	x0, y0 := tokenBatch(0)
	before, err := two.EvaluateTokens(x0, y0, gptBatch)
	must(t, err)
	if before.Targets != counted(y0) || before.Samples != gptBatch {
		t.Fatalf("EvaluateTokens: %+v, want %d targets", before, counted(y0))
	}
	for step := 0; step < 3; step++ {
		x, y := tokenBatch(step)
		want := counted(y)
		if want >= gptBatch*gptT {
			t.Fatal("no target is ignored")
		}
		r2, err := two.StepTokens(x, y, gptBatch)
		must(t, err)
		r1, err := one.StepTokens(x, y, gptBatch)
		must(t, err)
		_, err = all.StepTokens(x, y, gptBatch)
		must(t, err)
		if r2.Targets != want || r1.Targets != want || r2.Samples != gptBatch || !r2.Applied {
			t.Fatalf("step %d: %+v / %+v, want %d targets", step, r2, r1, want)
		}
		if math.IsNaN(r2.Loss) || math.IsInf(r2.Loss, 0) || math.Abs(r1.Loss-r2.Loss) > 1e-5 {
			t.Fatalf("step %d: losses %v (2 devices), %v (1 device)", step, r2.Loss, r1.Loss)
		}
		if step == 0 && (r2.Loss >= math.Log(gptV)+0.5 || math.Abs(r2.Loss-before.Loss) > 1e-5) {
			t.Fatalf("first loss %v (evaluated before: %v), want below ln %d + 0.5", r2.Loss, before.Loss, gptV)
		}
	}
	a, err := two.Parameters()
	must(t, err)
	b, err := one.Parameters()
	must(t, err)
	ka, kb, kstart := withoutKeyBias(t, m, a), withoutKeyBias(t, m, b), withoutKeyBias(t, m, start)
	moved := distance(kb, kstart)
	if moved == 0 || distance(ka, kb)/moved >= 1e-5 {
		t.Fatalf("2 devices vs 1 (all but the keys' bias): ||a-b|| %g, ||b-start|| %g", distance(ka, kb), moved)
	}
	r0 := make([]float32, len(a))
	r1 := make([]float32, len(a))
	must(t, two.ReadReplicaParameters(0, r0))
	must(t, two.ReadReplicaParameters(1, r1))
	if !bitwiseEqual(r0, r1) {
		t.Fatal("replicas 0 and 1 differ")
	}
	// Decaying the embeddings and norms too gives other parameters: the scope reaches the library.
	c, err := all.Parameters()
	must(t, err)
	if distance(withoutKeyBias(t, m, c), kb)/moved <= 1e-3 {
		t.Fatalf("WeightDecayAll trains as WeightDecayMatrices (%g)", distance(c, b)/moved)
	}

	// Every position's logits: T * V per sample, finite, and causal (position t sees tokens 0..t only).
	x, _ := tokenBatch(5)
	logits := make([]float32, gptBatch*gptT*gptV)
	must(t, two.PredictTokens(x, gptBatch, logits))
	for i, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %d = %v", i, v)
		}
	}
	changed := append([]int32(nil), x...)
	changed[gptT-1] = (changed[gptT-1] + 1) % gptV // the last token of sample 0
	other := make([]float32, len(logits))
	must(t, two.PredictTokens(changed, gptBatch, other))
	for i := 0; i < (gptT-1)*gptV; i++ {
		if math.Abs(float64(logits[i]-other[i])) > 1e-6 {
			t.Fatalf("logit %d of an earlier position changed: %v -> %v", i, logits[i], other[i])
		}
	}
	if bitwiseEqual(logits[(gptT-1)*gptV:gptT*gptV], other[(gptT-1)*gptV:gptT*gptV]) {
		t.Fatal("the last position does not see the changed token")
	}
}

func TestTokenDatasets(t *testing.T) {
	x, y := tokenBatch(1)
	d, err := dptrain.NewTokenDataset(x, y, gptBatch, gptT, gptV)
	must(t, err)
	defer d.Close()
	perSample, err := dptrain.NewTokenDataset(x, []int32{1, 2, dptrain.IgnoreLabel, 4}, gptBatch, gptT, gptV)
	must(t, err)
	defer perSample.Close()
	if typ, err := d.InputType(); err != nil || typ != dptrain.InputTokens {
		t.Fatalf("InputType = %v, %v", typ, err)
	}
	if n, err := d.Len(); err != nil || n != gptBatch {
		t.Fatalf("Len = %d, %v", n, err)
	}
	if n, err := d.TargetsPerSample(); err != nil || n != gptT {
		t.Fatalf("TargetsPerSample = %d, %v", n, err)
	}
	if n, err := perSample.TargetsPerSample(); err != nil || n != 1 {
		t.Fatalf("per sample: TargetsPerSample = %d, %v", n, err)
	}
	if n, err := d.ClassCount(); err != nil || n != gptV {
		t.Fatalf("ClassCount = %d, %v", n, err)
	}
	tokens := make([]int32, 2*gptT)
	targets := make([]int32, 2*gptT)
	must(t, d.CopyTokens(1, 2, tokens, targets))
	for i := range tokens {
		if tokens[i] != x[gptT+i] || targets[i] != y[gptT+i] {
			t.Fatalf("CopyTokens: %v %v, want %v %v", tokens, targets, x[gptT:3*gptT], y[gptT:3*gptT])
		}
	}
	one := make([]int32, 1)
	must(t, perSample.CopyTokens(2, 1, tokens[:gptT], one))
	if one[0] != dptrain.IgnoreLabel || tokens[3] != x[2*gptT+3] {
		t.Fatalf("per sample CopyTokens: %v %v", tokens[:gptT], one)
	}
	f := tinyDataset(t, 4, 1)
	if typ, err := f.InputType(); err != nil || typ != dptrain.InputFloat32 {
		t.Fatalf("float InputType = %v, %v", typ, err)
	}
	if n, err := f.TargetsPerSample(); err != nil || n != 1 {
		t.Fatalf("float TargetsPerSample = %d, %v", n, err)
	}
}

func TestTextLoadsIntoWindowsAndTrains(t *testing.T) {
	text := englishText()
	path := filepath.Join(t.TempDir(), "english.txt")
	must(t, os.WriteFile(path, text, 0o644))
	const context = 16
	n := len(text)
	validationBytes := int(math.Ceil(float64(n) * 0.25))
	trainBytes := n - validationBytes
	train, validation, err := dptrain.LoadText(path, context, 0.25)
	must(t, err)
	defer train.Close()
	defer validation.Close()
	if got, err := train.Len(); err != nil || got != (trainBytes-1)/context {
		t.Fatalf("training samples %d (%v), want (%d - 1) / %d", got, err, trainBytes, context)
	}
	if got, err := validation.Len(); err != nil || got != (validationBytes-1)/context {
		t.Fatalf("validation samples %d (%v), want (%d - 1) / %d", got, err, validationBytes, context)
	}
	if typ, err := train.InputType(); err != nil || typ != dptrain.InputTokens {
		t.Fatalf("InputType = %v, %v", typ, err)
	}
	if k, err := train.TargetsPerSample(); err != nil || k != context {
		t.Fatalf("TargetsPerSample = %d, %v", k, err)
	}
	if v, err := train.ClassCount(); err != nil || v != dptrain.TextVocabulary {
		t.Fatalf("ClassCount = %d, %v", v, err)
	}
	tokens := make([]int32, context)
	targets := make([]int32, context)
	must(t, train.CopyTokens(0, 1, tokens, targets))
	for i := 0; i < context; i++ {
		if tokens[i] != int32(text[i]) || targets[i] != int32(text[i+1]) {
			t.Fatalf("sample 0: tokens %v targets %v, text %q", tokens, targets, text[:context+1])
		}
	}
	must(t, validation.CopyTokens(0, 1, tokens, targets))
	if tokens[0] != int32(text[trainBytes]) {
		t.Fatalf("the validation part starts with %d, want byte %d of the text (%d)", tokens[0], trainBytes, text[trainBytes])
	}

	tr := newTrainer(t, newContext(t, 2), tinyGPT(t, context, dptrain.TextVocabulary), adamW(3, dptrain.WeightDecayMatrices))
	r, err := tr.Fit(train, validation, &dptrain.FitOptions{Epochs: 1, BatchSize: 8})
	must(t, err)
	if r.EpochsCompleted != 1 || !r.HasTest || math.IsNaN(r.TestLoss) || math.IsInf(r.TestLoss, 0) ||
		r.TestLoss >= math.Log(dptrain.TextVocabulary) {
		t.Fatalf("Fit: %+v, want a validation loss below ln 256 = %.4f", r, math.Log(dptrain.TextVocabulary))
	}
	e, err := tr.EvaluateDataset(validation, 0)
	must(t, err)
	samples, _ := validation.Len()
	if math.Abs(e.Loss-r.TestLoss) > 1e-6 || e.Targets != uint64(samples*context) {
		t.Fatalf("EvaluateDataset: %+v, Fit's validation loss %v, %d samples", e, r.TestLoss, samples)
	}
}

func TestBadTokenInput(t *testing.T) {
	ctx := newContext(t, 2)
	m := tinyGPT(t, gptT, gptV)
	tokens := newTrainer(t, ctx, m, adamW(1, dptrain.WeightDecayMatrices))
	floats := newTrainer(t, ctx, tinyModel(t), nil)
	x, y := tokenBatch(0)

	_, err := floats.StepTokens(x, y, gptBatch)
	wantError(t, err, dptrain.StatusInvalidArgument, "Trainer.StepTokens", "dpt_trainer_step_tokens")
	_, err = tokens.Step(make([]float32, gptBatch*gptT), make([]int32, gptBatch))
	wantError(t, err, dptrain.StatusInvalidArgument, "dpt_trainer_step")
	badToken := append([]int32(nil), x...)
	badToken[7] = gptV
	_, err = tokens.StepTokens(badToken, y, gptBatch)
	wantError(t, err, dptrain.StatusOutOfRange, "dpt_trainer_step_tokens")
	badTarget := append([]int32(nil), y...)
	badTarget[3] = -2
	_, err = tokens.StepTokens(x, badTarget, gptBatch)
	wantError(t, err, dptrain.StatusOutOfRange, "dpt_trainer_step_tokens")
	_, err = tokens.EvaluateTokens(x, badTarget, gptBatch)
	wantError(t, err, dptrain.StatusOutOfRange, "dpt_trainer_evaluate_tokens")
	wantError(t, tokens.PredictTokens(badToken, gptBatch, make([]float32, gptBatch*gptT*gptV)),
		dptrain.StatusOutOfRange, "dpt_trainer_predict_tokens")
	wantError(t, tokens.PredictTokens(x, gptBatch, make([]float32, 5)), dptrain.StatusSizeMismatch)
	_, err = tokens.StepTokens(x, y, gptBatch-1)
	wantError(t, err, dptrain.StatusSizeMismatch, "dpt_trainer_step_tokens")
	_, err = tokens.StepTokens(nil, y, gptBatch)
	wantError(t, err, dptrain.StatusNullPointer, "tokens is nil")
	_, err = tokens.StepTokens(x, y, -1)
	wantError(t, err, dptrain.StatusOutOfRange, "batchSize is negative")
	_, _, err = dptrain.LoadText(filepath.Join(t.TempDir(), "missing.txt"), 16, 0.25)
	wantError(t, err, dptrain.StatusIO, "LoadText", "dpt_dataset_load_text")
	_, _, err = dptrain.LoadText("", 16, 0.25)
	wantError(t, err, dptrain.StatusInvalidArgument, "empty path")
	_, err = dptrain.NewTokenDataset(badToken, y, gptBatch, gptT, gptV)
	wantError(t, err, dptrain.StatusOutOfRange, "dpt_dataset_create_tokens")
	_, err = dptrain.NewTokenModel(-6)
	wantError(t, err, dptrain.StatusOutOfRange, "sequenceLength is negative")
	_, err = m.Linear(dptrain.InputTensor, 4, true, "") // only a token embedding reads tokens
	wantError(t, err, dptrain.StatusInvalidArgument, "dpt_model_linear")
	f := tinyDataset(t, 4, 1)
	wantError(t, f.CopyTokens(0, 1, make([]int32, 16), make([]int32, 1)), dptrain.StatusInvalidArgument,
		"dpt_dataset_copy_tokens")

	// Both trainers still train.
	r, err := tokens.StepTokens(x, y, gptBatch)
	must(t, err)
	if r.Targets != counted(y) || r.OptimizerSteps != 1 || math.IsNaN(r.Loss) {
		t.Fatalf("after the errors: %+v (no failed call may take a step)", r)
	}
	p, err := tokens.Parameters()
	must(t, err)
	for i, v := range p {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("parameter %d = %v", i, v)
		}
	}
	fx, _ := tinyBatch(2, 1)
	c, err := floats.Step(fx, []int32{0, dptrain.IgnoreLabel})
	must(t, err)
	if c.Samples != 2 || c.Targets != 1 {
		t.Fatalf("a classifier's step with the label -1: %+v, want 1 counted target", c)
	}
}

// The parameters of tiedLM before the tie: wte, wpe, mid (weight, bias), head (no bias); the tie takes
// head.weight (V x C) out.
const tiedLMUntied = gptV*gptC + gptT*gptC + gptC*gptC + gptC + gptV*gptC

// tiedLM returns a small language model whose head can be tied to its embedding (GPT-2's tied LM head):
// tokens [T] -> wte (V x C) -> wpe -> linear C ("mid") -> head (V units, no bias): logits [T, V]. Once
// head.weight is tied to wte.weight, logits[t] = mid(wte[x_t] + wpe[t]) . wte (tiedLogits).
func tiedLM(t *testing.T) *dptrain.Model {
	t.Helper()
	m, err := dptrain.NewTokenModel(gptT)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	x, err := m.TokenEmbedding(dptrain.InputTensor, gptV, gptC, "wte")
	must(t, err)
	x, err = m.PositionEmbedding(x, "wpe")
	must(t, err)
	x, err = m.Linear(x, gptC, true, "mid")
	must(t, err)
	_, err = m.Linear(x, gptV, false, "head")
	must(t, err)
	return m
}

// tiedLogits computes the logits of tiedLM with the tie in float64 from its parameters p (named by params):
// the head multiplies by wte.
func tiedLogits(t *testing.T, params []dptrain.NamedTensor, p []float32, tokens []int32) []float64 {
	t.Helper()
	at := map[string][]float32{}
	for _, n := range params {
		at[n.Name] = p[n.Offset : n.Offset+n.Size()]
	}
	wte, wpe, w, b := at["wte.weight"], at["wpe.weight"], at["mid.weight"], at["mid.bias"]
	if len(wte) != gptV*gptC || len(wpe) != gptT*gptC || len(w) != gptC*gptC || len(b) != gptC {
		t.Fatalf("parameters %+v", params)
	}
	out := make([]float64, len(tokens)*gptV)
	e, h := make([]float64, gptC), make([]float64, gptC)
	for i, token := range tokens {
		for c := range e {
			e[c] = float64(wte[int(token)*gptC+c]) + float64(wpe[(i%gptT)*gptC+c])
		}
		for o := range h {
			h[o] = float64(b[o])
			for c := range e {
				h[o] += float64(w[o*gptC+c]) * e[c]
			}
		}
		for v := 0; v < gptV; v++ {
			for c := range h {
				out[i*gptV+v] += h[c] * float64(wte[v*gptC+c])
			}
		}
	}
	return out
}

// wantLogits checks trainer tr's logits of tokens against tiedLogits of the parameters p.
func wantLogits(t *testing.T, tr *dptrain.Trainer, params []dptrain.NamedTensor, p []float32, tokens []int32) {
	t.Helper()
	got := make([]float32, len(tokens)*gptV)
	must(t, tr.PredictTokens(tokens, len(tokens)/gptT, got))
	for i, want := range tiedLogits(t, params, p, tokens) {
		if math.Abs(float64(got[i])-want) > 1e-5+1e-4*math.Abs(want) {
			t.Fatalf("logit %d = %v, want %v (the head multiplies by wte)", i, got[i], want)
		}
	}
}

func TestTiedHeadTrainsOnTwoDevicesAsOnOne(t *testing.T) {
	m := tiedLM(t)
	if n, err := m.ParameterCount(); err != nil || n != tiedLMUntied {
		t.Fatalf("ParameterCount before the tie = %d, %v; want %d", n, err, tiedLMUntied)
	}
	must(t, m.Tie("head.weight", "wte.weight"))
	const tied = tiedLMUntied - gptV*gptC
	if n, err := m.ParameterCount(); err != nil || n != tied {
		t.Fatalf("ParameterCount after the tie = %d, %v; want %d - %d", n, err, tiedLMUntied, gptV*gptC)
	}
	params, err := m.NamedParameters()
	must(t, err)
	names := []string{}
	for _, p := range params {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "wte.weight wpe.weight mid.weight mid.bias" {
		t.Fatalf("named parameters %v, want no head.weight", names)
	}
	if last := params[len(params)-1]; last.Offset+last.Size() != tied {
		t.Fatalf("the named parameters end at %d, want %d", last.Offset+last.Size(), tied)
	}
	json, err := m.ToJSON()
	must(t, err)
	if !strings.Contains(json, `"ties"`) || !strings.Contains(json, `"head.weight"`) {
		t.Fatalf("ToJSON names no tie:\n%s", json)
	}
	copied, err := dptrain.ModelFromJSON(json)
	must(t, err)
	n, err := copied.ParameterCount()
	copied.Close()
	if err != nil || n != tied {
		t.Fatalf("the JSON copy has %d parameters (%v), want %d", n, err, tied)
	}

	// Refusals leave the model as it was.
	wantError(t, m.Tie("head.weight", "wte.weight"), dptrain.StatusInvalidArgument, "Model.Tie", "dpt_model_tie",
		"already tied")
	wantError(t, m.Tie("nowhere.weight", "wte.weight"), dptrain.StatusInvalidArgument, "dpt_model_tie", "nowhere")
	wantError(t, m.Tie("mid.weight", "wte.weight"), dptrain.StatusInvalidArgument, "dpt_model_tie", "shapes differ")
	wantError(t, m.Tie("wpe.weight", "mid.weight"), dptrain.StatusInvalidArgument, "dpt_model_tie", "earlier node")
	wantError(t, m.Tie("", "wte.weight"), dptrain.StatusInvalidArgument, "Model.Tie", "parameter is empty")
	wantError(t, m.Tie("mid.weight", ""), dptrain.StatusInvalidArgument, "Model.Tie", "source is empty")
	wantError(t, m.Tie("mid.weight", "wte\x00.weight"), dptrain.StatusInvalidArgument, "NUL")
	if n, err := m.ParameterCount(); err != nil || n != tied {
		t.Fatalf("ParameterCount after the refusals = %d, %v; want %d", n, err, tied)
	}
	if after, err := m.ToJSON(); err != nil || after != json {
		t.Fatalf("a refused tie changed the model (%v):\n%s", err, after)
	}

	// The model still trains: 3 steps on 2 devices and on 1 from one seed agree.
	ctx := newContext(t, 2)
	two := newTrainer(t, ctx, m, adamW(7, dptrain.WeightDecayMatrices))
	one := newTrainer(t, ctx, m, adamW(7, dptrain.WeightDecayMatrices, 0))
	if n, err := two.ParameterCount(); err != nil || n != tied {
		t.Fatalf("Trainer.ParameterCount = %d, %v; want %d", n, err, tied)
	}
	start, err := one.Parameters()
	must(t, err)
	if p, err := two.Parameters(); err != nil || !bitwiseEqual(p, start) {
		t.Fatalf("the same seed gives other initial parameters (%v)", err)
	}
	x0, _ := tokenBatch(0)
	wantLogits(t, two, params, start, x0)
	for step := 0; step < 3; step++ {
		x, y := tokenBatch(step)
		r2, err := two.StepTokens(x, y, gptBatch)
		must(t, err)
		r1, err := one.StepTokens(x, y, gptBatch)
		must(t, err)
		if r2.Targets != counted(y) || r1.Targets != counted(y) || !r2.Applied {
			t.Fatalf("step %d: %+v / %+v, want %d targets", step, r2, r1, counted(y))
		}
		if math.IsNaN(r2.Loss) || math.IsInf(r2.Loss, 0) || math.Abs(r1.Loss-r2.Loss) > 1e-5 {
			t.Fatalf("step %d: losses %v (2 devices), %v (1 device)", step, r2.Loss, r1.Loss)
		}
	}
	a, err := two.Parameters()
	must(t, err)
	b, err := one.Parameters()
	must(t, err)
	moved := distance(b, start)
	if moved == 0 || distance(a, b)/moved >= 1e-5 {
		t.Fatalf("2 devices vs 1: ||a-b|| %g, ||b-start|| %g", distance(a, b), moved)
	}
	x5, _ := tokenBatch(5)
	wantLogits(t, one, params, b, x5) // still one tensor after training

	closed := tiedLM(t)
	must(t, closed.Close())
	wantClosed(t, closed.Tie("head.weight", "wte.weight"))
}
