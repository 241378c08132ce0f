#!/usr/bin/env bash
# Exact resume through the command line: a run stopped after epoch 2 and resumed in a new process from its
# checkpoint ends with the same param_checksum as an uninterrupted run (same devices), and so does one
# interrupted in the middle of an epoch with --checkpoint-every. A checkpoint saved
# on 2 devices resumes on 1. Damaged or foreign checkpoints fail with one error line; so do a FIFO, a
# directory and /dev/zero given as the checkpoint (at once: each run is killed after 30 s) and a 3 GiB
# file that is no checkpoint (from its header: the whole run, data loading included, takes under 10 s).
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

RUN=(--model mlp --train-limit 1500 --test-limit 300 --optimizer sgd --momentum 0.9 --seed 4 --json)

run_cli full train "${RUN[@]}" --devices cpu:2 --epochs 4
[ "$RC" -eq 0 ] || fail "uninterrupted run exited with $RC"
run_cli first train "${RUN[@]}" --devices cpu:2 --epochs 2 --checkpoint "$WORK/run.ckpt"
[ "$RC" -eq 0 ] || fail "first half exited with $RC"
[ -s "$WORK/run.ckpt" ] && pass "checkpoint written" || fail "no checkpoint at $WORK/run.ckpt"
run_cli second train "${RUN[@]}" --devices cpu:2 --epochs 4 --resume "$WORK/run.ckpt" --checkpoint "$WORK/run.ckpt"
[ "$RC" -eq 0 ] || fail "resumed run exited with $RC: $(tail -n 2 "$WORK/second.err")"

FULL=$(json_get "$WORK/full.out" "d['param_checksum']")
HALF=$(json_get "$WORK/first.out" "d['param_checksum']")
RESUMED=$(json_get "$WORK/second.out" "d['param_checksum']")
[ "$FULL" = "$RESUMED" ] && pass "resumed checksum $RESUMED equals the uninterrupted run's" ||
  fail "resumed checksum $RESUMED differs from the uninterrupted $FULL"
[ "$HALF" != "$FULL" ] && pass "the first half really stopped early" || fail "the first half trained everything"
json_check "$WORK/second.out" "d['epochs_completed'] == 2 and [e['epoch'] for e in d['epochs_detail']] == [3, 4]" \
  "the resumed run trains epochs 3 and 4 only"

# In the middle of an epoch (--checkpoint-every 3 batches): a run interrupted (SIGINT: it stops at its next
# batch report) once its first checkpoint is there resumes from that checkpoint's batch, in the same order,
# and ends with the uninterrupted run's checksum; the resumed run's first epoch is the first one's rest.
MID=(train --model lenet --train-limit 6000 --test-limit 300 --batch 50 --epochs 2 --devices cpu:2 --seed 4 --json)
run_cli mid_full "${MID[@]}"
"$DPTRAIN" "${MID[@]}" --progress-every 1 --checkpoint "$WORK/mid.ckpt" --checkpoint-every 3 \
  >"$WORK/mid_stopped.out" 2>"$WORK/mid_stopped.err" &
PID=$!
for _ in $(seq 1 1500); do [ -s "$WORK/mid.ckpt" ] && break; sleep 0.02; done
kill -INT "$PID"
wait "$PID"
json_check "$WORK/mid_stopped.out" "d['stopped'] and d['epochs_completed'] == 0" \
  "interrupted in its first epoch, after its first checkpoint at batch 3"
run_cli mid_resumed "${MID[@]}" --resume "$WORK/mid.ckpt"
json_check "$WORK/mid_resumed.out" \
  "d['param_checksum'] == '$(json_get "$WORK/mid_full.out" "d['param_checksum']")' and [e['epoch'] for e in d['epochs_detail']] == [1, 2]" \
  "resumed in the middle of epoch 1: the uninterrupted run's checksum"

# A checkpoint from 2 devices resumes on 1: training goes on (the numbers agree within float rounding).
run_cli other train "${RUN[@]}" --devices cpu:1 --epochs 3 --resume "$WORK/run.ckpt"
[ "$RC" -eq 0 ] || fail "resume on 1 device exited with $RC: $(tail -n 2 "$WORK/other.err")"
run_cli nothing train "${RUN[@]}" --devices cpu:2 --epochs 4 --resume "$WORK/run.ckpt"
json_check "$WORK/nothing.out" "d['param_checksum'] == '$FULL'" "resuming a finished run changes nothing"

# Damaged, foreign and missing checkpoints: exit 1 with one error line.
head -c 1000 "$WORK/run.ckpt" >"$WORK/short.ckpt"
run_cli short train "${RUN[@]}" --epochs 3 --resume "$WORK/short.ckpt"
[ "$RC" -eq 1 ] && grep -q "^dptrain: error: format error: .*truncated" "$WORK/short.err" &&
  [ "$(wc -l <"$WORK/short.err")" -eq 1 ] && pass "truncated checkpoint rejected" ||
  fail "truncated checkpoint: rc $RC, $(cat "$WORK/short.err")"
run_cli lenet train --model lenet --train-limit 300 --test-limit 100 --epochs 3 --resume "$WORK/run.ckpt"
[ "$RC" -eq 1 ] && grep -q "^dptrain: error: invalid argument: .*model" "$WORK/lenet.err" &&
  pass "checkpoint of another model rejected" || fail "foreign checkpoint: rc $RC, $(cat "$WORK/lenet.err")"
run_cli missing train "${RUN[@]}" --epochs 3 --resume "$WORK/absent.ckpt"
[ "$RC" -eq 1 ] && grep -q "^dptrain: error: i/o error" "$WORK/missing.err" && pass "missing checkpoint rejected" ||
  fail "missing checkpoint: rc $RC, $(cat "$WORK/missing.err")"
# Not regular files: refused at once, saying what they are.
mkfifo "$WORK/fifo.ckpt"
mkdir "$WORK/dir.ckpt"
for ckpt in "$WORK/fifo.ckpt" "$WORK/dir.ckpt" /dev/zero; do
  timeout -s KILL 30 "$DPTRAIN" train "${RUN[@]}" --epochs 3 --resume "$ckpt" >"$WORK/special.out" 2>"$WORK/special.err"
  RC=$?
  [ "$RC" -eq 1 ] && grep -q "^dptrain: error: i/o error: .*is not a regular file" "$WORK/special.err" &&
    [ "$(wc -l <"$WORK/special.err")" -eq 1 ] && pass "--resume $ckpt refused: $(cat "$WORK/special.err")" ||
    fail "--resume $ckpt: rc $RC (137: killed after 30 s), $(cat "$WORK/special.err")"
done
# 3 GiB of zeros (sparse): a format error from the header, without reading the file.
truncate -s 3G "$WORK/huge.ckpt"
START=$(date +%s.%N)
run_cli huge train "${RUN[@]}" --epochs 3 --resume "$WORK/huge.ckpt"
END=$(date +%s.%N)
# The run loads the data set first, so the bound covers that too.
[ "$RC" -eq 1 ] && grep -q "^dptrain: error: format error: .*bad magic" "$WORK/huge.err" &&
  "$PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) < 10 else 1)" "$START" "$END" &&
  pass "3 GiB garbage checkpoint refused" || fail "3 GiB garbage checkpoint: rc $RC, $(cat "$WORK/huge.err")"
rm -f "$WORK/huge.ckpt"
run_cli unwritable train "${RUN[@]}" --epochs 1 --checkpoint /nonexistent-dir/x.ckpt
[ "$RC" -eq 1 ] && grep -q "^dptrain: error: i/o error" "$WORK/unwritable.err" && pass "unwritable checkpoint reported" ||
  fail "unwritable checkpoint: rc $RC, $(cat "$WORK/unwritable.err")"
finish
