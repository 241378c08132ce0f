#!/usr/bin/env bash
# Pipeline model parallel, dptrain against PyTorch in one run: `dptrain_pipeline_bench --models deep-mlp
# --stages 2` (tests/bench/pipeline_bench.cpp: one CPU device of one thread per stage) and then
# tests/bench/pytorch_pipeline.py (torch.distributed.pipelining: one process of one thread per stage, gloo),
# the same model, cut (4 + 4 hidden layers), batch, inputs, SGD with momentum, warm-up step and timed steps.
# Prints each side's own table, then one table of both, row by row (schedule, M): images/s, the ratio to
# the same side's single device / process on the whole batch, each stage's idle fraction, GPipe's
# (S - 1) / (M + S - 1). Not part of CI.
#   tests/bench/pipeline_vs_pytorch.sh [BUILD [PYTHON]]
#   BUILD=/path/to/build PYTHON=/path/to/venv/bin/python tests/bench/pipeline_vs_pytorch.sh
#   BATCH=1024 MICRO=1,2,4,8,16 STEPS=3 (the defaults)
# BUILD: a dptrain build directory with bin/dptrain_pipeline_bench (default build). PYTHON: a python with
# torch 2.x, whose torch.distributed.pipelining has ScheduleGPipe and Schedule1F1B (default $VENV/bin/python,
# VENV default .venv, as scripts/bench-vs-pytorch.sh; nothing is installed here). As in that script, each
# measurement first waits (up to QUIET_WAIT seconds, default 600) until other processes use less than
# QUIET_BUSY cores (default 0.1) over 3 s, and "others" is the mean number of cores other processes used
# during it: two stages on a 2-core machine have no core to spare, so a run with others above ~0.1 is
# slowed and its idle fractions hold waiting for a core.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
VENV=${VENV:-.venv}
PYTHON=${2:-${PYTHON:-$VENV/bin/python}}
BATCH=${BATCH:-1024}
MICRO=${MICRO:-1,2,4,8,16}
STEPS=${STEPS:-3}
QUIET_BUSY=${QUIET_BUSY:-0.1}
QUIET_WAIT=${QUIET_WAIT:-600}

bench=$BUILD/bin/dptrain_pipeline_bench
[ -x "$bench" ] || { echo "pipeline_vs_pytorch: no $bench (build dptrain, or pass its build directory)" >&2; exit 2; }
"$PYTHON" -c 'from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe' 2>/dev/null || {
  echo "pipeline_vs_pytorch: $PYTHON has no torch.distributed.pipelining (pass a python with torch 2.x)" >&2
  exit 2
}
echo "peer: $("$PYTHON" -c 'import torch; print("PyTorch", torch.__version__, "from", torch.__file__)')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

# wait_quiet, measure FILE CMD... (sets OTHERS: the cores other processes used meanwhile).
# shellcheck source=scripts/quiet-machine.sh
source scripts/quiet-machine.sh  # (the working directory is the repository's root)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

measure "$TMP/dptrain" "$bench" --models deep-mlp --batch "$BATCH" --stages 2 --micro "$MICRO" --steps "$STEPS"
dp_others=$OTHERS
measure "$TMP/pytorch" "$PYTHON" tests/bench/pytorch_pipeline.py --batch "$BATCH" --micro "$MICRO" \
  --steps "$STEPS"
pt_others=$OTHERS

echo
echo "dptrain: $bench --models deep-mlp --batch $BATCH --stages 2 --micro $MICRO --steps $STEPS (others: $dp_others cores)"
cat "$TMP/dptrain"
echo
echo "pytorch: tests/bench/pytorch_pipeline.py --batch $BATCH --micro $MICRO --steps $STEPS (others: $pt_others cores)"
cat "$TMP/pytorch"

# Both tables row by row. dptrain's rows: model batch S sched M images/s ratio idle0 idle1 GPipe act.MiB (S = 2:
# two idle words); PyTorch's: schedule M images/s ratio idle0 idle1 GPipe loss-diff, or a refused row.
echo
echo "deep-mlp, batch $BATCH, S = 2, $STEPS timed steps; vs 1: against the same side's single device / process"
awk '
  FNR == 1 { file++ }
  file == 1 && $1 == "deep-mlp" && $3 == 1 { dbase = $6 }
  file == 1 && $1 == "deep-mlp" && $3 == 2 { key = $4 " " $5; order[++n] = key
    d[key] = sprintf("%10s %7s %-9s", $6, $7, $8 " " $9); ideal[key] = $10 }
  file == 2 && $1 == "-" { pbase = $3 }
  file == 2 && ($1 == "1f1b" || $1 == "gpipe") { key = $1 " " $2
    p[key] = ($3 == "refused") ? sprintf("%-28s", "refused (M < S)") : sprintf("%10s %7s %-9s", $3, $4, $5 " " $6) }
  END {
    printf "%-6s %3s | %10s %7s %-9s | %10s %7s %-9s | %6s\n", "sched", "M", "dptrain/s", "vs 1", "idle",
      "pytorch/s", "vs 1", "idle", "GPipe"
    printf "%-6s %3s | %10s %7s %-9s | %10s %7s %-9s | %6s\n", "-", 1, dbase, "1.00x", "-", pbase, "1.00x", "-", "-"
    for (i = 1; i <= n; ++i) { k = order[i]; split(k, f, " ")
      printf "%-6s %3s | %s | %s | %6s\n", f[1], f[2], d[k], (k in p) ? p[k] : sprintf("%-28s", "-"), ideal[k] }
  }' "$TMP/dptrain" "$TMP/pytorch"
