#!/usr/bin/env bash
# dptrain against PyTorch, side by side in one run, alternating the two ROUNDS times per row, then the median
# images/s (tokens/s) of each and the ratio, per thread count and precision. Not part of CI.
#  - LeNet (batch 256, SGD lr 0.2): PyTorch with T intra-op threads, dptrain with T CPU devices of one thread
#    each (tests/bench/pytorch_lenet.py, `dptrain_bench --models lenet`).
#  - ResNet-18 (the built-in "resnet18", batch 64 and 256, SGD lr 0.1; tests/bench/pytorch_resnet18.py): the
#    same, plus the share of T x the single-core GEMM peak of the row's precision the step reaches
#    (dptrain_bench measures the peak in each run with its GEMM kernel of that precision; the step's GEMM
#    work is 3 GEMMs per conv/dense layer), K=2 over K=1, and the step time of sync vs local BatchNorm on 2
#    devices (in the first precision of PRECISIONS).
#  - gpt-mini (batch 16 x 128 tokens, AdamW): dptrain's CLI (`dptrain train --model gpt-mini`) against
#    tests/bench/pytorch_gpt_mini.py, tokens/s.
# PRECISIONS (default "fp32"): the precisions to run, "fp32 bf16" for both, alternated within each round.
# dptrain gets `--precision P` (dptrain_bench, or `dptrain train` for gpt-mini), the peer `--precision P`:
# with bf16 its forward pass and loss run under torch.autocast("cpu", dtype=torch.bfloat16), backward and the
# optimizer step outside it (parameters, gradients and optimizer state float32, as dptrain's bf16). Every
# table has a precision column; with both precisions, each table is followed by the bf16 / fp32 speed-up of
# each side per thread count.
#   scripts/bench-vs-pytorch.sh               threads 1 and 2, fp32, 3 rounds (about 25 minutes on 2 cores)
#   PRECISIONS="fp32 bf16" scripts/bench-vs-pytorch.sh   fp32 and bf16 side by side
#   MODELS=resnet18 RN_BATCHES=64 scripts/bench-vs-pytorch.sh
#   MODELS=gpt-mini scripts/bench-vs-pytorch.sh   gpt-mini's tokens/s (dptrain's CLI vs tests/bench/pytorch_gpt_mini.py)
#   VENV=/path/to/venv scripts/bench-vs-pytorch.sh   PyTorch from an existing virtual environment
#   PEER=debian scripts/bench-vs-pytorch.sh   skip the PyPI attempt, use Debian's python3-torch
#   SKIP_BUILD=1 BUILD=/path/to/build scripts/bench-vs-pytorch.sh   binaries already built (no install, no build)
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
PRECISIONS=${PRECISIONS:-fp32}  # fp32 and/or bf16
RN_BATCHES=${RN_BATCHES:-"64 256"}
RN_IMAGES=${RN_IMAGES:-1024}  # timed ResNet-18 images per run: steps = RN_IMAGES / batch (at least 4)
GPT_STEPS=${GPT_STEPS:-40}    # gpt-mini steps of 16 windows per run
PEER=${PEER:-auto}
VENV=${VENV:-.venv}
QUIET_BUSY=${QUIET_BUSY:-0.1}
QUIET_WAIT=${QUIET_WAIT:-1200}
BUILD=${BUILD:-build}
for prec in $PRECISIONS; do
  case $prec in
    fp32 | bf16) ;;
    *)
      echo "PRECISIONS: unknown precision $prec (fp32, bf16)" >&2
      exit 2
      ;;
  esac
done
[ -n "${PRECISIONS// /}" ] || { echo "PRECISIONS is empty" >&2; exit 2; }

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

# wait_quiet, measure FILE CMD... (sets OTHERS: the cores other processes used meanwhile).
# shellcheck source=scripts/quiet-machine.sh
source scripts/quiet-machine.sh  # (the working directory is the repository's root)
OUT_FILE=$(mktemp)
trap 'rm -f "$OUT_FILE"' EXIT

# dptrain_bench's training table: the value of column NAME in the row of model MODEL, precision PREC, a
# float32 all-reduce and K devices. The header names the columns; NAME is counted from the end of the row (a
# bucket of "1 MiB" is two words), so it has to be a column after the bucket.
bench_column() {
  awk -v m="$1" -v p="$2" -v k="$3" -v name="$4" '
    $1 == "model" && $2 == "prec" { for (i = 1; i <= NF; ++i) col[$i] = NF - i; next }
    $1 == m && $2 == p && $3 == "fp32" && $4 == k && (name in col) {
      v = $(NF - col[name]); sub("%", "", v); print v; exit }' "$OUT_FILE"
}
# The single-thread GEMM peak of precision PREC (dptrain's kernel of that precision), in GFLOP/s.
bench_peak() { sed -n "s/^single-thread GEMM peak, $1 (.*): \([0-9.]*\) GFLOP\/s$/\1/p" "$OUT_FILE"; }
bench_flops() { sed -n "s/^$1: \([0-9.]*\) GFLOP of GEMM work per training sample$/\1/p" "$OUT_FILE"; }
# The rate of a peer's line ("..., <rate> images/s") and of a JSON result ("tokens_per_second").
peer_rate() { awk '{print $(NF - 1)}' "$OUT_FILE"; }
json_tokens() {
  python3 -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["tokens_per_second"]))' "$OUT_FILE"
}

# The CLI's JSON result only (its progress and summary go to stderr).
dptrain_json() { "$BUILD/bin/dptrain" "$@" 2>/dev/null; }

# got VALUE WHAT: sets V to VALUE; an empty VALUE (the output's format is not the one read here) stops the
# script with the output of the run.
got() {
  V=$1
  [ -n "$V" ] && return 0
  echo "bench-vs-pytorch: no $2 in the output of the last run:" >&2
  cat "$OUT_FILE" >&2
  exit 1
}

# The runs of one thread count, per precision, space-separated: D and P dptrain's and PyTorch's rates, OD and
# OP the cores other processes used meanwhile (FR, PK: ResNet-18's dptrain of_peak and GEMM peaks). MED holds
# the medians of a table's rows, MED[d|p,PREC,T], for the ratios under it.
declare -A D=() P=() OD=() OP=() FR=() PK=() MED=()
new_runs() { D=() P=() OD=() OP=() FR=() PK=(); }
# shellcheck disable=SC2086 # $1 unquoted on purpose: one value a line
median_of() { printf '%s\n' $1 | median; }
runs_text() { echo "(dptrain ${D[$1]% }; pytorch ${P[$1]% }; others ${OD[$1]% } / ${OP[$1]% })"; }
# One row per precision of thread count $1: the medians of both sides (kept in MED), their ratio, the runs.
median_rows() {
  local prec dm pm
  for prec in $PRECISIONS; do
    dm=$(median_of "${D[$prec]}") pm=$(median_of "${P[$prec]}")
    MED[d,$prec,$1]=$dm MED[p,$prec,$1]=$pm
    printf '%-8s %-5s %-14s %-14s %-6s %s\n' "$1" "$prec" "$dm" "$pm" "$(ratio "$dm" "$pm")" \
      "$(runs_text "$prec")"
  done
}

# Under a table: K=2 / K=1 per precision (when threads 1 and 2 ran), the bf16 / fp32 speed-up of each side per
# thread count (when both precisions ran).
ratios() {
  local prec t
  for prec in $PRECISIONS; do
    if [ -n "${MED[d,$prec,1]:-}" ] && [ -n "${MED[d,$prec,2]:-}" ]; then
      echo "K=2 / K=1, $prec: dptrain $(ratio "${MED[d,$prec,2]}" "${MED[d,$prec,1]}")x," \
        "pytorch (2 / 1 threads) $(ratio "${MED[p,$prec,2]}" "${MED[p,$prec,1]}")x"
    fi
  done
  for t in $THREADS; do
    if [ -n "${MED[d,fp32,$t]:-}" ] && [ -n "${MED[d,bf16,$t]:-}" ]; then
      echo "bf16 / fp32, $t threads: dptrain $(ratio "${MED[d,bf16,$t]}" "${MED[d,fp32,$t]}")x," \
        "pytorch $(ratio "${MED[p,bf16,$t]}" "${MED[p,fp32,$t]}")x"
    fi
  done
  MED=()
}

for model in $MODELS; do
  case $model in
    lenet)
      echo
      echo "LeNet, batch 256, SGD lr 0.2, $STEPS timed steps"
      printf '%-8s %-5s %-14s %-14s %-6s %s\n' threads prec "dptrain img/s" "pytorch img/s" ratio \
        "runs (others: cores used by other processes)"
      for t in $THREADS; do
        new_runs
        for ((r = 0; r < ROUNDS; ++r)); do
          for prec in $PRECISIONS; do
            measure "$OUT_FILE" "$bench" --only-training --models lenet --bucket-kib 1024 --devices "$t" --steps "$STEPS" \
              --precision "$prec"
            got "$(bench_column lenet "$prec" "$t" images/s)" "lenet images/s"
            D[$prec]+="$V " OD[$prec]+="$OTHERS "
            measure "$OUT_FILE" "$python" tests/bench/pytorch_lenet.py "$t" "$STEPS" --precision "$prec"
            got "$(peer_rate)" "images/s"
            P[$prec]+="$V " OP[$prec]+="$OTHERS "
          done
        done
        median_rows "$t"
      done
      ratios
      ;;
    gpt-mini)
      # dptrain through its CLI (the real data and recipe: AdamW, clipping, the schedule), its tokens/s over
      # the whole epoch; PyTorch over its steps after the first 3 (tests/bench/pytorch_gpt_mini.py).
      echo
      echo "gpt-mini (3.32 M parameters), batch 16 x 128 tokens of the fortunes corpus, AdamW, $GPT_STEPS steps"
      printf '%-8s %-5s %-14s %-14s %-6s %s\n' threads prec "dptrain tok/s" "pytorch tok/s" ratio \
        "runs (others: cores used by other processes)"
      for t in $THREADS; do
        new_runs
        for ((r = 0; r < ROUNDS; ++r)); do
          for prec in $PRECISIONS; do
            measure "$OUT_FILE" dptrain_json train --model gpt-mini --train-limit $((16 * GPT_STEPS)) --test-limit 16 \
              --devices "cpu:$t" --precision "$prec" --json
            got "$(json_tokens)" "tokens_per_second"
            D[$prec]+="$V " OD[$prec]+="$OTHERS "
            measure "$OUT_FILE" "$python" tests/bench/pytorch_gpt_mini.py --threads "$t" --steps "$GPT_STEPS" --test-limit 16 \
              --precision "$prec" --json
            got "$(json_tokens)" "tokens_per_second"
            P[$prec]+="$V " OP[$prec]+="$OTHERS "
          done
        done
        median_rows "$t"
      done
      ratios
      ;;
    resnet18)
      read -r bn_prec _ <<<"$PRECISIONS"  # the precision of the BatchNorm comparison: the first one
      for b in $RN_BATCHES; do
        steps=$((RN_IMAGES / b))
        [ "$steps" -ge 4 ] || steps=4
        echo
        echo "ResNet-18 (1x28x28), batch $b, SGD lr 0.1, $steps timed steps after 3 warm-up; of_peak: GEMM work of"
        echo "the step (as im2col computes it: dptrain's Winograd convolutions do fewer multiplications, so"
        echo "dp_peak may pass 100%) / (T x the single-core GEMM peak of the precision); K=2/K=1 per framework below"
        printf '%-8s %-5s %-14s %-14s %-6s %-9s %-9s %s\n' threads prec "dptrain img/s" "pytorch img/s" ratio \
          "dp_peak" "pt_peak" "runs (others: cores used by other processes)"
        declare -A peaks=()  # every GEMM peak of this batch's runs, per precision
        for t in $THREADS; do
          new_runs
          flops=""
          for ((r = 0; r < ROUNDS; ++r)); do
            for prec in $PRECISIONS; do
              measure "$OUT_FILE" "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices "$t" \
                --steps "$steps" --precision "$prec"
              got "$(bench_column resnet18 "$prec" "$t" images/s)" "resnet18 images/s"
              D[$prec]+="$V " OD[$prec]+="$OTHERS "
              got "$(bench_column resnet18 "$prec" "$t" of_peak)" "resnet18 of_peak"
              FR[$prec]+="$V "
              got "$(bench_peak "$prec")" "$prec GEMM peak"
              PK[$prec]+="$V " peaks[$prec]+="$V "
              got "$(bench_flops resnet18)" "resnet18 GEMM work"
              flops=$V
              measure "$OUT_FILE" "$python" tests/bench/pytorch_resnet18.py bench "$t" "$steps" "$b" --precision "$prec"
              got "$(peer_rate)" "images/s"
              P[$prec]+="$V " OP[$prec]+="$OTHERS "
            done
          done
          for prec in $PRECISIONS; do
            dm=$(median_of "${D[$prec]}") pm=$(median_of "${P[$prec]}") peak=$(median_of "${PK[$prec]}")
            MED[d,$prec,$t]=$dm MED[p,$prec,$t]=$pm
            printf '%-8s %-5s %-14s %-14s %-6s %-9s %-9s %s\n' "$t" "$prec" "$dm" "$pm" "$(ratio "$dm" "$pm")" \
              "$(median_of "${FR[$prec]}")%" \
              "$(awk -v r="$pm" -v f="$flops" -v t="$t" -v p="$peak" 'BEGIN {printf "%.1f%%", 100 * r * f / (t * p)}')" \
              "$(runs_text "$prec")"
          done
        done
        for prec in $PRECISIONS; do
          echo "$prec GEMM peak (median of the runs): $(median_of "${peaks[$prec]}") GFLOP/s per core"
        done
        echo "$flops GFLOP of GEMM work per image"
        unset peaks
        ratios
        # BatchNorm: sync (the default, statistics of the global batch) vs local (each device's slice).
        if [[ " $THREADS " == *" 2 "* ]]; then
          s=() l=()
          for ((r = 0; r < ROUNDS; ++r)); do
            measure "$OUT_FILE" "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices 2 \
              --steps "$steps" --precision "$bn_prec" --bn sync
            got "$(bench_column resnet18 "$bn_prec" 2 images/s)" "resnet18 images/s"
            s+=("$V")
            measure "$OUT_FILE" "$bench" --only-training --models resnet18 --bucket-kib 1024 --batch "$b" --devices 2 \
              --steps "$steps" --precision "$bn_prec" --bn local
            got "$(bench_column resnet18 "$bn_prec" 2 images/s)" "resnet18 images/s"
            l+=("$V")
          done
          sm=$(printf '%s\n' "${s[@]}" | median)
          lm=$(printf '%s\n' "${l[@]}" | median)
          printf 'BatchNorm on 2 devices, batch %s, %s: step %s ms sync, %s ms local: sync costs %s%% over local (runs: sync %s; local %s images/s)\n' \
            "$b" "$bn_prec" "$(awk -v r="$sm" -v b="$b" 'BEGIN {printf "%.0f", 1000 * b / r}')" \
            "$(awk -v r="$lm" -v b="$b" 'BEGIN {printf "%.0f", 1000 * b / r}')" \
            "$(awk -v s="$sm" -v l="$lm" 'BEGIN {printf "%+.1f", 100 * (l / s - 1)}')" "${s[*]}" "${l[*]}"
        fi
      done
      ;;
    *)
      echo "unknown model $model (lenet, resnet18, gpt-mini)" >&2
      exit 2
      ;;
  esac
done
