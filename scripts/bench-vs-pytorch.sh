#!/usr/bin/env bash
# dptrain against PyTorch, side by side in one run: the same LeNet training step (batch 256, SGD lr 0.2) at the
# same thread count (PyTorch with T intra-op threads, dptrain with T CPU devices of one thread each),
# alternating the two ROUNDS times, then the median images/s of each and the ratio. Not part of CI.
#   scripts/bench-vs-pytorch.sh            threads 1 and 2, 3 rounds, 40 steps
#   PEER=debian scripts/bench-vs-pytorch.sh   skip the PyPI attempt, use Debian's python3-torch
# The peer: PyTorch from PyPI in .venv when it installs and imports, else Debian's python3-torch (1.13).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-40}
THREADS=${THREADS:-"1 2"}
PEER=${PEER:-auto}

scripts/install-deps.sh >/dev/null
scripts/build.sh >/dev/null

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
python=""
if [ "$PEER" != "debian" ]; then
  # Debian's python3 makes virtual environments only with python3-venv (ensurepip) installed.
  python3 -c 'import ensurepip' 2>/dev/null ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
  [ -x .venv/bin/python ] || python3 -m venv .venv
  if .venv/bin/python -c 'import torch' 2>/dev/null || { .venv/bin/python -m pip install -q torch numpy &&
    .venv/bin/python -c 'import torch'; }; then
    python=.venv/bin/python
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
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

printf '\n%-8s %-14s %-14s %s\n' threads "dptrain img/s" "pytorch img/s" ratio
for t in $THREADS; do
  d=() p=()
  for ((r = 0; r < ROUNDS; ++r)); do
    d+=("$(build/bin/dptrain_bench --only-training --models lenet --bucket-kib 1024 --devices "$t" \
      --steps "$STEPS" | awk -v k="$t" '$1 == "lenet" && $2 == k {print $(NF - 6)}')")
    p+=("$($python tests/bench/pytorch_lenet.py "$t" "$STEPS" | awk '{print $(NF - 1)}')")
  done
  dm=$(printf '%s\n' "${d[@]}" | median)
  pm=$(printf '%s\n' "${p[@]}" | median)
  printf '%-8s %-14s %-14s %.2f   (runs: dptrain %s; pytorch %s)\n' "$t" "$dm" "$pm" \
    "$(awk -v a="$dm" -v b="$pm" 'BEGIN {print a / b}')" "${d[*]}" "${p[*]}"
done
