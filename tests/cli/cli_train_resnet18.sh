#!/usr/bin/env bash
# The built-in ResNet-18 learns Fashion-MNIST as PyTorch does with the same model and recipe: `dptrain train
# --model resnet18` on 2 CPU devices (sync BatchNorm, the default), the d2l recipe (SGD lr 0.1, no momentum,
# weights N(0, 0.01^2), BatchNorm weight 1 and bias 0, pixels / 255) on a subset small enough for a test:
# the first 8192 training samples, one epoch of batch 64 (128 steps), tested on the first 1000 test samples
# (evaluation mode: BatchNorm with its running statistics).
#
# The bound: PyTorch 2.15 on the same subset and recipe (tests/bench/pytorch_resnet18.py train --threads 2
# --epochs 1 --batch 64 --train-limit 8192 --test-limit 1000 --seed S, S = 0..7; docs/benchmarks.md) reaches
# a test accuracy of 0.770 0.756 0.613 0.758 0.703 0.705 0.737 0.736: mean 0.722, standard deviation 0.050,
# worst 0.613. After 128 steps at lr 0.1 the running statistics of BatchNorm still lag the weights, so one
# run's accuracy swings from seed to seed (96 steps: 0.42-0.74; dptrain's seeds 0-3 here: 0.698 0.606 0.707
# 0.576). The bound, 0.50, is PyTorch's worst seed less about two standard deviations (0.613 - 2 x 0.05 =
# 0.51, rounded down), four below its mean: a run of a working network clears it whatever its seed (and
# whatever the last bits of the kernels), while chance is 0.10 and a network whose BatchNorm statistics or
# evaluation are wrong stays far below it.
# Then `--recompute-bn 2048`: batch norm's running statistics recomputed over the first 2048 training samples
# (32 batches of 64, PyTorch's update_bn) and the test set evaluated again on them: the same bound (a network
# whose recomputed statistics were wrong, e.g. variances not unbiased-averaged or means left at zero,
# falls to chance). On 2 cores the run with recomputation gave 0.761 on the running statistics and 0.774
# on ones recomputed over all 8192 samples (docs/benchmarks.md).
# About 3 minutes on 2 quiet cores (docs/benchmarks.md); the ctest timeout allows for a busy machine.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

BOUND=0.50
start=$(date +%s)
run_cli r train --model resnet18 --devices cpu:2 --batch 64 --lr 0.1 --epochs 1 --train-limit 8192 \
  --test-limit 1000 --recompute-bn 2048 --json
seconds=$(($(date +%s) - start))
[ "$RC" -eq 0 ] || fail "training run exited with $RC: $(tail -n 3 "$WORK/r.err")"
R=$WORK/r.out
json_check "$R" "d['model'] == 'resnet18' and d['parameters'] == 11172810" "resnet18, 11,172,810 parameters"
json_check "$R" "d['devices'] == 2 and d['batch_norm'] == 'sync' and d['init'] == 'normal'" \
  "2 devices, sync BatchNorm, normal init"
json_check "$R" "d['train_samples'] == 8192 and d['test_samples'] == 1000 and d['optimizer_steps'] == 128" \
  "8192 training samples in 128 steps, 1000 test samples"
json_check "$R" "d['train_loss'] < 2.0" "training loss below 2.0 (chance: ln 10 = 2.30)"
json_check "$R" "d['test_accuracy'] >= $BOUND" "test accuracy >= $BOUND (PyTorch's bound on this subset)"
json_check "$R" "d['recompute_bn_samples'] == 2048 and d['recomputed_test_accuracy'] >= $BOUND" \
  "recomputed batch-norm statistics: test accuracy >= $BOUND"
echo "# resnet18: test accuracy $(json_get "$R" "d['test_accuracy']")" \
  "($(json_get "$R" "d['recomputed_test_accuracy']") recomputed), train loss" \
  "$(json_get "$R" "round(d['train_loss'], 4)"), $(json_get "$R" "round(d['images_per_second'], 1)") images/s," \
  "$seconds s in all"

finish
