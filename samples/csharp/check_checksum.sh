#!/usr/bin/env bash
# The C# sample and the C CLI, run with the same settings, must end with the same param_checksum.
# Usage: check_checksum.sh DPTRAIN_CLI MONO TrainFashionMnist.exe   (exit 77 = skipped: no Fashion-MNIST)
set -euo pipefail
cli=$1 mono=$2 sample=$3
data=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [[ ! -f $data/train-images-idx3-ubyte.gz ]]; then
  echo "SKIP: Fashion-MNIST not found in $data (apt-get install dataset-fashion-mnist)"
  exit 77
fi
flags=(--epochs 1 --train-limit 2000 --test-limit 500 --seed 3)

c_json=$("$cli" train --model lenet --devices cpu:2 "${flags[@]}" --json 2>/dev/null)
c_sum=$(grep -o '"param_checksum":"[0-9a-f]\{16\}"' <<<"$c_json" | grep -o '[0-9a-f]\{16\}')

cs_out=$("$mono" "$sample" --devices 2 "${flags[@]}")
echo "$cs_out"
cs_sum=$(sed -n 's/^param_checksum \([0-9a-f]\{16\}\)$/\1/p' <<<"$cs_out")

echo "C CLI: param_checksum ${c_sum:-<none>}"
echo "C#:    param_checksum ${cs_sum:-<none>}"
if [[ -z $c_sum || -z $cs_sum || $c_sum != "$cs_sum" ]]; then
  echo "FAIL: checksums differ"
  exit 1
fi
grep -q '^epoch 1/1: .*test loss .* accuracy 0\.[0-9]' <<<"$cs_out" || { echo "FAIL: no epoch accuracy line"; exit 1; }
echo "PASS: identical checksums"
