#!/usr/bin/env bash
# The main job: installs what is needed, builds the library and the `dptrain` command, and trains LeNet on
# Fashion-MNIST across the CPU devices (the textbook recipe: batch 256, lr 0.2, 10 epochs, N(0, 0.01^2)
# weights). Extra arguments go to `dptrain train`, e.g. scripts/demo.sh --devices cpu:1 --epochs 2
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target dptrain-cli >/dev/null
build/bin/dptrain devices
exec build/bin/dptrain train --model lenet --plot build/lenet.svg --metrics build/lenet.csv "$@"
