#!/bin/bash
# docs/benchmarks.md, "Where the pipeline is cut": per balance, the cuts, images/s, each device's busy
# (compute) seconds and the largest / the mean. Needs build/ (scripts/build.sh) and the data (scripts/install-deps.sh).
cd "$(dirname "$0")/../build"
row() {  # label, args...
  label=$1; shift
  for b in work time parameters; do
    bin/dptrain train "$@" --pipeline-balance $b --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); c=[t['compute_seconds'] for t in d['device_times']]
print('| $label | $b | %s | %.0f | %s | %.2f |' % (d['pipeline_cuts'], d['images_per_second'], ' / '.join('%.2f'%x for x in c), max(c)/(sum(c)/len(c))))"
  done
}
for round in 1 2; do
row "ResNet-18, 2 stages" --model resnet18 --pipeline 2 --micro-batches 8 --batch 64 --train-limit 512 --test-limit 64 --epochs 1 --seed 1
row "ResNet-18, 4 stages" --model resnet18 --pipeline 4 --micro-batches 8 --batch 64 --train-limit 512 --test-limit 64 --epochs 1 --seed 1
row "gpt-mini, 3 stages" --model gpt-mini --pipeline 3 --micro-batches 6 --batch 24 --train-limit 240 --test-limit 24 --epochs 1 --seed 1
done
