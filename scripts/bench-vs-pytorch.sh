#!/usr/bin/env bash
# dptrain against PyTorch, side by side in one run, alternating the two ROUNDS times per row, then the median
# images/s of each and the ratio. Not part of CI.
#  - LeNet (batch 256, SGD lr 0.2): PyTorch with T intra-op threads, dptrain with T CPU devices of one thread
#    each (tests/bench/pytorch_lenet.py, `dptrain_bench --models lenet`).
#  - ResNet-18 (the built-in "resnet18", batch 64 and 256, SGD lr 0.1; tests/bench/pytorch_resnet18.py): the
#    same, plus the share of T x the single-core SGEMM peak the step reaches (dptrain_bench measures the peak
#    with OpenBLAS in each run; the step's GEMM work is 3 GEMMs per conv/dense layer), K=2 over K=1, and the
#    step time of sync vs local BatchNorm on 2 devices.
#   scripts/bench-vs-pytorch.sh               threads 1 and 2, 3 rounds (about 25 minutes on 2 cores)
#   MODELS=resnet18 RN_BATCHES=64 scripts/bench-vs-pytorch.sh
#   MODELS=gpt-mini scripts/bench-vs-pytorch.sh   gpt-mini's tokens/s (dptrain's CLI vs tests/bench/pytorch_gpt_mini.py)
#   VENV=/path/to/venv scripts/bench-vs-pytorch.sh   PyTorch from an existing virtual environment
#   PEER=debian scripts/bench-vs-pytorch.sh   skip the PyPI attempt, use Debian's python3-torch
# The peer: PyTorch from PyPI in $VENV (default .venv) when it installs and imports, else Debian's
# python3-torch (1.13). Each measurement first waits (up to QUIET_WAIT seconds) until the machine is quiet:
# other processes using less than QUIET_BUSY cores (default 0.1) over 3 s; the column "others" is the mean
# number of cores that processes other than the measured one used during it (a row is only as good as that).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-40}
THREADS=${THREADS:-"1 2"}
MODELS=${MODELS:-"lenet resnet18 gpt-mini"}
RN_BATCHES=${RN_BATCHES:-"64 256"}
RN_IMAGES=${RN_IMAGES:-1024}  # timed ResNet-18 images per run: steps = RN_IMAGES / batch (at least 4)
GPT_STEPS=${GPT_STEPS:-40}    # gpt-mini steps of 16 windows per run
PEER=${PEER:-auto}
VENV=${VENV:-.venv}
QUIET_BUSY=${QUIET_BUSY:-0.1}
QUIET_WAIT=${QUIET_WAIT:-1200}
BUILD=${BUILD:-build}

if [ "${SKIP_BUILD:-0}" != "1" ]; then
  scripts/install-deps.sh >/dev/null
  scripts/build.sh >/dev/null
fi
bench=$BUILD/bin/dptrain_bench

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
python=""
if [ "$PEER" != "debian" ]; then
  if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    # Debian's python3 makes virtual environments only with python3-venv (ensurepip) installed.
    python3 -c 'import ensurepip' 2>/dev/null ||
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q torch numpy || true
  fi
  if "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    python=$VENV/bin/python
  else
    echo "PyTorch from PyPI did not install or import here; falling back to Debian's python3-torch" >&2
  fi
fi
if [ -z "$python" ]; then
  dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch >/dev/null
  python=/usr/bin/python3
fi
echo "peer: $($python -c 'import torch, sys; print("PyTorch", torch.__version__, "from", torch.__file__)')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# Busy jiffies (all but idle and iowait) of all CPUs, and jiffies per second.
busy_jiffies() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
HZ=$(getconf CLK_TCK)

# Waits until processes use less than QUIET_BUSY cores over 3 s (or QUIET_WAIT seconds have passed).
wait_quiet() {
  local waited=0 b0 b1 busy
  while :; do
    b0=$(busy_jiffies)
    sleep 3
    b1=$(busy_jiffies)
    busy=$(awk -v d=$((b1 - b0)) -v hz="$HZ" 'BEGIN {printf "%.2f", d / hz / 3}')
    if awk -v b="$busy" -v q="$QUIET_BUSY" 'BEGIN {exit !(b < q)}'; then return 0; fi
    if [ "$waited" -ge "$QUIET_WAIT" ]; then
      echo "(not quiet after ${waited} s: $busy cores busy; measuring anyway)" >&2
      return 0
    fi
    [ "$waited" -eq 0 ] && echo "(waiting for a quiet machine: $busy cores busy)" >&2
    sleep 7
    waited=$((waited + 10))
  done
}

# measure CMD...: waits for a quiet machine, runs CMD with its stdout in $OUT_FILE, and sets OTHERS to the
# mean number of cores that other processes kept busy meanwhile (all busy time minus CMD's own CPU time,
# from the shell's `times`, written to a file: a subshell would not see this shell's children).
OUT_FILE=$(mktemp)
TIMES_FILE=$(mktemp)
trap 'rm -f "$OUT_FILE" "$TIMES_FILE"' EXIT
# The CPU seconds (user + system) of this shell's finished children, from the second line of `times`.
children_cpu() {
  awk 'NR == 2 {
    for (i = 1; i <= 2; ++i) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
    print s }' "$TIMES_FILE"
}
measure() {
  wait_quiet
  local b0 b1 t0 t1 own0 own1
  times >"$TIMES_FILE"
  own0=$(children_cpu)
  b0=$(busy_jiffies)
  t0=$(date +%s.%N)
  "$@" >"$OUT_FILE"
  t1=$(date +%s.%N)
  b1=$(busy_jiffies)
  times >"$TIMES_FILE"
  own1=$(children_cpu)
  OTHERS=$(awk -v b=$((b1 - b0)) -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v o0="$own0" -v o1="$own1" \
    'BEGIN {o = (b / hz - (o1 - o0)) / (t1 - t0); printf "%.2f", o < 0 ? 0 : o}')
}

# dptrain_bench's training table: the value of column NAME in the row of model MODEL and K devices, counted
# from the end of the row (a bucket of "1 MiB" is two words).
bench_column() {
  awk -v m="$1" -v k="$2" -v name="$3" '
    $1 == "model" && $2 == "K" { for (i = 1; i <= NF; ++i) col[$i] = NF - i; next }
    $1 == m && $2 == k && (name in col) { v = $(NF - col[name]); sub("%", "", v); print v; exit }' "$OUT_FILE"
}
bench_peak() { sed -n 's/^single-thread SGEMM peak.*: \([0-9.]*\) GFLOP\/s$/\1/p' "$OUT_FILE"; }
bench_flops() { sed -n "s/^$1: \([0-9.]*\) GFLOP of GEMM work per training sample$/\1/p" "$OUT_FILE"; }

# The CLI's JSON result only (its progress and summary go to stderr).
dptrain_json() { "$BUILD/bin/dptrain" "$@" 2>/dev/null; }

for model in $MODELS; do
  case $model in
    lenet)
      echo
      echo "LeNet, batch 256, SGD lr 0.2, $STEPS timed steps"
      printf '%-8s %-14s %-14s %-6s %s\n' threads "dptrain img/s" "pytorch img/s" ratio "runs (others: cores used by other processes)"
      for t in $THREADS; do
        d=() p=() od=() op=()
        for ((r = 0; r < ROUNDS; ++r)); do
          measure "$bench" --only-training --models lenet --bucket-kib 1024 --devices "$t" --steps "$STEPS"
          d+=("$(bench_column lenet "$t" images/s)") od+=("$OTHERS")
          measure "$python" tests/bench/pytorch_lenet.py "$t" "$STEPS"
          p+=("$(awk '{print $(NF - 1)}' "$OUT_FILE")") op+=("$OTHERS")
        done
        dm=$(printf '%s\n' "${d[@]}" | median)
        pm=$(printf '%s\n' "${p[@]}" | median)
        printf '%-8s %-14s %-14s %-6s (dptrain %s; pytorch %s; others %s / %s)\n' "$t" "$dm" "$pm" \
          "$(ratio "$dm" "$pm")" "${d[*]}" "${p[*]}" "${od[*]}" "${op[*]}"
      done
      ;;
    gpt-mini)
      # dptrain through its CLI (the real data and recipe: AdamW, clipping, the schedule), its tokens/s over
      # the whole epoch; PyTorch over its steps after the first 3 (tests/bench/pytorch_gpt_mini.py).
      echo
      echo "gpt-mini (3.32 M parameters), batch 16 x 128 tokens of the fortunes corpus, AdamW, $GPT_STEPS steps"
      printf '%-8s %-14s %-14s %-6s %s\n' threads "dptrain tok/s" "pytorch tok/s" ratio "runs (others: cores used by other processes)"
      declare -A med=()
      for t in $THREADS; do
        d=() p=() od=() op=()
        for ((r = 0; r < ROUNDS; ++r)); do
          measure dptrain_json train --model gpt-mini --train-limit $((16 * GPT_STEPS)) --test-limit 16 \
            --devices "cpu:$t" --json
          d+=("$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["tokens_per_second"]))' "$OUT_FILE")")
          od+=("$OTHERS")
          measure "$python" tests/bench/pytorch_gpt_mini.py --threads "$t" --steps "$GPT_STEPS" --test-limit 16 --json
          p+=("$(python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["tokens_per_second"]))' "$OUT_FILE")")
          op+=("$OTHERS")
        done
        dm=$(printf '%s\n' "${d[@]}" | median)
        pm=$(printf '%s\n' "${p[@]}" | median)
        med[d$t]=$dm med[p$t]=$pm
        printf '%-8s %-14s %-14s %-6s (dptrain %s; pytorch %s; others %s / %s)\n' "$t" "$dm" "$pm" \
          "$(ratio "$dm" "$pm")" "${d[*]}" "${p[*]}" "${od[*]}" "${op[*]}"
      done
      if [ -n "${med[d1]:-}" ] && [ -n "${med[d2]:-}" ]; then
        echo "K=2 / K=1: dptrain $(ratio "${med[d2]}" "${med[d1]}")x, pytorch (2 / 1 threads) $(ratio "${med[p2]}" "${med[p1]}")x"
      fi
      unset med
      ;;
    resnet18)
      for b in $RN_BATCHES; do
        steps=$((RN_IMAGES / b))
        [ "$steps" -ge 4 ] || steps=4
        echo
        echo "ResNet-18 (1x28x28), batch $b, SGD lr 0.1, $steps timed steps after 3 warm-up; of_peak: GEMM work of"
        echo "the step / (T x single-core SGEMM peak); K=2/K=1 per framework below"
        printf '%-8s %-14s %-14s %-6s %-9s %-9s %s\n' threads "dptrain img/s" "pytorch img/s" ratio \
          "dp_peak" "pt_peak" "runs (others: cores used by other processes)"
        declare -A med=()
        for t in $THREADS; do
          d=() p=() od=() op=() fr=() pk=() flops=""
          for ((r = 0; r < ROUNDS; ++r)); do
            measure "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices "$t" \
              --steps "$steps"
            d+=("$(bench_column resnet18 "$t" images/s)") od+=("$OTHERS")
            fr+=("$(bench_column resnet18 "$t" of_peak)") pk+=("$(bench_peak)")
            flops=$(bench_flops resnet18)
            measure "$python" tests/bench/pytorch_resnet18.py bench "$t" "$steps" "$b"
            p+=("$(awk '{print $(NF - 1)}' "$OUT_FILE")") op+=("$OTHERS")
          done
          dm=$(printf '%s\n' "${d[@]}" | median)
          pm=$(printf '%s\n' "${p[@]}" | median)
          peak=$(printf '%s\n' "${pk[@]}" | median)
          med[d$t]=$dm med[p$t]=$pm
          printf '%-8s %-14s %-14s %-6s %-9s %-9s (dptrain %s; pytorch %s; others %s / %s)\n' "$t" "$dm" "$pm" \
            "$(ratio "$dm" "$pm")" "$(printf '%s\n' "${fr[@]}" | median)%" \
            "$(awk -v r="$pm" -v f="$flops" -v t="$t" -v p="$peak" 'BEGIN {printf "%.1f%%", 100 * r * f / (t * p)}')" \
            "${d[*]}" "${p[*]}" "${od[*]}" "${op[*]}"
        done
        echo "SGEMM peak (median of the runs): $peak GFLOP/s per core; $flops GFLOP of GEMM work per image"
        if [ -n "${med[d1]:-}" ] && [ -n "${med[d2]:-}" ]; then
          echo "K=2 / K=1: dptrain $(ratio "${med[d2]}" "${med[d1]}")x, pytorch (2 / 1 threads) $(ratio "${med[p2]}" "${med[p1]}")x"
        fi
        # BatchNorm: sync (the default, statistics of the global batch) vs local (each device's slice).
        if [[ " $THREADS " == *" 2 "* ]]; then
          s=() l=()
          for ((r = 0; r < ROUNDS; ++r)); do
            measure "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices 2 \
              --steps "$steps" --bn sync
            s+=("$(bench_column resnet18 2 images/s)")
            measure "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices 2 \
              --steps "$steps" --bn local
            l+=("$(bench_column resnet18 2 images/s)")
          done
          sm=$(printf '%s\n' "${s[@]}" | median)
          lm=$(printf '%s\n' "${l[@]}" | median)
          printf 'BatchNorm on 2 devices, batch %s: step %s ms sync, %s ms local: sync costs %s%% over local (runs: sync %s; local %s images/s)\n' \
            "$b" "$(awk -v r="$sm" -v b="$b" 'BEGIN {printf "%.0f", 1000 * b / r}')" \
            "$(awk -v r="$lm" -v b="$b" 'BEGIN {printf "%.0f", 1000 * b / r}')" \
            "$(awk -v s="$sm" -v l="$lm" 'BEGIN {printf "%+.1f", 100 * (l / s - 1)}')" "${s[*]}" "${l[*]}"
        fi
        unset med
      done
      ;;
    *)
      echo "unknown model $model (lenet, resnet18)" >&2
      exit 2
      ;;
  esac
done
