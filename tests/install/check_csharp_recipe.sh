#!/usr/bin/env bash
# The C# README's "Install and use" recipe, as written: installs into a temporary prefix that is not on the
# library path, saves the README's program as Train.cs and runs the README's command line in an empty folder
# (its /opt/dptrain replaced by that prefix) with LD_LIBRARY_PATH unset. Checks what the program prints.
# Exit 77 (skipped) without mcs and mono, without the C# binding or without Fashion-MNIST.
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2")
readme="$source/bindings/csharp/README.md"
data=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then echo "mcs or mono not found: skipped"; exit 77; fi
[ -e "$build/csharp/DPTrain.dll" ] || { echo "this build has no C# binding: skipped"; exit 77; }
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "no Fashion-MNIST in $data: skipped"; exit 77; }

recipe=$(grep -m 1 '^mcs -r:/opt/dptrain/' "$readme") || { echo "no 'mcs -r:/opt/dptrain/...' line in $readme"; exit 1; }
program=$(awk '/^```csharp$/ {c=1; next} c && /^```$/ {exit} c {print}' "$readme")
[ -n "$program" ] || { echo "no csharp block in $readme"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir "$tmp/app"
printf '%s\n' "$program" >"$tmp/app/Train.cs"
command=${recipe//\/opt\/dptrain/$tmp/prefix}
echo "$command"
out=$(cd "$tmp/app" && env -u LD_LIBRARY_PATH bash -c "$command" 2>&1) || { echo "$out"; echo "the recipe failed"; exit 1; }
echo "$out"

# LeNet has 129068 parameters; two epochs on 10000 samples lower the loss and learn well past chance (0.1):
# measured loss 2.14 then 1.55, accuracy 0.44 (the second epoch's).
echo "$out" | grep -Eq '^129068 parameters, checksum [0-9a-f]{16}$' || { echo "no '129068 parameters, checksum ...' line"; exit 1; }
losses=$(echo "$out" | sed -n 's/^epoch [12]: loss \([0-9.]*\)$/\1/p' | tr '\n' ' ')
acc=$(echo "$out" | sed -n 's/^accuracy \([0-9.]*\)$/\1/p')
python3 - "$acc" $losses <<'PY' || { echo "accuracy '$acc' or losses '$losses' off"; exit 1; }
import sys
acc, losses = float(sys.argv[1] or 0), [float(v) for v in sys.argv[2:]]
sys.exit(0 if acc >= 0.3 and len(losses) == 2 and losses[1] < losses[0] else 1)
PY
echo "C# recipe from a prefix off the library path: losses $losses, accuracy $acc"
