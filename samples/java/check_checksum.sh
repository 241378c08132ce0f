#!/usr/bin/env bash
# The Java sample and the C CLI, with the same settings (LeNet, 2 CPU devices, 1 epoch, 2000 train and 500
# test samples, seed 3, CLI defaults otherwise), must print the same param_checksum.
# Usage: check_checksum.sh JAVA CLASSPATH DPTRAIN_CLI
set -u
JAVA=$1 CLASSPATH=$2 CLI=$3
DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

java_out=$("$JAVA" -cp "$CLASSPATH" org.dptrain.samples.TrainFashionMnist \
  --devices 2 --epochs 1 --train-limit 2000 --test-limit 500 --seed 3) || {
  echo "FAIL: the Java sample exited with $?"; echo "$java_out"; exit 1; }
echo "$java_out"
cli_out=$("$CLI" train --model lenet --devices cpu:2 --epochs 1 --train-limit 2000 --test-limit 500 --seed 3 \
  --json 2>/dev/null) || { echo "FAIL: dptrain train exited with $?"; exit 1; }

java_sum=$(sed -n 's/^param_checksum \([0-9a-f]\{16\}\)$/\1/p' <<<"$java_out")
cli_sum=$(sed -n 's/.*"param_checksum": *"\([0-9a-f]\{16\}\)".*/\1/p' <<<"$cli_out")
echo "java param_checksum: ${java_sum:-<none>}"
echo "cli  param_checksum: ${cli_sum:-<none>}"
if [ -z "$java_sum" ] || [ -z "$cli_sum" ]; then
  echo "FAIL: a checksum is missing"
  exit 1
fi
if ! grep -q '^epoch 1/1: ' <<<"$java_out"; then
  echo "FAIL: the sample printed no per-epoch accuracy"
  exit 1
fi
if [ "$java_sum" != "$cli_sum" ]; then
  echo "FAIL: checksums differ"
  exit 1
fi
echo "PASS: identical param_checksum $java_sum"
