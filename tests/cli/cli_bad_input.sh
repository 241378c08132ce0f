#!/usr/bin/env bash
# Bad command lines exit with status 2 and print exactly one "dptrain: error:" line on stderr and nothing
# on stdout; a library failure exits with status 1 the same way; --help exits 0.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

# expect_error STATUS ARGS...: the command line must fail with STATUS and one error line.
expect_error() {
  local want=$1
  shift
  run_cli case "$@"
  local lines first
  lines=$(wc -l <"$WORK/case.err")
  first=$(head -n 1 "$WORK/case.err")
  if [ "$RC" -ne "$want" ]; then
    fail "'$*': exit status $RC, expected $want (stderr: $(cat "$WORK/case.err"))"
  elif [ "$lines" -ne 1 ] || [[ "$first" != "dptrain: error: "* ]]; then
    fail "'$*': expected one 'dptrain: error:' line, got $lines: $(cat "$WORK/case.err")"
  elif [ -s "$WORK/case.out" ]; then
    fail "'$*': unexpected stdout: $(cat "$WORK/case.out")"
  else
    pass "'$*' -> $want: $first"
  fi
}

# Usage errors: exit 2, detected before any data is loaded.
expect_error 2
expect_error 2 frobnicate
expect_error 2 devices --frobnicate
expect_error 2 train
expect_error 2 train --model resnet
expect_error 2 train --model model.txt
expect_error 2 train --model .json
expect_error 2 train --model
expect_error 2 train --model mlp --epochs
expect_error 2 train --model mlp --epochs abc
expect_error 2 train --model mlp --epochs 0
expect_error 2 train --model mlp --epochs -3
expect_error 2 train --model mlp --epochs 2x
expect_error 2 train --model mlp --epochs --json
expect_error 2 train --model mlp --batch 99999999999999999999999
expect_error 2 train --model mlp --lr -0.1
expect_error 2 train --model mlp --lr 0
expect_error 2 train --model mlp --lr nan
expect_error 2 train --model mlp --momentum 1.5
expect_error 2 train --model mlp --nesterov
expect_error 2 train --model mlp --optimizer adam
expect_error 2 train --model mlp --optimizer adamw --momentum 0.9
expect_error 2 train --model mlp --seed -1
expect_error 2 train --model mlp --timeout -1
expect_error 2 train --model mlp --timeout nan
expect_error 2 train --model mlp --timeout inf
expect_error 2 train --model mlp --devices gpu:2
expect_error 2 train --model mlp --devices cpu:0
expect_error 2 train --model mlp --devices cpu:
expect_error 2 train --model mlp --devices cpu:65
expect_error 2 train --model mlp --devices cpu:2 --split 1,2,3
expect_error 2 train --model mlp --split 1,2,3 # two devices from DPTRAIN_CPU_DEVICES
expect_error 2 train --model mlp --split 1,,2
expect_error 2 train --model mlp --split 1,-2
expect_error 2 train --model mlp --shard shards
expect_error 2 train --model mlp --shard optimizer --shard-scope galaxy
expect_error 2 train --model mlp --shard-scope
expect_error 2 train --model mlp --pipeline-scope world # without --pipeline
expect_error 2 train --model mlp --pipeline 2 --pipeline-scope machines
expect_error 2 train --model mlp --pipeline-balance time # without --pipeline
expect_error 2 train --model mlp --pipeline-copies 2 # without --pipeline
expect_error 2 train --model mlp --pipeline 2 --pipeline-copies 2 # without --pipeline-scope world
expect_error 2 train --model mlp --pipeline 2 --pipeline-scope world --pipeline-copies 0
expect_error 2 train --model mlp --pipeline 2 --pipeline-balance fastest
expect_error 2 train --model mlp --pipeline 2 --pipeline-cuts 3 --pipeline-balance time # one or the other
expect_error 2 train --model mlp --checkpoint-every 5
expect_error 2 train --model mlp --checkpoint /tmp/x.ckpt --checkpoint-every 5 --accumulate 2
expect_error 2 train --model mlp --checkpoint /tmp/x.ckpt --checkpoint-every 0
expect_error 2 train --model mlp --load-weights /tmp/w.safetensors --resume /tmp/x.ckpt
expect_error 2 train --model mlp --load-weights
expect_error 2 train --model mlp --save-weights
expect_error 2 train --model mlp --recompute-bn 0
expect_error 2 train --model mlp --recompute-bn
# --devices cuda:local outside mpirun or srun: no local rank to take the GPU of.
expect_error 2 train --model mlp --devices cuda:local
expect_error 2 train --model mlp --schedule exponential
expect_error 2 train --model mlp --init xavier
expect_error 2 train --model mlp --frobnicate
expect_error 2 train --model mlp stray-argument
expect_error 2 train --model mlp --json=yes

# expect_error_within SECONDS STATUS ARGS...: expect_error, with the command killed after SECONDS, so that
# a hang fails the check (exit status 137) instead of stopping the test.
expect_error_within() {
  local seconds=$1 real=$DPTRAIN
  shift
  printf '#!/bin/sh\nexec timeout -s KILL %s "%s" "$@"\n' "$seconds" "$real" >"$WORK/bounded.sh"
  chmod +x "$WORK/bounded.sh"
  DPTRAIN="$WORK/bounded.sh"
  expect_error "$@"
  DPTRAIN=$real
}

# Library failures: exit 1 with the status text and the library's message.
expect_error 1 train --model mlp --data "$WORK/no-such-directory" --epochs 1
expect_error 1 train --model mlp --metrics "$WORK/no-such-directory/m.csv"
printf 'not safetensors' >"$WORK/bad.safetensors"
expect_error 1 train --model mlp --epochs 1 --train-limit 64 --test-limit 64 --load-weights "$WORK/bad.safetensors"
expect_error 1 train --model mlp --epochs 1 --train-limit 64 --test-limit 64 --load-weights "$WORK/no-such.safetensors"
DPTRAIN_CPU_DEVICES=not-a-number expect_error 1 devices

# A data directory whose files are a FIFO (a plain open() of it blocks until a writer comes) or a
# directory: refused at once, saying what they are.
mkdir -p "$WORK/fifo-data" "$WORK/dir-data/train-images-idx3-ubyte.gz"
mkfifo "$WORK/fifo-data/train-images-idx3-ubyte.gz" "$WORK/fifo-data/train-labels-idx1-ubyte.gz"
for data in fifo-data dir-data; do
  expect_error_within 20 1 train --model mlp --data "$WORK/$data" --epochs 1
  grep -q "^dptrain: error: i/o error: .*is not a regular file (a \(FIFO\|directory\))" "$WORK/case.err" &&
    pass "$data: says the file is not a regular file" || fail "$data: $(cat "$WORK/case.err")"
done

# Model files: read and checked before any data is loaded (the data directory does not exist, which would
# fail with status 1), a model that does not fit Fashion-MNIST is a usage error, a broken file a failure.
HEAD='{"format": "dptrain.model", "version": 1, "input": '
printf '%s[1, 8, 8], "nodes": [{"op": "dense", "inputs": [0], "units": 10, "bias": 1}]}\n' "$HEAD" >"$WORK/small.json"
printf '%s[1, 28, 28], "nodes": [{"op": "dense", "inputs": [0], "units": 7, "bias": 1}]}\n' "$HEAD" >"$WORK/seven.json"
printf '%s[1, 28, 28], "nodes": [\n  {"op": "dense", "inputs": [0], "units": 10, "bias": 1},\n' "$HEAD" \
  >"$WORK/broken.json"
printf '%s[1, 28, 28], "nodes": [{"op": "dense", "inputs": [0], "units": 10}]}\n' "$HEAD" >"$WORK/no-bias.json"
NODATA=(--data "$WORK/no-such-directory" --epochs 1)
expect_error 2 train --model "$WORK/small.json" "${NODATA[@]}"
grep -q "takes 1x8x8 inputs; Fashion-MNIST images are 1x28x28" "$WORK/case.err" &&
  pass "names the input shape" || fail "input shape: $(cat "$WORK/case.err")"
expect_error 2 train --model "$WORK/seven.json" "${NODATA[@]}"
grep -q "has 7 outputs; Fashion-MNIST has 10 classes" "$WORK/case.err" &&
  pass "names the output size" || fail "output size: $(cat "$WORK/case.err")"
expect_error 1 train --model "$WORK/broken.json" "${NODATA[@]}"
grep -q "broken.json': format error: dpt_model_from_json: line 3" "$WORK/case.err" &&
  pass "names the file and the line" || fail "broken file: $(cat "$WORK/case.err")"
expect_error 1 train --model "$WORK/no-bias.json" "${NODATA[@]}"
grep -q 'nodes\[0\] (dense): missing "bias"' "$WORK/case.err" &&
  pass "names the node and the key" || fail "missing key: $(cat "$WORK/case.err")"
expect_error 1 train --model "$WORK/no-such-model.json" "${NODATA[@]}"
mkdir "$WORK/directory.json"
expect_error 1 train --model "$WORK/directory.json" "${NODATA[@]}"
expect_error 2 model
expect_error 2 model nope
expect_error 2 model lenet mlp
expect_error 1 model "$WORK/broken.json"

# Help is not an error.
for args in "--help" "train --help" "devices --help" "model --help"; do
  # shellcheck disable=SC2086 # split on purpose
  run_cli help $args
  if [ "$RC" -eq 0 ] && grep -q "usage: dptrain" "$WORK/help.out" && [ ! -s "$WORK/help.err" ]; then
    pass "'$args' prints usage and exits 0"
  else
    fail "'$args': status $RC, stderr: $(cat "$WORK/help.err")"
  fi
done

finish
