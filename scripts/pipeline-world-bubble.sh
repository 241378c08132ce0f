#!/bin/bash
# docs/benchmarks.md, "The bubble across processes": ResNet-18 in 2 stages, M micro-batches, in one process
# (cpu:2) and divided between two (mpirun -np 2, cpu:1 each, --pipeline-scope world): images/s and the
# first stage's compute / communication / idle seconds and idle fraction (a receive's wait for the other
# process counts as idle since 2026-12-05), beside GPipe's (S - 1) / (M + S - 1). Needs build/
# (scripts/build.sh), the data (scripts/install-deps.sh) and mpirun.
cd "$(dirname "$0")/../build"
A=(train --model resnet18 --pipeline 2 --batch 64 --train-limit 512 --test-limit 64 --epochs 1 --seed 1 --json)
row() {  # label, M, command...
  label=$1 m=$2; shift 2
  "$@" 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); t=d['device_times'][0]
busy=t['compute_seconds']+t['communication_seconds']+t['update_seconds']+t['idle_seconds']
print('| %d | $label | %.1f | %.2f / %.3f / %.2f | %.2f | %.2f |' % ($m, d['images_per_second'], t['compute_seconds'],
      t['communication_seconds'], t['idle_seconds'], t['idle_seconds']/busy, 1.0/($m+1)))"
}
echo "| M | layout | images/s | stage 0: compute / communication / idle s | idle fraction | GPipe's |"
echo "| --- | --- | --- | --- | --- | --- |"
for m in 1 2 4 8; do
  row "one process, cpu:2" $m bin/dptrain "${A[@]}" --micro-batches $m --devices cpu:2
  row "two processes, cpu:1 each" $m mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    bin/dptrain "${A[@]}" --micro-batches $m --devices cpu:1 --pipeline-scope world
done
