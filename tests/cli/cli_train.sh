#!/usr/bin/env bash
# Short runs of `dptrain train` on the real Fashion-MNIST: the JSON result, the CSV metrics and the SVG
# plot are complete and sane, a run is reproducible bit for bit, and 1 vs 2 devices agree.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

SHORT=(--model mlp --epochs 2 --train-limit 2000 --test-limit 500 --json)

run_cli a train "${SHORT[@]}" --devices cpu:2 --metrics "$WORK/m.csv" --plot "$WORK/p.svg"
[ "$RC" -eq 0 ] || fail "training run exited with $RC: $(tail -n 3 "$WORK/a.err")"
A=$WORK/a.out

# stdout is exactly one JSON object.
json_check "$A" "isinstance(d, dict)" "stdout is one JSON object"
for key in model devices epochs batch lr optimizer split allreduce seed test_accuracy test_loss train_loss \
  train_accuracy images_per_second seconds param_checksum epochs_detail; do
  json_check "$A" "'$key' in d" "field $key present"
done
json_check "$A" "d['model'] == 'mlp' and d['devices'] == 2 and d['epochs'] == 2" "model, devices, epochs"
json_check "$A" "d['batch'] == 256 and abs(d['lr'] - 0.1) < 1e-9 and d['optimizer'] == 'sgd'" "textbook defaults"
json_check "$A" "d['split'] == 'even' and d['allreduce'] == 'ring' and d['seed'] == 0" "split, allreduce, seed"
json_check "$A" "d['train_samples'] == 2000 and d['test_samples'] == 500" "sample limits applied"
json_check "$A" "0 <= d['test_accuracy'] <= 1 and 0 <= d['train_accuracy'] <= 1" "accuracies in [0, 1]"
json_check "$A" "d['test_accuracy'] > 0.3" "learns something (test accuracy > 0.3 after 2 short epochs)"
json_check "$A" "0 < d['train_loss'] < 2.31 and 0 < d['test_loss'] < 2.31" "losses below chance (ln 10)"
json_check "$A" "d['images_per_second'] > 0 and d['seconds'] > 0" "throughput and time"
json_check "$A" "len(d['param_checksum']) == 16 and all(c in '0123456789abcdef' for c in d['param_checksum'])" \
  "param_checksum is 16 lowercase hex digits"
json_check "$A" "[e['epoch'] for e in d['epochs_detail']] == [1, 2]" "epochs_detail has epochs 1 and 2"
json_check "$A" "d['epochs_detail'][-1]['test_accuracy'] == d['test_accuracy']" "last epoch matches the result"
if grep -q '^epoch 2/2 ' "$WORK/a.err"; then pass "progress went to stderr"; else fail "no progress on stderr"; fi

# The CSV: the header and one row per epoch, 8 columns each.
HEADER="epoch,train_loss,train_accuracy,test_loss,test_accuracy,seconds,images_per_second,learning_rate"
if [ "$(head -n 1 "$WORK/m.csv")" = "$HEADER" ]; then pass "CSV header"; else fail "CSV header: $(head -n 1 "$WORK/m.csv")"; fi
if [ "$(wc -l <"$WORK/m.csv")" -eq 3 ]; then pass "CSV has 2 rows"; else fail "CSV rows: $(cat "$WORK/m.csv")"; fi
if awk -F, 'NR > 1 && (NF != 8 || $1 != NR - 1) { bad = 1 } END { exit bad }' "$WORK/m.csv"; then
  pass "CSV rows have 8 fields and epochs 1, 2"
else
  fail "CSV rows: $(cat "$WORK/m.csv")"
fi

# The SVG: well-formed XML with an <svg> root and the curves in it.
if "$PYTHON" - "$WORK/p.svg" <<'PY'; then
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
ns = {"s": "http://www.w3.org/2000/svg"}
lines = root.findall(".//s:polyline", ns)
assert len(lines) == 4, len(lines)  # train/test loss and train/test accuracy
assert all(len(l.get("points").split()) == 2 for l in lines), "one point per epoch"
texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
for word in ("Loss", "Accuracy", "epoch", "train loss", "test accuracy"):
    assert word in texts, word
PY
  pass "SVG is well-formed with 4 curves, axes and legend"
else
  fail "SVG check"
fi

# Same command, same result, bit for bit.
run_cli b train "${SHORT[@]}" --devices cpu:2
CHECK_A=$(json_get "$A" "d['param_checksum']")
CHECK_B=$(json_get "$WORK/b.out" "d['param_checksum']")
if [ "$RC" -eq 0 ] && [ "$CHECK_A" = "$CHECK_B" ]; then
  pass "reproducible: param_checksum $CHECK_A twice"
else
  fail "param_checksum differs between identical runs: $CHECK_A vs $CHECK_B (status $RC)"
fi

# One device trains the same model as two (up to float rounding).
run_cli c train "${SHORT[@]}" --devices cpu:1
ACC_A=$(json_get "$A" "d['test_accuracy']")
json_check "$WORK/c.out" "d['devices'] == 1 and abs(d['test_accuracy'] - $ACC_A) <= 0.05" \
  "cpu:1 and cpu:2 test accuracies within 0.05"

# Without --json: human-readable output on stdout, ending with the summary and the same checksum.
run_cli text train --model mlp --epochs 2 --train-limit 2000 --test-limit 500 --devices cpu:2
if [ "$RC" -eq 0 ] && grep -q "param_checksum  $CHECK_A" "$WORK/text.out" &&
  grep -q '^epoch 1/2  train loss' "$WORK/text.out" && [ ! -s "$WORK/text.err" ]; then
  pass "text output: epoch lines and summary with the same checksum"
else
  fail "text output (status $RC): $(cat "$WORK/text.out" "$WORK/text.err")"
fi

# LeNet and the other options run too (a tiny smoke run).
run_cli lenet train --model lenet --epochs 1 --train-limit 512 --test-limit 256 --batch 128 --json \
  --optimizer sgd --momentum 0.9 --nesterov --schedule cosine --warmup 1 --clip 5 --init uniform \
  --split 1,3 --allreduce naive --accumulate 2 --seed 3
json_check "$WORK/lenet.out" "d['model'] == 'lenet' and d['split'] == 'weighted' and d['epochs_completed'] == 1" \
  "lenet with weighted split, naive all-reduce, accumulation and cosine schedule"

# Mixed precision: bf16 matrix products train the MLP as well as float32 (the same short recipe), report
# their precision, and are not float32 (another checksum); an unknown precision is a usage error.
run_cli bf16 train "${SHORT[@]}" --devices cpu:2 --precision bf16
json_check "$WORK/bf16.out" "d['precision'] == 'bf16' and abs(d['test_accuracy'] - $ACC_A) <= 0.05" \
  "--precision bf16: test accuracy within 0.05 of float32's"
json_check "$A" "d['precision'] == 'fp32'" "the default precision is fp32"
B16=$(json_get "$WORK/bf16.out" "d['param_checksum']")
[ -n "$B16" ] && [ "$B16" != "$CHECK_A" ] && pass "bf16 is not float32 in disguise" || fail "bf16 checksum $B16"
# --activation-dtype: accepted and reported; the MLP's two hidden tensors gain nothing from 16-bit copies
# (the float32 working slots would take what the copies save), so the store keeps them float32: the bits of
# the bf16 run. (test_activation_storage checks the models where it pays.)
run_cli act16 train "${SHORT[@]}" --devices cpu:2 --precision bf16 --activation-dtype bf16
json_check "$WORK/act16.out" "d['activation_dtype'] == 'bf16'" "--activation-dtype bf16: reported"
[ "$(json_get "$WORK/act16.out" "d['param_checksum']")" = "$B16" ] &&
  pass "--activation-dtype bf16 on the MLP: the bf16 run's bits" || fail "--activation-dtype bf16 changed the MLP"
run_cli bad_act train --model mlp --activation-dtype int8
[ "$RC" -eq 2 ] && pass "--activation-dtype int8: usage error" || fail "--activation-dtype int8: $RC"
# fp16: float16 products with dynamic loss scaling train as well, report the scale (a power of two from 1
# to 2^16 after this short run: GradScaler's start, halved on overflow) and the skipped windows.
run_cli fp16 train "${SHORT[@]}" --devices cpu:2 --precision fp16
json_check "$WORK/fp16.out" "d['precision'] == 'fp16' and abs(d['test_accuracy'] - $ACC_A) <= 0.05" \
  "--precision fp16: test accuracy within 0.05 of float32's"
json_check "$WORK/fp16.out" \
  "1 <= d['loss_scale'] <= 65536 and d['loss_scale'] == 2 ** round(__import__('math').log2(d['loss_scale'])) and d['overflow_steps'] >= 0" \
  "--precision fp16: the loss scale is a power of two up to 2^16, overflow steps counted"
F16=$(json_get "$WORK/fp16.out" "d['param_checksum']")
[ -n "$F16" ] && [ "$F16" != "$CHECK_A" ] && [ "$F16" != "$B16" ] && pass "fp16 is neither float32 nor bf16" ||
  fail "fp16 checksum $F16"
# A 16-bit gradient all-reduce: trains as well, says so in the JSON, and is not float32's all-reduce.
run_cli wire train "${SHORT[@]}" --devices cpu:2 --allreduce-dtype bf16
json_check "$WORK/wire.out" "d['allreduce_dtype'] == 'bf16' and abs(d['test_accuracy'] - $ACC_A) <= 0.05" \
  "--allreduce-dtype bf16: test accuracy within 0.05 of float32's"
WIRE=$(json_get "$WORK/wire.out" "d['param_checksum']")
[ -n "$WIRE" ] && [ "$WIRE" != "$CHECK_A" ] && pass "a bf16 all-reduce is not float32's" || fail "wire checksum $WIRE"
run_cli bad_wire train --model mlp --allreduce-dtype int8
[ "$RC" -eq 2 ] && [ "$(wc -l <"$WORK/bad_wire.err")" -eq 1 ] && pass "--allreduce-dtype int8: usage error" ||
  fail "--allreduce-dtype int8: $RC $(cat "$WORK/bad_wire.err")"
# A sharded optimizer (ZeRO stage 1) changes no bit; the JSON says so and reports each device's memory.
run_cli shard train "${SHORT[@]}" --devices cpu:2 --shard optimizer --momentum 0.9
run_cli unshard train "${SHORT[@]}" --devices cpu:2 --momentum 0.9
json_check "$WORK/shard.out" "d['shard'] == 'optimizer'" "--shard optimizer: reported"
json_check "$WORK/unshard.out" "d['shard'] == 'none'" "the default shard mode is none"
[ "$(json_get "$WORK/shard.out" "d['param_checksum']")" = "$(json_get "$WORK/unshard.out" "d['param_checksum']")" ] &&
  pass "--shard optimizer: the unsharded run's bits" || fail "--shard optimizer changed the parameters"
json_check "$WORK/unshard.out" \
  "(m := d['memory_per_device'])['gradients'] == m['parameters'] == m['optimizer_state'] > 0 and m['total'] == sum(v for k, v in m.items() if k != 'total')" \
  "memory per device: parameters, gradients, momentum (4 bytes per parameter each), total"
json_check "$WORK/shard.out" \
  "0 < (m := d['memory_per_device'])['optimizer_state'] < m['parameters']" \
  "--shard optimizer: the largest device keeps part of the momentum"
# Each device's seconds summed over the run (dpt_trainer_replica_totals): one entry per device, all of it
# computing, reducing and updating, the parts no more than the training time.
json_check "$WORK/unshard.out" \
  "len(t := d['device_times']) == 2 and all(e['compute_seconds'] > 0 and e['communication_seconds'] > 0 and e['update_seconds'] > 0 and e['bus_bandwidth'] > 0 and e['compute_seconds'] + e['update_seconds'] + e['idle_seconds'] <= d['train_seconds'] for e in t)" \
  "device_times: each device's compute, communication, update and idle seconds over the run"
run_cli shard2 train "${SHORT[@]}" --devices cpu:2 --shard gradients --momentum 0.9 --bucket-kib 64
[ "$(json_get "$WORK/shard2.out" "d['param_checksum']")" = "$(json_get "$WORK/unshard.out" "d['param_checksum']")" ] &&
  pass "--shard gradients: the unsharded run's bits" || fail "--shard gradients changed the parameters"
json_check "$WORK/shard2.out" \
  "d['shard'] == 'gradients' and 0 < (m := d['memory_per_device'])['optimizer_state'] < m['parameters']" \
  "--shard gradients: reported, with part of the momentum"
run_cli shard3 train "${SHORT[@]}" --devices cpu:2 --shard parameters --momentum 0.9 --bucket-kib 64
[ "$(json_get "$WORK/shard3.out" "d['param_checksum']")" = "$(json_get "$WORK/unshard.out" "d['param_checksum']")" ] &&
  pass "--shard parameters: the unsharded run's bits (training, evaluation, checksum)" ||
  fail "--shard parameters changed the parameters"
json_check "$WORK/shard3.out" "d['test_accuracy'] == $(json_get "$WORK/unshard.out" "d['test_accuracy']")" \
  "--shard parameters: the unsharded test accuracy"
# --pipeline S: the model cut into S stages on S devices, each batch into micro-batches; the bits of one
# device accumulating the same micro-batches (2048 samples: whole batches, so the last micro-batches match too).
PIPE=(--model mlp --epochs 1 --train-limit 2048 --test-limit 500 --json --momentum 0.9)
run_cli pipe train "${PIPE[@]}" --pipeline 3 --micro-batches 4
run_cli accum train "${PIPE[@]}" --devices cpu:1 --batch 64 --accumulate 4
run_cli gpipe train "${PIPE[@]}" --pipeline 2 --micro-batches 4 --pipeline-schedule gpipe --pipeline-cuts 3
# 2 stages x 2 replicas against 2 data-parallel devices accumulating the same micro-batches.
run_cli pipe_dp train "${PIPE[@]}" --pipeline 2 --devices cpu:4 --micro-batches 4
run_cli accum_dp train "${PIPE[@]}" --devices cpu:2 --batch 64 --accumulate 4
[ "$(json_get "$WORK/pipe_dp.out" "d['param_checksum']")" = "$(json_get "$WORK/accum_dp.out" "d['param_checksum']")" ] &&
  pass "--pipeline 2 on 4 devices: two data-parallel devices' accumulated bits" ||
  fail "--pipeline 2 --devices cpu:4 differs: $(tail -n 2 "$WORK/pipe_dp.err")"
# The optimizer state sharded among each stage's two replicas: the same bits, less state per device.
run_cli pipe_shard train "${PIPE[@]}" --pipeline 2 --devices cpu:4 --micro-batches 4 --shard optimizer
json_check "$WORK/pipe_shard.out" \
  "d['param_checksum'] == '$(json_get "$WORK/pipe_dp.out" "d['param_checksum']")' and d['memory_per_device']['optimizer_state'] < $(json_get "$WORK/pipe_dp.out" "d['memory_per_device']['optimizer_state']")" \
  "--pipeline 2 --devices cpu:4 --shard optimizer: the unsharded pipeline's bits, less optimizer state per device"
ACCUM=$(json_get "$WORK/accum.out" "d['param_checksum']")
for run in pipe gpipe; do
  [ "$(json_get "$WORK/$run.out" "d['param_checksum']")" = "$ACCUM" ] &&
    pass "--pipeline ($run): one device's accumulated bits" || fail "--pipeline ($run) differs: $(tail -n 2 "$WORK/$run.err")"
done
json_check "$WORK/pipe.out" \
  "d['devices'] == 3 and d['pipeline_stages'] == 3 and d['micro_batches'] == 4 and d['pipeline_schedule'] == '1f1b'" \
  "--pipeline: three devices, reported"
json_check "$WORK/gpipe.out" "d['test_accuracy'] == $(json_get "$WORK/accum.out" "d['test_accuracy']")" \
  "--pipeline: the accumulated run's test accuracy (pipelined evaluation)"
json_check "$WORK/pipe.out" "(m := d['memory_per_device'])['parameters'] < $(json_get "$WORK/accum.out" "d['memory_per_device']['parameters']")" \
  "--pipeline: the largest stage holds part of the parameters"
# --pipeline-balance: LeNet's two stages begin at node 3 by the estimated work, at node 4 by the parameters
# (its dense layers hold most of them), where the time measured puts them; the cuts are reported, a measured
# cut named gives the same stages, and no cut changes the bits (one device per stage: one device's).
LENET_PIPE=(--model lenet --epochs 1 --train-limit 512 --test-limit 100 --json --batch 64 --pipeline 2 --micro-batches 4)
run_cli bal_work train "${LENET_PIPE[@]}"
run_cli bal_params train "${LENET_PIPE[@]}" --pipeline-balance parameters
run_cli bal_time train "${LENET_PIPE[@]}" --pipeline-balance time
MEASURED=$(json_get "$WORK/bal_time.out" "d['pipeline_cuts']")
run_cli bal_named train "${LENET_PIPE[@]}" --pipeline-cuts "$MEASURED"
BAL_SUM=$(json_get "$WORK/bal_work.out" "d['param_checksum']")
json_check "$WORK/bal_work.out" "d['pipeline_balance'] == 'work' and d['pipeline_cuts'] == '3'" \
  "--pipeline-balance work (the default): cut at node 3, reported"
json_check "$WORK/bal_params.out" \
  "d['pipeline_balance'] == 'parameters' and d['pipeline_cuts'] == '4' and d['param_checksum'] == '$BAL_SUM'" \
  "--pipeline-balance parameters: cut at node 4, the same bits"
json_check "$WORK/bal_time.out" "d['pipeline_balance'] == 'time' and d['param_checksum'] == '$BAL_SUM'" \
  "--pipeline-balance time: cut at node $MEASURED, the same bits"
json_check "$WORK/bal_named.out" "d['pipeline_balance'] == 'named' and d['pipeline_cuts'] == '$MEASURED'" \
  "--pipeline-cuts $MEASURED (the measured cut): the same cut, reported as named"
run_cli pipe_bad train "${PIPE[@]}" --pipeline 2 --pipeline-cuts 0
[ "$RC" -ne 0 ] && grep -q "pipeline cut" "$WORK/pipe_bad.err" && pass "--pipeline-cuts at a node where no stage can begin: refused" ||
  fail "--pipeline-cuts 0: $RC $(cat "$WORK/pipe_bad.err")"
run_cli pipe_usage train --model mlp --micro-batches 4
[ "$RC" -eq 2 ] && [ "$(wc -l <"$WORK/pipe_usage.err")" -eq 1 ] && pass "--micro-batches without --pipeline: usage error" ||
  fail "--micro-batches without --pipeline: $RC $(cat "$WORK/pipe_usage.err")"
run_cli pipe_devices train --model mlp --pipeline 3 --devices cpu:2
[ "$RC" -eq 2 ] && grep -q "needs a multiple of 3 devices" "$WORK/pipe_devices.err" && pass "--pipeline 3 on 2 devices: usage error" ||
  fail "--pipeline 3 --devices cpu:2: $RC $(cat "$WORK/pipe_devices.err")"
# --trace: Chrome trace-event JSON with a compute and a communication row per device and the ops in them.
run_cli trace train "${SHORT[@]}" --devices cpu:2 --epochs 1 --shard parameters --bucket-kib 64 --trace "$WORK/trace.json"
if "$PYTHON" - "$WORK/trace.json" <<'PY'; then
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert names == {0: "cpu:0 compute", 1: "cpu:0 communication", 2: "cpu:1 compute", 3: "cpu:1 communication"}, names
cats = collections.Counter((e["tid"], e["cat"]) for e in events if e["ph"] == "X")
for tid in (0, 2):
    assert cats[(tid, "forward")] > 0 and cats[(tid, "backward")] > 0 and cats[(tid, "update")] > 0, cats
    assert cats[(tid, "gather")] > 0, cats
for tid in (1, 3):
    assert cats[(tid, "communication")] > 0, cats
assert all(e["dur"] >= 0 for e in events if e["ph"] == "X")
PY
  pass "--trace: rows per device and thread, ops, reductions, gathers, updates"
else
  fail "--trace: $(head -c 300 "$WORK/trace.json")"
fi
# scripts/trace-summary.py on it: each compute row's op kinds, their shares adding up to the row's busy time.
summary=$("$PYTHON" "$(dirname "$0")/../../scripts/trace-summary.py" "$WORK/trace.json" 2>&1)
shares=$(echo "$summary" | awk '/^cpu:0 compute/ {row = 1; next} /^cpu:/ {row = 0} row && $NF ~ /%$/ {sum += $NF + 0}
  END {print sum}')
if echo "$summary" | grep -q "^cpu:1 compute: [0-9]* step(s)" && echo "$summary" | grep -qE "^  dense +[0-9]" &&
  awk -v s="$shares" 'BEGIN {exit !(s > 99 && s < 101)}'; then
  pass "trace-summary.py: both compute rows, dense among the op kinds, shares summing to $shares%"
else
  fail "trace-summary.py (shares $shares): $(echo "$summary" | head -n 12)"
fi
run_cli bad_shard train --model mlp --shard everything
[ "$RC" -eq 2 ] && pass "--shard everything: usage error" || fail "--shard everything: $RC"
run_cli bad_precision train --model mlp --precision fp8
[ "$RC" -eq 2 ] && [ "$(wc -l <"$WORK/bad_precision.err")" -eq 1 ] && pass "--precision fp8: usage error" ||
  fail "--precision fp8: $RC $(cat "$WORK/bad_precision.err")"

# Stopped and continued (Ctrl-Z and fg; SIGSTOP, SIGCONT) for longer than twice its 1 s deadline, a run goes
# on: its devices were stopped with it, so the time it spent stopped is no device's fault.
"$DPTRAIN" train --model lenet --devices cpu:2 --epochs 2 --train-limit 4000 --test-limit 100 --timeout 1 \
  --progress-every 1 --json >"$WORK/stopped.out" 2>"$WORK/stopped.err" &
STOPPED=$!
for _ in $(seq 100); do grep -q "img/s" "$WORK/stopped.err" && break; sleep 0.1; done
kill -STOP "$STOPPED"
sleep 3
kill -CONT "$STOPPED"
wait "$STOPPED"
RC=$?
[ "$RC" -eq 0 ] && json_check "$WORK/stopped.out" "d['epochs_completed'] == 2" \
  "stopped for 3 s with a 1 s deadline, then continued: the run finishes" ||
  fail "stopped for 3 s, then continued: exit $RC, $(tail -n 2 "$WORK/stopped.err")"

finish
