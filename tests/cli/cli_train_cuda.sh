#!/usr/bin/env bash
# `dptrain train --devices cuda...`: GPU device strings, their errors, and training LeNet on two replicas of
# one GPU (cuda:0x2) against the same run on one CPU device, in float32 and in bf16 (against two CPU
# devices: the same slices, so the same 16-bit roundings up to the order of float32 sums), and a sharded
# optimizer, gradients and parameters (also read ahead) against the unsharded run (the same bits).
# Registered as cli_train_cuda_sim (against the simulated module of tests/sim_cuda) and cli_train_cuda (the
# real module: skipped, exit 77, without a GPU).
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"
DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}

# Bad device strings are usage errors, before anything is loaded.
for bad in cuda: cuda:x cuda:0x0 cuda:0,,1 cuda:-1 gpu:0; do
  run_cli bad train --model lenet --devices "$bad"
  if [ "$RC" -eq 2 ] && grep -q -- "--devices" "$WORK/bad.err"; then pass "--devices $bad: usage error"
  else fail "--devices $bad: exit $RC, $(cat "$WORK/bad.err")"; fi
done
run_cli tf32 train --model lenet --devices cpu:1 --tf32
[ "$RC" -eq 2 ] && pass "--tf32 without GPUs: usage error" || fail "--tf32 on CPU devices: exit $RC"

# No module: one line with the reason.
DPTRAIN_BACKEND_PATH="$WORK/none" run_cli nomodule train --model lenet --devices cuda --data "$DATA"
if [ "$RC" -eq 1 ] && grep -q "no CUDA devices: libdptrain_cuda.so not found" "$WORK/nomodule.err"; then
  pass "no module: $(cat "$WORK/nomodule.err")"
else
  fail "no module: exit $RC, $(cat "$WORK/nomodule.err")"
fi

run_cli devices devices --kind cuda --json
gpus=$(json_get "$WORK/devices.out" "d['cuda']['devices']" 2>/dev/null || echo 0)
if [ "$gpus" -eq 0 ]; then
  echo "skipped: no CUDA device ($(json_get "$WORK/devices.out" "d['cuda']['reason']" 2>/dev/null))"
  [ "$FAILURES" -eq 0 ] || finish
  exit 77
fi
run_cli missing train --model lenet --devices cuda:7 --data "$DATA"
if [ "$RC" -eq 2 ] && grep -q "cuda:7 does not exist" "$WORK/missing.err"; then pass "cuda:7: does not exist"
else fail "cuda:7: exit $RC, $(cat "$WORK/missing.err")"; fi

if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ] && [ ! -e "$DATA/train-images-idx3-ubyte" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  finish
fi
# expect_same_loss WHAT GPU_RUN CPU_RUN CPU_DEVICES TOLERANCE: the two runs' test losses within TOLERANCE
# (relative).
expect_same_loss() {
  local g c
  g=$(json_get "$WORK/$2.out" "d['test_loss']")
  c=$(json_get "$WORK/$3.out" "d['test_loss']")
  if "$PYTHON" -c "import sys; g, c = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(g - c) > $5 * abs(c))" \
    "$g" "$c"; then
    pass "${1}test loss on cuda:0x2 $g, on $4 $c (relative difference <= $5)"
  else
    fail "${1}test loss on cuda:0x2 $g, on $4 $c"
  fi
}
common=(train --model lenet --epochs 1 --batch 64 --train-limit 384 --test-limit 128 --data "$DATA" --json)
run_cli gpu "${common[@]}" --devices cuda:0x2 --deterministic
[ "$RC" -eq 0 ] || fail "cuda:0x2: exit $RC, $(tail -n 3 "$WORK/gpu.err")"
run_cli cpu "${common[@]}" --devices cpu:1
[ "$RC" -eq 0 ] || fail "cpu:1: exit $RC, $(tail -n 3 "$WORK/cpu.err")"
json_check "$WORK/gpu.out" "d['devices'] == 2" "cuda:0x2: two replicas"
grep -q "cuda:0, cuda:0" "$WORK/gpu.err" && pass "the header names both replicas' GPU" ||
  fail "header: $(head -n 1 "$WORK/gpu.err")"
expect_same_loss "" gpu cpu cpu:1 1e-4
# A sharded optimizer (ZeRO stage 1) on the GPUs: the unsharded run's bits.
run_cli gpu_shard "${common[@]}" --devices cuda:0x2 --deterministic --momentum 0.9 --shard optimizer
run_cli gpu_unshard "${common[@]}" --devices cuda:0x2 --deterministic --momentum 0.9
A=$(json_get "$WORK/gpu_unshard.out" "d['param_checksum']")
B=$(json_get "$WORK/gpu_shard.out" "d['param_checksum']")
[ -n "$A" ] && [ "$A" = "$B" ] && pass "cuda:0x2 --shard optimizer: the unsharded bits ($A)" ||
  fail "cuda:0x2 --shard optimizer: $A vs $B ($(tail -n 2 "$WORK/gpu_shard.err"))"
json_check "$WORK/gpu_shard.out" \
  "d['memory_per_device']['optimizer_state'] < $(json_get "$WORK/gpu_unshard.out" "d['memory_per_device']['optimizer_state']")" \
  "cuda:0x2 --shard optimizer: a replica keeps part of the momentum"
# Sharded gradients and parameters (ZeRO stages 2 and 3): the unsharded bits (LeNet's dense layer is most of
# its gradient, so its staging and gather buckets save nothing here: test_gpu_sharded_* check the bytes).
run_cli gpu_shard2 "${common[@]}" --devices cuda:0x2 --deterministic --momentum 0.9 --shard gradients
C=$(json_get "$WORK/gpu_shard2.out" "d['param_checksum']")
[ -n "$C" ] && [ "$A" = "$C" ] && pass "cuda:0x2 --shard gradients: the unsharded bits ($A)" ||
  fail "cuda:0x2 --shard gradients: $A vs $C ($(tail -n 2 "$WORK/gpu_shard2.err"))"
run_cli gpu_shard3 "${common[@]}" --devices cuda:0x2 --deterministic --momentum 0.9 --shard parameters
D=$(json_get "$WORK/gpu_shard3.out" "d['param_checksum']")
[ -n "$D" ] && [ "$A" = "$D" ] && pass "cuda:0x2 --shard parameters: the unsharded bits ($A)" ||
  fail "cuda:0x2 --shard parameters: $A vs $D ($(tail -n 2 "$WORK/gpu_shard3.err"))"
# Read ahead on the GPUs' copy streams (--prefetch-parameters): the same bits, a second gather bucket.
run_cli gpu_ahead "${common[@]}" --devices cuda:0x2 --deterministic --momentum 0.9 --shard parameters \
  --prefetch-parameters
E=$(json_get "$WORK/gpu_ahead.out" "d['param_checksum']")
[ -n "$E" ] && [ "$A" = "$E" ] && pass "cuda:0x2 --prefetch-parameters: the unsharded bits ($A)" ||
  fail "cuda:0x2 --prefetch-parameters: $A vs $E ($(tail -n 2 "$WORK/gpu_ahead.err"))"
json_check "$WORK/gpu_ahead.out" \
  "d['memory_per_device']['parameters'] > $(json_get "$WORK/gpu_shard3.out" "d['memory_per_device']['parameters']")" \
  "cuda:0x2 --prefetch-parameters: a second gather bucket"
# A pipeline of two stages on the GPU (docs/pipeline.md, "GPUs"): the CPU pipeline's test loss.
run_cli gpu_pipe "${common[@]}" --devices cuda:0x2 --deterministic --pipeline 2
[ "$RC" -eq 0 ] || fail "cuda:0x2 --pipeline 2: exit $RC, $(tail -n 3 "$WORK/gpu_pipe.err")"
run_cli cpu_pipe "${common[@]}" --devices cpu:2 --pipeline 2
[ "$RC" -eq 0 ] || fail "cpu:2 --pipeline 2: exit $RC, $(tail -n 3 "$WORK/cpu_pipe.err")"
expect_same_loss "--pipeline 2: " gpu_pipe cpu_pipe cpu:2 1e-4
run_cli gpu_bf16 "${common[@]}" --devices cuda:0x2 --deterministic --precision bf16
[ "$RC" -eq 0 ] || fail "cuda:0x2 bf16: exit $RC, $(tail -n 3 "$WORK/gpu_bf16.err")"
run_cli cpu_bf16 "${common[@]}" --devices cpu:2 --precision bf16
[ "$RC" -eq 0 ] || fail "cpu:2 bf16: exit $RC, $(tail -n 3 "$WORK/cpu_bf16.err")"
json_check "$WORK/gpu_bf16.out" "d['precision'] == 'bf16'" "cuda:0x2 --precision bf16: reported"
expect_same_loss "bf16: " gpu_bf16 cpu_bf16 cpu:2 1e-3
finish
