#!/usr/bin/env bash
# `dptrain train --model FILE.json`: a built-in model written out by `dptrain model` trains exactly as the
# built-in one, and a small residual net written by hand trains for a few batches with a complete report.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

SHORT=(--epochs 1 --train-limit 256 --test-limit 128 --batch 64 --devices cpu:2 --json)

# A built-in model's JSON is the same model: the same training, bit for bit (with the same learning rate:
# the default is lenet's own, 0.2, and 0.1 for the others).
run_cli export model lenet
if [ "$RC" -eq 0 ] && [ ! -s "$WORK/export.err" ]; then pass "dptrain model lenet"; else fail "export: $RC $(cat "$WORK/export.err")"; fi
cp "$WORK/export.out" "$WORK/lenet.json"
json_check "$WORK/lenet.json" "d['format'] == 'dptrain.model' and d['version'] == 1 and d['input'] == [1, 28, 28]" \
  "the model file's header"
json_check "$WORK/lenet.json" "len(d['nodes']) == 10 and d['output'] == 10 and d['nodes'][0]['op'] == 'conv2d'" \
  "the model file's nodes"
run_cli builtin train --model lenet "${SHORT[@]}" --lr 0.2
run_cli file train --model "$WORK/lenet.json" "${SHORT[@]}" --lr 0.2
[ "$RC" -eq 0 ] || fail "training lenet.json exited with $RC: $(tail -n 3 "$WORK/file.err")"
json_check "$WORK/file.out" "d['model'] == '$WORK/lenet.json'" "the report names the model file"
CHECK_A=$(json_get "$WORK/builtin.out" "d['param_checksum']")
CHECK_B=$(json_get "$WORK/file.out" "d['param_checksum']")
if [ "$CHECK_A" = "$CHECK_B" ] && [ -n "$CHECK_A" ]; then
  pass "lenet.json trains as lenet: param_checksum $CHECK_A"
else
  fail "lenet.json and lenet differ: $CHECK_A vs $CHECK_B"
fi
json_check "$WORK/file.out" "d['parameters'] == $(json_get "$WORK/builtin.out" "d['parameters']")" "same parameter count"

# A residual net by hand: conv-bn-relu, conv-bn + the shortcut, GELU, global average pooling, dense.
cat >"$WORK/tiny.json" <<'JSON'
{
  "format": "dptrain.model",
  "version": 1,
  "input": [1, 28, 28],
  "nodes": [
    {"op": "conv2d", "name": "stem", "inputs": [0], "out_channels": 4, "kernel": 3, "stride": 2, "padding": 1, "bias": 0},
    {"op": "batch_norm", "name": "stem_bn", "inputs": [1], "eps": 1e-5, "momentum": 0.1},
    {"op": "relu", "name": "stem_relu", "inputs": [2]},
    {"op": "conv2d", "name": "block.conv", "inputs": [3], "out_channels": 4, "kernel": 3, "stride": 1, "padding": 1, "bias": 0},
    {"op": "batch_norm", "name": "block.bn", "inputs": [4], "eps": 1e-5, "momentum": 0.1},
    {"op": "add", "name": "block.add", "inputs": [5, 3]},
    {"op": "gelu", "name": "block.act", "inputs": [6], "approximation": 0},
    {"op": "global_avg_pool", "name": "pool", "inputs": [7]},
    {"op": "dense", "name": "fc", "inputs": [8], "units": 10, "bias": 1}
  ],
  "output": 9
}
JSON
run_cli tiny train --model "$WORK/tiny.json" "${SHORT[@]}" --lr 0.05 --momentum 0.9
[ "$RC" -eq 0 ] || fail "training tiny.json exited with $RC: $(tail -n 3 "$WORK/tiny.err")"
T=$WORK/tiny.out
json_check "$T" "isinstance(d, dict)" "stdout is one JSON object"
json_check "$T" "d['model'] == '$WORK/tiny.json' and d['parameters'] == 36 + 8 + 144 + 8 + 50" "model and parameters"
json_check "$T" "d['devices'] == 2 and d['epochs_completed'] == 1 and not d['stopped']" "one epoch on 2 devices"
json_check "$T" "d['train_samples'] == 256 and d['test_samples'] == 128 and d['optimizer_steps'] == 4" \
  "4 batches of 64"
json_check "$T" "0 < d['train_loss'] < 10 and 0 <= d['test_accuracy'] <= 1" "finite loss, an accuracy"
json_check "$T" "len(d['param_checksum']) == 16 and [e['epoch'] for e in d['epochs_detail']] == [1]" \
  "checksum and epochs_detail"
if grep -q "tiny.json, 246 parameters, 2 devices" "$WORK/tiny.err"; then pass "the header names the model file"; else
  fail "header: $(head -n 2 "$WORK/tiny.err")"
fi

# `dptrain model FILE.json` writes the file as the library reads it (names and attributes all written).
run_cli normal model "$WORK/tiny.json"
json_check "$WORK/normal.out" "[n['name'] for n in d['nodes']][:2] == ['stem', 'stem_bn'] and d['nodes'][1]['eps'] == 1e-05" \
  "dptrain model FILE.json"
run_cli again train --model "$WORK/tiny.json" "${SHORT[@]}" --lr 0.05 --momentum 0.9
if [ "$(json_get "$WORK/again.out" "d['param_checksum']")" = "$(json_get "$T" "d['param_checksum']")" ]; then
  pass "reproducible"
else
  fail "two runs of tiny.json differ"
fi


# A transformer block over the image's 28 rows as a sequence of 28 features (any shape of 784 values reads
# the row-major pixels): linear embedding and a learned position table, pre-LayerNorm attention (4 heads)
# and GELU MLP with residuals, a dense head. It learns: after 2048 samples (32 AdamW steps) the test
# accuracy is well above chance (0.10).
# This checks the way through the JSON reader, the executor and the CLI; the ops themselves are checked by
# finite differences (test_gradients_attention) and the data-parallel contract (test_transformer_equivalence).
cat >"$WORK/rows.json" <<'JSON'
{
  "format": "dptrain.model",
  "version": 1,
  "input": [28, 28],
  "nodes": [
    {"op": "linear", "name": "embed", "inputs": [0], "units": 32, "bias": 1},
    {"op": "position_embedding", "name": "wpe", "inputs": [1]},
    {"op": "layer_norm", "name": "ln_1", "inputs": [2], "eps": 1e-05},
    {"op": "linear", "name": "attn.c_attn", "inputs": [3], "units": 96, "bias": 0},
    {"op": "causal_self_attention", "name": "attn.attn", "inputs": [4], "heads": 4, "dropout": 0},
    {"op": "linear", "name": "attn.c_proj", "inputs": [5], "units": 32, "bias": 1},
    {"op": "add", "name": "res_1", "inputs": [2, 6]},
    {"op": "layer_norm", "name": "ln_2", "inputs": [7], "eps": 1e-05},
    {"op": "linear", "name": "mlp.c_fc", "inputs": [8], "units": 128, "bias": 1},
    {"op": "gelu", "name": "mlp.gelu", "inputs": [9], "approximation": 1},
    {"op": "linear", "name": "mlp.c_proj", "inputs": [10], "units": 32, "bias": 1},
    {"op": "add", "name": "res_2", "inputs": [7, 11]},
    {"op": "flatten", "name": "flat", "inputs": [12]},
    {"op": "dense", "name": "head", "inputs": [13], "units": 10, "bias": 1}
  ]
}
JSON
run_cli rows train --model "$WORK/rows.json" --epochs 1 --train-limit 2048 --test-limit 500 --devices cpu:2 \
  --batch 64 --optimizer adamw --lr 0.001 --json
[ "$RC" -eq 0 ] || fail "training rows.json exited with $RC: $(tail -n 3 "$WORK/rows.err")"
# embed 28*32+32, wpe 28*32, two layer norms 2*64, c_attn 32*96, c_proj 32*32+32, c_fc 32*128+128, c_proj 128*32+32,
# head 28*32*10+10.
json_check "$WORK/rows.out" "d['parameters'] == 928 + 896 + 128 + 3072 + 1056 + 4224 + 4128 + 8970" "transformer parameters"
json_check "$WORK/rows.out" "d['test_accuracy'] > 0.3 and d['train_loss'] < 2.3" \
  "the transformer learns (test accuracy > 0.3, chance 0.1; loss below ln 10)"
echo "# rows.json: test accuracy $(json_get "$WORK/rows.out" "d['test_accuracy']")"

finish
