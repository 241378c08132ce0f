#!/usr/bin/env bash
# gpt-mini against PyTorch step by step: tests/capi/gpt_mini_steps trains STEPS steps from its initial
# weights; tests/tools/pytorch_gpt_mini_steps.py replays them in PyTorch from the same weights on the same
# batches and compares every loss, gradient norm and the final parameters. Skipped (77) without a Python
# that imports torch and safetensors ($DPTRAIN_PYTHON, else python3) or without the fortunes corpus.
# usage: gpt_mini_vs_pytorch.sh PATH-TO-gpt_mini_steps [STEPS]
set -euo pipefail
steps_bin=$1 steps=${2:-30}
text=${DPTRAIN_TEXT_DIR:-/usr/share/games/fortunes}
python=${DPTRAIN_PYTHON:-python3}
if ! "$python" -c 'import torch, safetensors' 2>/dev/null; then
  echo "skipped: $python does not import torch and safetensors (set DPTRAIN_PYTHON)"
  exit 77
fi
[ -d "$text" ] || { echo "skipped: no text corpus in $text"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-gpt-vs-pytorch.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$steps_bin" "$text" "$steps" "$work" >"$work/steps.txt"
"$python" "$(dirname "$0")/../tools/pytorch_gpt_mini_steps.py" "$text" "$steps" "$work"
