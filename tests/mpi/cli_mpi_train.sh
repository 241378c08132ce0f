#!/usr/bin/env bash
# `mpirun -np 2 dptrain train --devices cpu:2` on real Fashion-MNIST: one JSON result (process 0 only), the
# same test loss and accuracy as one process with 4 devices and as one device (equivalence tolerance), the
# same bits with a sharded optimizer, gradients and parameters (also on processes of 2 and 3 devices, and
# ResNet-18's batch norm with the gradient sharded across the job, and a pipeline's optimizer state sharded
# across the job), and the checkpoint written by process 0 only, loadable on one process.
# usage: cli_mpi_train.sh PATH-TO-dptrain PATH-TO-mpirun [SIMULATED-CUDA-MODULE-DIR]
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/../cli/common.sh" "$1"
MPIRUN=$2
SIM_DIR=${3:-}

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

# mpi NAME ARGS...: `mpirun -np 2 dptrain ARGS` in $WORK, its output in NAME.out and NAME.err.
mpi() {
  local name=$1
  shift
  (cd "$WORK" && "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$DPTRAIN" "$@" \
    >"$WORK/$name.out" 2>"$WORK/$name.err")
}
# same_loss A B WHAT: runs A and B report the same test loss (relative 1e-5) and accuracy (0.002).
same_loss() {
  "$PYTHON" - "$WORK/$1.out" "$WORK/$2.out" <<'PY' && pass "$3" || fail "$3: no ($(tail -n 2 "$WORK/$1.err"))"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ok = abs(a['test_loss'] - b['test_loss']) <= 1e-5 * abs(b['test_loss']) and abs(a['test_accuracy'] - b['test_accuracy']) <= 0.002
print(f"loss {a['test_loss']} acc {a['test_accuracy']}; reference: loss {b['test_loss']} acc {b['test_accuracy']}")
sys.exit(0 if ok else 1)
PY
}
# same_bits A B WHAT: runs A and B report the same param_checksum.
same_bits() {
  local a b
  a=$(json_get "$WORK/$1.out" "d['param_checksum']")
  b=$(json_get "$WORK/$2.out" "d['param_checksum']")
  [ -n "$a" ] && [ "$a" = "$b" ] && pass "$3 ($b)" || fail "$3: $a vs $b ($(tail -n 2 "$WORK/$2.err"))"
}

RUN=(train --model lenet --init uniform --optimizer adamw --lr 0.002 --train-limit 3000 --test-limit 1000 --epochs 2
  --seed 5 --json)
mpi mpi "${RUN[@]}" --devices cpu:2 --checkpoint "$WORK/mpi.ckpt" --save-weights "$WORK/mpi.safetensors"
RC=$?
[ "$RC" -eq 0 ] && pass "mpirun -np 2 exited with 0" || fail "mpirun exited with $RC: $(tail -n 3 "$WORK/mpi.err")"
# A sharded optimizer across processes: each process shards its own devices; the bits of the unsharded run.
mpi mpi_shard "${RUN[@]}" --devices cpu:2 --shard optimizer
same_bits mpi mpi_shard "--shard optimizer on 2 processes: the unsharded bits"
# Sharded gradients and parameters across processes (each process shards among its devices, the ranges
# summed over the processes): the unsharded bits, and a device holds part of the gradient.
for mode in gradients parameters; do
  mpi "mpi_$mode" "${RUN[@]}" --devices cpu:2 --shard $mode --bucket-kib 64
  same_bits mpi "mpi_$mode" "--shard $mode on 2 processes: the unsharded bits"
  json_check "$WORK/mpi_$mode.out" \
    "(m := d['memory_per_device'])['optimizer_state'] < $(json_get "$WORK/mpi.out" "d['memory_per_device']['optimizer_state']")" \
    "--shard $mode on 2 processes: a device keeps part of the optimizer state"
done
# The optimizer state sharded across every device of both processes (--shard-scope world): the unsharded
# bits, a quarter of the state per device, and a checkpoint that both processes save and process 0 writes,
# byte for byte the unsharded run's; resumed for a third epoch, the unsharded resumption's bits.
mpi mpi_world "${RUN[@]}" --devices cpu:2 --shard optimizer --shard-scope world --checkpoint "$WORK/world.ckpt"
same_bits mpi mpi_world "--shard-scope world on 2 processes: the unsharded bits"
json_check "$WORK/mpi_world.out" \
  "d['shard_scope'] == 'world' and 4 * d['memory_per_device']['optimizer_state'] <= $(json_get "$WORK/mpi.out" "d['memory_per_device']['optimizer_state']") + 65536" \
  "--shard-scope world on 2 x 2 devices: a device keeps about a quarter of the optimizer state"
cmp -s "$WORK/mpi.ckpt" "$WORK/world.ckpt" && pass "--shard-scope world: the checkpoint is the unsharded run's, byte for byte" ||
  fail "--shard-scope world: the checkpoint differs from the unsharded run's"
mpi resume_process "${RUN[@]}" --epochs 3 --devices cpu:2 --resume "$WORK/mpi.ckpt"
mpi resume_world "${RUN[@]}" --epochs 3 --devices cpu:2 --shard optimizer --shard-scope world --resume "$WORK/world.ckpt"
same_bits resume_process resume_world "--shard-scope world resumed for a third epoch: the unsharded bits"
# The gradient too (each bucket summed within the process, then reduce-scattered across the processes).
mpi mpi_world_gradients "${RUN[@]}" --devices cpu:2 --shard gradients --shard-scope world --bucket-kib 64
same_bits mpi mpi_world_gradients "--shard gradients --shard-scope world on 2 processes: the unsharded bits"
# And the parameters (each pass reads the other process's ranges one-sidedly): the unsharded bits, a device
# holds less of the parameters than in the process scope, and the checkpoint and the weights (process 0
# reads the other process's ranges) are the unsharded run's.
mpi mpi_world_parameters "${RUN[@]}" --devices cpu:2 --shard parameters --shard-scope world --bucket-kib 64 \
  --checkpoint "$WORK/world_parameters.ckpt" --save-weights "$WORK/world_parameters.safetensors"
same_bits mpi mpi_world_parameters "--shard parameters --shard-scope world on 2 processes: the unsharded bits"
json_check "$WORK/mpi_world_parameters.out" \
  "d['memory_per_device']['parameters'] < $(json_get "$WORK/mpi_parameters.out" "d['memory_per_device']['parameters']")" \
  "--shard parameters --shard-scope world: a device holds less of the parameters than in the process scope"
cmp -s "$WORK/mpi.ckpt" "$WORK/world_parameters.ckpt" &&
  pass "--shard parameters --shard-scope world: the checkpoint is the unsharded run's, byte for byte" ||
  fail "--shard parameters --shard-scope world: the checkpoint differs from the unsharded run's"
[ -s "$WORK/mpi.safetensors" ] && cmp -s "$WORK/mpi.safetensors" "$WORK/world_parameters.safetensors" &&
  pass "--shard parameters --shard-scope world: --save-weights writes the unsharded run's file, byte for byte" ||
  fail "--shard parameters --shard-scope world: --save-weights differs from the unsharded run's (or is missing)"
# ResNet-18 (batch norm: its statistics summed across the processes by the device threads while the
# communication threads sum the buckets, on separate MPI channels): the same, on a few batches.
RESNET=(train --model resnet18 --optimizer adamw --lr 0.001 --train-limit 64 --test-limit 16 --batch 32 --epochs 1
  --devices cpu:2 --json)
mpi resnet_none "${RESNET[@]}"
mpi resnet_world_gradients "${RESNET[@]}" --shard gradients --shard-scope world
same_bits resnet_none resnet_world_gradients "ResNet-18, --shard gradients --shard-scope world: the unsharded bits"
mpi resnet_world_parameters "${RESNET[@]}" --shard parameters --shard-scope world
same_bits resnet_none resnet_world_parameters "ResNet-18, --shard parameters --shard-scope world: the unsharded bits"
# Two stages on each process (batch norm in both), the optimizer state sharded across both processes'
# replicas of each stage: the unsharded pipeline's bits.
mpi resnet_pipeline "${RESNET[@]}" --pipeline 2
mpi resnet_pipeline_world "${RESNET[@]}" --pipeline 2 --shard optimizer --shard-scope world
same_bits resnet_pipeline resnet_pipeline_world \
  "ResNet-18, --pipeline 2 --shard optimizer --shard-scope world: the unsharded pipeline's bits"
# Processes of different device counts (2 and 3: ranges cut differently, summed by the pieces between the
# cuts; 1 and 2: the process of one device shards nothing but sums by the other's pieces): sharded
# gradients give the bits of the unsharded run on the same devices.
for counts in "2 3" "1 2"; do
  read -r here there <<<"$counts"
  for mode in none gradients; do
    (cd "$WORK" && "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none \
      -np 1 "$DPTRAIN" "${RUN[@]}" --devices cpu:"$here" --shard $mode --bucket-kib 64 : \
      -np 1 "$DPTRAIN" "${RUN[@]}" --devices cpu:"$there" --shard $mode --bucket-kib 64 \
      >"$WORK/mpi_${here}_${there}_$mode.out" 2>"$WORK/mpi_${here}_${there}_$mode.err")
  done
  same_bits "mpi_${here}_${there}_none" "mpi_${here}_${there}_gradients" \
    "--shard gradients on processes of $here and $there devices: the unsharded bits"
done
# GPUs across processes, against the simulated CUDA module (its NCCL across processes sums in global rank
# order, as within a process): 2 processes of 1 GPU give the bits of 1 process of 2 GPUs, ResNet-18's batch
# norm too.
if [ -n "$SIM_DIR" ] && [ -f "$SIM_DIR/libdptrain_cuda.so" ]; then
  export DPTRAIN_BACKEND_PATH="$SIM_DIR:$(dirname "$(readlink -f "$DPTRAIN")")/../lib" DPTRAIN_SIM_CUDA_DEVICES=2
  export DPTRAIN_SIM_CUDA_FAIL=
  GPU_RUN=(train --model lenet --init uniform --optimizer adamw --lr 0.002 --train-limit 1000 --test-limit 200
    --epochs 1 --seed 5 --json)
  run_cli gpu_local "${GPU_RUN[@]}" --devices cuda:0,1
  mpi gpu_mpi "${GPU_RUN[@]}" --devices cuda:local
  same_bits gpu_local gpu_mpi "2 processes x cuda:local (the GPUs 0 and 1) = 1 process x cuda:0,1 (simulated GPUs)"
  run_cli gpu_resnet_local "${RESNET[@]/cpu:2/cuda:0,1}"
  mpi gpu_resnet_mpi "${RESNET[@]/cpu:2/cuda:0}"
  same_bits gpu_resnet_local gpu_resnet_mpi "ResNet-18, 2 processes x cuda:0 = 1 process x cuda:0,1 (simulated)"
  # The stages divided among the processes on GPUs (one simulated GPU each, the messages through host
  # buffers): the bits of the same run on CPU devices.
  mpi gpu_pipeline_divided "${GPU_RUN[@]}" --devices cuda:local --pipeline 2 --micro-batches 3 --pipeline-scope world
  mpi cpu_pipeline_divided "${GPU_RUN[@]}" --devices cpu:1 --pipeline 2 --micro-batches 3 --pipeline-scope world
  same_bits cpu_pipeline_divided gpu_pipeline_divided \
    "--pipeline 2 --pipeline-scope world on 2 processes x 1 simulated GPU: the CPU devices' bits"
  # ZeRO-1 across every GPU of the job (the ranges gathered over NCCL): the unsharded bits, half the state per
  # GPU, and the checkpoint (collective, written by process 0) byte for byte the unsharded run's.
  mpi gpu_mpi_plain "${GPU_RUN[@]}" --devices cuda:local --checkpoint "$WORK/gpu_plain.ckpt"
  mpi gpu_mpi_world "${GPU_RUN[@]}" --devices cuda:local --shard optimizer --shard-scope world \
    --checkpoint "$WORK/gpu_world.ckpt"
  same_bits gpu_mpi_plain gpu_mpi_world "--shard optimizer --shard-scope world on 2 processes x 1 GPU: the unsharded bits"
  json_check "$WORK/gpu_mpi_world.out" \
    "2 * d['memory_per_device']['optimizer_state'] <= $(json_get "$WORK/gpu_mpi_plain.out" "d['memory_per_device']['optimizer_state']") + 65536" \
    "--shard-scope world on 2 processes x 1 GPU: a GPU keeps about half of the optimizer state"
  cmp -s "$WORK/gpu_plain.ckpt" "$WORK/gpu_world.ckpt" &&
    pass "--shard-scope world on GPUs: the checkpoint is the unsharded run's, byte for byte" ||
    fail "--shard-scope world on GPUs: the checkpoint differs from the unsharded run's"
  # ZeRO-2 across every GPU of the job (each bucket reduced to its owners over NCCL during backward): the
  # unsharded bits and checkpoint; within each process (the process scope) and ZeRO-3 across processes refused.
  mpi gpu_mpi_gradients "${GPU_RUN[@]}" --devices cuda:local --shard gradients --shard-scope world \
    --checkpoint "$WORK/gpu_gradients.ckpt"
  same_bits gpu_mpi_plain gpu_mpi_gradients "--shard gradients --shard-scope world on 2 processes x 1 GPU: the unsharded bits"
  cmp -s "$WORK/gpu_plain.ckpt" "$WORK/gpu_gradients.ckpt" &&
    pass "--shard gradients --shard-scope world on GPUs: the checkpoint is the unsharded run's, byte for byte" ||
    fail "--shard gradients --shard-scope world on GPUs: the checkpoint differs from the unsharded run's"
  # ZeRO-2 within each process (the process scope, two GPUs in each: with one it shards nothing): each
  # bucket reduced to its owners over NCCL, the ranges summed over the processes by MPI at the window's end:
  # the bits of the same run on CPU devices.
  mpi gpu_mpi_gradients_process "${GPU_RUN[@]}" --devices cuda:0,1 --shard gradients
  mpi cpu_mpi_gradients_process "${GPU_RUN[@]}" --devices cpu:2 --shard gradients
  same_bits cpu_mpi_gradients_process gpu_mpi_gradients_process \
    "--shard gradients (process scope) on 2 processes x 2 simulated GPUs: the CPU devices' bits"
  mpi gpu_mpi_parameters_process "${GPU_RUN[@]}" --devices cuda:0,1 --shard parameters
  same_bits cpu_mpi_gradients_process gpu_mpi_parameters_process \
    "--shard parameters (process scope) on 2 processes x 2 simulated GPUs: the CPU devices' bits"
  # ZeRO-3 across every GPU of the job: the other process's ranges read from the host copies it exposes.
  mpi gpu_mpi_parameters_world "${GPU_RUN[@]}" --devices cuda:local --shard parameters --shard-scope world
  same_bits gpu_mpi_plain gpu_mpi_parameters_world \
    "--shard parameters --shard-scope world on 2 processes x 1 simulated GPU: the unsharded bits"
  unset DPTRAIN_BACKEND_PATH DPTRAIN_SIM_CUDA_DEVICES DPTRAIN_SIM_CUDA_FAIL
fi
run_cli four "${RUN[@]}" --devices cpu:4
run_cli one "${RUN[@]}" --devices cpu:1

objects=$(grep -c '^{' "$WORK/mpi.out")
[ "$objects" -eq 1 ] && pass "one JSON result (process 0 only)" || fail "$objects JSON results on stdout"
headers=$(grep -c '^dptrain ' "$WORK/mpi.err")
[ "$headers" -eq 1 ] && pass "one run header (process 0 only)" || fail "$headers run headers"
json_check "$WORK/mpi.out" "d['processes'] == 2 and d['devices'] == 2 and d['epochs_completed'] == 2" \
  "2 processes x 2 devices trained 2 epochs"
for ref in four one; do
  same_loss mpi "$ref" "2 processes x 2 devices: test loss and accuracy equal the $ref-device run's"
done
# Pipeline model parallel across the processes: each runs both stages on its 2 devices on its share of each
# batch, the stages' gradients summed over the processes.
mpi mpi_pipeline "${RUN[@]}" --devices cpu:2 --pipeline 2 --micro-batches 3
for ref in four one; do
  same_loss mpi_pipeline "$ref" "--pipeline 2 on 2 processes: test loss and accuracy equal the $ref-device run's"
done
# Its optimizer state sharded across both processes' replicas of each stage (--shard-scope world): the bits of
# the unsharded pipeline, a device keeping half of its stage's state.
mpi mpi_pipeline_world "${RUN[@]}" --devices cpu:2 --pipeline 2 --micro-batches 3 --shard optimizer --shard-scope world
same_bits mpi_pipeline mpi_pipeline_world "--pipeline 2 --shard optimizer --shard-scope world on 2 processes: the unsharded bits"
json_check "$WORK/mpi_pipeline_world.out" \
  "2 * d['memory_per_device']['optimizer_state'] <= $(json_get "$WORK/mpi_pipeline.out" "d['memory_per_device']['optimizer_state']") + 65536" \
  "--pipeline 2 --shard-scope world on 2 processes: a device keeps about half of its stage's optimizer state"
# The stages divided among the processes (--pipeline-scope world): process 0 holds the first stage and
# process 1 the second, each on 2 devices, their activations and gradients sent between them: the bits of one
# process running both stages on 4 devices, a device of process 0 holding only its stage's parameters, and
# that run's checkpoint and weights byte for byte (both processes give their stage, process 0 writes).
run_cli pipeline_alone "${RUN[@]}" --devices cpu:4 --pipeline 2 --micro-batches 3 \
  --checkpoint "$WORK/alone.ckpt" --save-weights "$WORK/alone.safetensors"
mpi pipeline_divided "${RUN[@]}" --devices cpu:2 --pipeline 2 --micro-batches 3 --pipeline-scope world \
  --checkpoint "$WORK/divided.ckpt" --save-weights "$WORK/divided.safetensors"
same_bits pipeline_alone pipeline_divided "--pipeline 2 --pipeline-scope world on 2 processes: one process's bits"
json_check "$WORK/pipeline_divided.out" \
  "d['pipeline_scope'] == 'world' and d['memory_per_device']['parameters'] < 4 * d['parameters'] / 2" \
  "--pipeline-scope world: a device of process 0 holds only the first stage's parameters"
cmp -s "$WORK/alone.ckpt" "$WORK/divided.ckpt" && cmp -s "$WORK/alone.safetensors" "$WORK/divided.safetensors" &&
  pass "--pipeline-scope world: the checkpoint and the weights are the one-process run's, byte for byte" ||
  fail "--pipeline-scope world: the checkpoint or the weights differ from the one-process run's"
# Each stage's optimizer state sharded among its 2 replicas in the process: the same bits (the state's
# accounting is test_mpi_pipeline_world's).
mpi pipeline_divided_shard "${RUN[@]}" --devices cpu:2 --pipeline 2 --micro-batches 3 --pipeline-scope world \
  --shard optimizer
same_bits pipeline_alone pipeline_divided_shard "--pipeline-scope world --shard optimizer: one process's bits"
# One device each, named or (without --devices) one per stage of the process's.
run_cli pipeline_two "${RUN[@]}" --devices cpu:2 --pipeline 2 --micro-batches 3
mpi pipeline_divided_one "${RUN[@]}" --devices cpu:1 --pipeline 2 --micro-batches 3 --pipeline-scope world
same_bits pipeline_two pipeline_divided_one "--pipeline 2 --pipeline-scope world --devices cpu:1: one process's bits"
mpi pipeline_divided_default "${RUN[@]}" --pipeline 2 --micro-batches 3 --pipeline-scope world
same_bits pipeline_two pipeline_divided_default "--pipeline 2 --pipeline-scope world without --devices: one process's bits"
# More processes than stages: 4 processes holding 2 copies of each of the 2 stages (one device each, without
# --devices), each pair of copies on half of every batch: the test loss of 4 data-parallel devices.
(cd "$WORK" && "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 4 "$DPTRAIN" "${RUN[@]}" \
  --pipeline 2 --micro-batches 3 --pipeline-scope world >"$WORK/pipeline_copies.out" 2>"$WORK/pipeline_copies.err")
same_loss pipeline_copies four "--pipeline 2 --pipeline-scope world on 4 processes (2 copies of each stage): the four-device run's test loss"
# Several stages in each process and copies of them at once (--pipeline-copies): 4 processes holding 2 copies
# of 4 stages, 2 stages per process (one device each, without --devices): the bits of 2 copies of 2 stages
# above (where the model is cut changes no bit).
(cd "$WORK" && "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 4 "$DPTRAIN" "${RUN[@]}" \
  --pipeline 4 --pipeline-copies 2 --micro-batches 3 --pipeline-scope world \
  >"$WORK/pipeline_copies_stages.out" 2>"$WORK/pipeline_copies_stages.err")
same_bits pipeline_copies pipeline_copies_stages \
  "--pipeline 4 --pipeline-copies 2 on 4 processes (2 stages in each): the bits of 2 copies of 2 stages"
json_check "$WORK/pipeline_copies_stages.out" "d['pipeline_copies'] == 2 and d['devices'] == 2" \
  "--pipeline 4 --pipeline-copies 2: the JSON names the copies, 2 devices per process"
grep -q "the stages divided among the processes (2 copies, 2 stages each)" "$WORK/pipeline_copies_stages.err" &&
  pass "--pipeline-copies: the header names the copies and the stages per process" ||
  fail "--pipeline-copies: the header does not name the copies ($(grep '^pipeline' "$WORK/pipeline_copies_stages.err"))"
# 2 replicas of a stage in each of its 2 copies, the optimizer state sharded among the replicas (the gradient
# summed whole over the copies first), or among both copies' replicas (--shard-scope world: reduce-scattered
# over the copies): the unsharded bits.
for scope in none process world; do
  (cd "$WORK" && "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 4 "$DPTRAIN" "${RUN[@]}" \
    --devices cpu:2 --pipeline 2 --micro-batches 3 --pipeline-scope world \
    $([ $scope = none ] || echo "--shard optimizer --shard-scope $scope") \
    >"$WORK/pipeline_copies_$scope.out" 2>"$WORK/pipeline_copies_$scope.err")
done
for scope in process world; do
  same_bits pipeline_copies_none pipeline_copies_$scope \
    "--pipeline 2 --pipeline-scope world on 4 processes of 2 devices, --shard optimizer --shard-scope $scope: the unsharded bits"
done
json_check "$WORK/mpi.out" "d['test_accuracy'] > 0.5" "training moved (test accuracy above 0.5)"
[ -s "$WORK/mpi.ckpt" ] && pass "process 0 wrote the checkpoint" || fail "no checkpoint"
run_cli resumed "${RUN[@]}" --devices cpu:1 --epochs 2 --resume "$WORK/mpi.ckpt"
json_check "$WORK/resumed.out" "d['epochs_completed'] == 0" "the 2-process checkpoint loads on 1 process"

# gpt-mini (tokens, a target at every position) on 2 processes of 1 device: the bits of 1 process of 2.
TEXT=${DPTRAIN_TEXT_DIR:-/usr/share/games/fortunes}
if [ -d "$TEXT" ]; then
  GPT=(train --model gpt-mini --text "$TEXT" --train-limit 32 --test-limit 16 --json)
  mpi gpt_mpi "${GPT[@]}" --devices cpu:1
  run_cli gpt_local "${GPT[@]}" --devices cpu:2
  same_bits gpt_mpi gpt_local "gpt-mini on 2 processes = 2 devices of 1 process"
  # Its parameters sharded across both processes: the head reads the embedding it is tied to from the
  # other process's range (one-sided gets), the same bits.
  mpi gpt_mpi_parameters "${GPT[@]}" --devices cpu:1 --shard parameters --shard-scope world
  same_bits gpt_mpi gpt_mpi_parameters "gpt-mini, --shard parameters --shard-scope world on 2 processes: the unsharded bits"
  # Two stages on each process, the head tied to the first stage's embedding, the optimizer state sharded
  # across both processes: the unsharded pipeline's bits.
  mpi gpt_mpi_pipeline "${GPT[@]}" --devices cpu:2 --pipeline 2
  mpi gpt_mpi_pipeline_world "${GPT[@]}" --devices cpu:2 --pipeline 2 --shard optimizer --shard-scope world
  same_bits gpt_mpi_pipeline gpt_mpi_pipeline_world \
    "gpt-mini, --pipeline 2 --shard optimizer --shard-scope world on 2 processes: the unsharded pipeline's bits"
  # The stages divided among the processes, the LM head (process 1) tied to the token embedding (process
  # 0): the mirror's gradient and the embedding's values go between them; one process's bits.
  TIE=(--tie lm_head.weight=transformer.wte.weight --pipeline 2 --micro-batches 2)
  run_cli gpt_tied_alone "${GPT[@]}" --devices cpu:2 "${TIE[@]}"
  mpi gpt_tied_divided "${GPT[@]}" --devices cpu:1 "${TIE[@]}" --pipeline-scope world
  same_bits gpt_tied_alone gpt_tied_divided \
    "gpt-mini, its head tied across the processes (--pipeline-scope world): one process's bits"
  # The same on one simulated GPU per process: the stages' messages and the tie's through host buffers.
  if [ -n "$SIM_DIR" ] && [ -f "$SIM_DIR/libdptrain_cuda.so" ]; then
    (export DPTRAIN_BACKEND_PATH="$SIM_DIR:$(dirname "$(readlink -f "$DPTRAIN")")/../lib" \
      DPTRAIN_SIM_CUDA_DEVICES=2 DPTRAIN_SIM_CUDA_FAIL=
    mpi gpt_tied_divided_gpu "${GPT[@]}" --devices cuda:local "${TIE[@]}" --pipeline-scope world)
    same_bits gpt_tied_divided gpt_tied_divided_gpu \
      "gpt-mini, its head tied across the processes on 1 simulated GPU each: the CPU devices' bits"
  fi
fi
finish
