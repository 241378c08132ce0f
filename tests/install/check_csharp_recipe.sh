#!/usr/bin/env bash
# The C# README's NuGet recipe, as written: installs the csharp component (the package, as a local feed) into a
# temporary prefix that is not on the library path, saves the README's program as Train.cs and its XML block as
# Train.exe.config in an empty folder, and runs the README's nuget and mcs lines there (their /opt/dptrain
# replaced by that prefix) with LD_LIBRARY_PATH and MONO_PATH unset. Checks what the program prints.
# Exit 77 (skipped) without mcs, mono and nuget, without the C# package or without Fashion-MNIST.
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2")
readme="$source/bindings/csharp/README.md"
data=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
for tool in mcs mono nuget; do
  command -v $tool >/dev/null || { echo "$tool not found: skipped"; exit 77; }
done
ls "$build"/csharp/nupkg/DPTrain.*.nupkg >/dev/null 2>&1 || { echo "this build has no C# package: skipped"; exit 77; }
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "no Fashion-MNIST in $data: skipped"; exit 77; }

restore=$(grep -m 1 '^nuget install DPTrain -Source /opt/dptrain/' "$readme") ||
  { echo "no 'nuget install DPTrain -Source /opt/dptrain/...' line in $readme"; exit 1; }
recipe=$(grep -m 1 '^mcs -r:packages/DPTrain/' "$readme") || { echo "no 'mcs -r:packages/DPTrain/...' line in $readme"; exit 1; }
block() { awk -v open="$(printf '\140\140\140%s' "$1")" '$0 == open {c=1; next} c && $0 == "```" {exit} c {print}' "$readme"; }
program=$(block csharp)
[ -n "$program" ] || { echo "no csharp block in $readme"; exit 1; }
config=$(block xml)
[ -n "$config" ] || { echo "no xml block (Train.exe.config) in $readme"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only the C# component: the package carries libdptrain, so nothing else of an install is needed.
cmake --install "$build" --prefix "$tmp/prefix" --component csharp >/dev/null
mkdir "$tmp/app"
printf '%s\n' "$program" >"$tmp/app/Train.cs"
printf '%s\n' "$config" >"$tmp/app/Train.exe.config"
command="${restore//\/opt\/dptrain/$tmp/prefix} && $recipe"
echo "$command"
# A fresh HOME: nuget 2.8's machine cache could otherwise hold an older package of the same version.
out=$(cd "$tmp/app" && env -u LD_LIBRARY_PATH -u MONO_PATH HOME="$tmp/home" bash -c "$command" 2>&1) ||
  { echo "$out"; echo "the recipe failed"; exit 1; }
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
echo "C# NuGet recipe from a prefix off the library path: losses $losses, accuracy $acc"
