#!/usr/bin/env bash
# The GPU device check: on a machine with an NVIDIA GPU, builds dptrain with its CUDA module (Release, tests
# off except those it runs), runs the GPU-labelled tests (the CUDA module's conformance suite: every kernel
# and collective against the CPU backend; the C API's CUDA cases; `dptrain devices`), prints `dptrain
# devices`, benchmarks (dptrain_gpu_bench) training on 1 GPU, on 2 replicas sharing it (cuda:0x2) and on 2
# GPUs when there are two: LeNet and an MLP, ResNet-18 (also with a sharded optimizer and sharded gradients,
# as a 2-stage pipeline and with deterministic convolution algorithms) and gpt-mini, in fp32 and bf16; the
# all-reduce bus bandwidth on the float32 and bf16 wires; runs the PyTorch peer on the same GPU (tests/bench/pytorch_gpu_peer.py); records where a ResNet-18
# and a gpt-mini step's time goes (dptrain_gpu_bench --trace, scripts/trace-summary.py); trains LeNet and
# ResNet-18 for 10 epochs on Fashion-MNIST on cuda:0x2 (the test accuracy; the data from the machine or from
# the carried package); and ends with a short table: one row per test, one per conformance case, one per
# benchmark figure. Meant to finish within 8 minutes on one H200 with 16 cores (90-110 s there on 2026-12-04,
# before the peer, the deterministic rows, the timelines and the training runs). On a machine without a GPU it
# runs too: every GPU case is then reported SKIPPED, and the table says that nothing ran on a GPU.
#
#   tests/gpu/device-check.sh [BUILD_DIR]        (default build-gpu)
#
# Environment: DPTRAIN_JOBS (default: the core count); DPTRAIN_CHECK_OUT, a folder for the logs (default
# BUILD_DIR/device-check); DPTRAIN_GPU_DEPS, a folder of .deb files from tests/gpu/fetch-deps.sh, unpacked
# under /tmp for any of OpenBLAS, zlib, CMocka that the machine lacks (default .gpu-deps);
# DPTRAIN_GPU_DEPS_FORCE=1 uses them even when the machine has its own (to test this script).
# Exit status: 0 when everything built and no test failed (skipped is not failed), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build-gpu}
jobs=${DPTRAIN_JOBS:-$(nproc)}
out=${DPTRAIN_CHECK_OUT:-$build/device-check}
deps=${DPTRAIN_GPU_DEPS:-.gpu-deps}
mkdir -p "$build" "$out"
out=$(cd "$out" && pwd)
start=$(date +%s)
rows=()   # "check|result|detail" lines of the final table
status=0

elapsed() { echo $(($(date +%s) - start)); }
row() { rows+=("$1|$2|$3"); }
section() { echo; echo "== $* ($(elapsed) s)"; }

print_table() {
  section "device check summary"
  printf '%-38s  %-8s  %s\n' "check" "result" "detail"
  printf '%-38s  %-8s  %s\n' "--------------------------------------" "--------" "------"
  local r
  for r in "${rows[@]}"; do
    IFS='|' read -r check result detail <<<"$r"
    printf '%-38s  %-8s  %s\n' "$check" "$result" "$detail"
  done
  echo "total $(elapsed) s; logs in $out"
}

# ---- the machine -------------------------------------------------------------------------------------------
section "machine"
gpu_names="none seen"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv,noheader | tee "$out/gpus.txt"
  [ -s "$out/gpus.txt" ] && gpu_names="$(cut -d, -f2 "$out/gpus.txt" | sed 's/^ *//' | sort | uniq -c | sed 's/^ *//' |
    paste -sd ';' -)"
else
  echo "nvidia-smi not found: probably no NVIDIA driver here"
fi
row "machine" "info" "$(nproc) cores; GPUs: $gpu_names"
export PATH="$PATH:/usr/local/cuda/bin"
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2

# ---- what the build needs ---------------------------------------------------------------------------------
# OpenBLAS, zlib and CMocka: the machine's own, else the carried Debian packages unpacked under /tmp.
cmake_args=()
extra_libs=()
use_deb() { [ "${DPTRAIN_GPU_DEPS_FORCE:-0}" = 1 ] || ! "$@"; }
have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/include/x86_64-linux-gnu/$1" ] || [ -e "/usr/local/include/$1" ]; }
have_openblas() { [ -e /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || have_header openblas/cblas.h ||
  { have_header cblas.h && ldconfig -p | grep -q libopenblas; }; }
have_zlib() { have_header zlib.h; }
have_cmocka() { have_header cmocka.h && ldconfig -p | grep -q libcmocka; }
if ls "$deps"/*.deb >/dev/null 2>&1 && { use_deb have_openblas || use_deb have_zlib || use_deb have_cmocka; }; then
  root=/tmp/dptrain-gpu-deps
  rm -rf "$root" && mkdir -p "$root"
  for f in "$deps"/*.deb; do dpkg -x "$f" "$root" || echo "could not unpack $f"; done
  usr=$root/usr
  arch=$usr/lib/x86_64-linux-gnu
  if use_deb have_openblas; then
    cmake_args+=(-DOPENBLAS_INCLUDE_DIR="$usr/include/x86_64-linux-gnu/openblas-pthread"
      -DOPENBLAS_LIBRARY="$arch/openblas-pthread/libopenblas.so")
    extra_libs+=("$arch/openblas-pthread" "$arch")
    echo "OpenBLAS: from $deps"
  fi
  if use_deb have_zlib; then
    # the machine's own libz.so.1 when it has one (only the headers are missing), else the package's
    zlib=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$zlib" ] || zlib=$(find "$root" -name 'libz.so.1*' | head -n 1)
    cmake_args+=(-DZLIB_INCLUDE_DIR="$usr/include" -DZLIB_LIBRARY="$zlib")
    extra_libs+=("$(dirname "$zlib")")
    echo "zlib: headers from $deps, library $zlib"
  fi
  if use_deb have_cmocka; then
    cmake_args+=(-DCMOCKA_INCLUDE_DIR="$usr/include" -DCMOCKA_LIBRARY="$(ls "$arch"/libcmocka.so.0* | head -n 1)")
    extra_libs+=("$arch")
    echo "CMocka: from $deps"
  fi
fi
# cuDNN and NCCL: with the toolkit, else from Python's nvidia-* wheels (as PyTorch images ship them).
if [ ! -e /usr/local/cuda/include/cudnn.h ] || [ ! -e /usr/local/cuda/include/nccl.h ]; then
  for pkg in cudnn nccl; do
    d=$(python3 -c "import nvidia.$pkg as m, os; print(os.path.dirname(m.__file__ or list(m.__path__)[0]))" 2>/dev/null)
    if [ -n "$d" ] && [ -d "$d/include" ]; then
      [ $pkg = cudnn ] && cmake_args+=(-DDPTRAIN_CUDNN_INCLUDE_DIR="$d/include"
        -DDPTRAIN_CUDNN_LIBRARY="$(ls "$d"/lib/libcudnn.so* | head -n 1)")
      [ $pkg = nccl ] && cmake_args+=(-DDPTRAIN_NCCL_INCLUDE_DIR="$d/include"
        -DDPTRAIN_NCCL_LIBRARY="$(ls "$d"/lib/libnccl.so* | head -n 1)")
      extra_libs+=("$d/lib")
      echo "$pkg: from the Python package in $d"
    fi
  done
fi
# Fashion-MNIST for the training runs: the machine's own, else the carried package's (under /tmp).
data_dir=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -e "$data_dir/train-images-idx3-ubyte.gz" ] && ls "$deps"/dataset-fashion-mnist_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/dptrain-gpu-data && dpkg -x "$(ls "$deps"/dataset-fashion-mnist_*.deb | head -n 1)" /tmp/dptrain-gpu-data &&
    data_dir=/tmp/dptrain-gpu-data/usr/share/datasets/fashion-mnist && echo "Fashion-MNIST: from $deps"
fi
if [ ${#extra_libs[@]} -gt 0 ]; then
  LD_LIBRARY_PATH="$(IFS=:; echo "${extra_libs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi

# ---- build ------------------------------------------------------------------------------------------------
section "configure"
if ! timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDPTRAIN_CUDA=ON -DDPTRAIN_BUILD_TESTS=ON \
  -DDPTRAIN_BUILD_SAMPLES=ON -DDPTRAIN_BUILD_BENCH=ON -DDPTRAIN_BUILD_BINDINGS=OFF "${cmake_args[@]}" \
  >"$out/configure.log" 2>&1; then
  tail -n 30 "$out/configure.log"
  row "configure" "FAILED" "see $out/configure.log"
  print_table
  exit 1
fi
grep -E "CUDA module|OpenBLAS|CMake Warning" -A1 "$out/configure.log" | grep -v '^--$'
if grep -q "CUDA module: CUDA" "$out/configure.log"; then
  row "configure" "ok" "$(grep -o 'CUDA module: CUDA [0-9.]*, architectures [^,]*' "$out/configure.log")"
else
  row "configure" "FAILED" "the CUDA module is not configured (see $out/configure.log)"
  status=1
fi

section "build (-j$jobs)"
targets=(dptrain dptrain-cli test_cuda_backend test_cuda_module test_cuda_layers test_cuda_norms test_cuda_transformer
  test_cuda_precision test_cuda_training test_cuda_collectives test_gpu_training dptrain_gpu_bench)
grep -q "CUDA module: CUDA" "$out/configure.log" && targets+=(dptrain_cuda)
# the NCCL-across-processes tests (ctest -L gpu runs them) exist only where MPI was found
grep -q "MPI module: on" "$out/configure.log" && grep -q "CUDA module: CUDA" "$out/configure.log" &&
  targets+=(dptrain_mpi test_mpi_nccl)
build_start=$(date +%s)
if timeout 360 cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$out/build.log" 2>&1; then
  row "build" "ok" "$(($(date +%s) - build_start)) s: ${targets[*]}"
else
  tail -n 40 "$out/build.log"
  row "build" "FAILED" "see $out/build.log"
  print_table
  exit 1
fi
if [ -e "$build/lib/libdptrain_cuda.so" ] && ldd "$build/lib/libdptrain_cuda.so" | grep -q "not found"; then
  ldd "$build/lib/libdptrain_cuda.so" | grep "not found"
fi

# ---- dptrain devices ------------------------------------------------------------------------------------
section "dptrain devices"
DPTRAIN_CPU_DEVICES=${DPTRAIN_CPU_DEVICES:-2} timeout 120 "$build/bin/dptrain" devices | tee "$out/devices.txt"
DPTRAIN_CPU_DEVICES=${DPTRAIN_CPU_DEVICES:-2} timeout 120 "$build/bin/dptrain" devices --json >"$out/devices.json"
cuda_count=$(python3 -c "import json; print(json.load(open('$out/devices.json'))['cuda']['devices'])" 2>/dev/null ||
  echo "?")
reason=$(python3 -c "import json; print(json.load(open('$out/devices.json'))['cuda']['reason'])" 2>/dev/null)
if [ "$cuda_count" = "?" ]; then
  row "dptrain devices" "FAILED" "no JSON (see $out/devices.json)"
  status=1
elif [ "$cuda_count" -gt 0 ]; then
  row "dptrain devices" "ok" "$cuda_count CUDA device(s): $(grep -c . "$out/gpus.txt" 2>/dev/null || echo '?') seen by nvidia-smi"
else
  row "dptrain devices" "no GPU" "$reason"
fi

# ---- the GPU-labelled tests -------------------------------------------------------------------------------
section "tests (ctest -L gpu, cli_devices_cuda)"
# -V: the log keeps every case's lines (tolerances, worst errors seen), for the case rows below.
(cd "$build" && timeout 300 ctest -L gpu -V --timeout 240 >"$out/ctest-gpu.log" 2>&1)
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|tests failed" "$out/ctest-gpu.log"
(cd "$build" && timeout 120 ctest -R '^cli_devices_cuda$' -V >"$out/ctest-cli.log" 2>&1) || true
grep -E "^[0-9]+: (ok|FAIL)" "$out/ctest-cli.log" | sed 's/^[0-9]*: //'
for log in "$out/ctest-gpu.log" "$out/ctest-cli.log"; do
  while read -r name result; do
    case $result in
      Passed) row "$name" "passed" "" ;;
      Skipped) row "$name" "SKIPPED" "needs a GPU (cmocka skip)" ;;
      *) row "$name" "FAILED" "see $log"; status=1 ;;
    esac
  done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([A-Za-z0-9_]+) \.+[* ]*([A-Za-z]+).*/\1 \2/p' "$log")
done
grep -q "tests passed" "$out/ctest-gpu.log" || { row "ctest -L gpu" "FAILED" "did not finish"; status=1; }
# One row per GPU case of the conformance suite and of the C API tests, as CMocka reported it (it lists a
# failed or skipped case twice: the first report counts).
while read -r name result; do
  case $result in
    OK) row "  $name" "passed" "" ;;
    SKIPPED) row "  $name" "SKIPPED" "no GPU" ;;
    *) row "  $name" "FAILED" "see $out/ctest-gpu.log"; status=1 ;;
  esac
done < <(sed -nE 's/^[0-9]+: \[ *(OK|FAILED|SKIPPED) *\] (test_gpu_[A-Za-z0-9_]+)\r?$/\2 \1/p' "$out/ctest-gpu.log" |
  awk '!seen[$1]++')

# ---- benchmarks --------------------------------------------------------------------------------------------
section "benchmarks (dptrain_gpu_bench)"
if [ "$cuda_count" != "0" ] && [ "$cuda_count" != "?" ]; then
  # The bench links the core: it finds the module through DPTRAIN_BACKEND_PATH.
  # The all-reduce table on the float32 wire and on the 16-bit bfloat16 one (--wire; busbw counts the float32
  # buffer's bytes on both, so the rows compare the same gradient's reduction).
  if DPTRAIN_BACKEND_PATH="$build/lib" timeout 240 "$build/bin/dptrain_gpu_bench" --models lenet,mlp --batch 256 \
    --steps 50 --max-mib 256 --precision fp32,bf16 --wire fp32,bf16 >"$out/gpu-bench.txt" 2>&1; then
    cat "$out/gpu-bench.txt"
    while read -r model devices rate rest; do
      row "$model images/s, $devices" "$rate" "batch 256, $(echo "$rest" | awk '{print $1 " of the 1-replica rate"}')"
    done < <(awk '$1 ~ /^(lenet|mlp)(\/bf16)?$/ && $3 ~ /^[0-9]+$/' "$out/gpu-bench.txt")
    while read -r line; do
      row "all-reduce busbw, $(echo "$line" | sed -E 's/ +(fp32|bf16|fp16) +[0-9]+ MiB.*/, \1 wire/')" \
        "$(echo "$line" | awk '{print $NF}') GB/s" "$(echo "$line" | grep -oE '[0-9]+ MiB')"
    done < <(grep -E '^(virtual|NCCL).* (fp32|bf16|fp16) +(64|256) MiB' "$out/gpu-bench.txt")
  else
    tail -n 20 "$out/gpu-bench.txt"
    row "dptrain_gpu_bench" "FAILED" "see $out/gpu-bench.txt"
    status=1
  fi
  # ResNet-18 (the built-in resnet18, sync batch norm): one GPU, two replicas on it, two GPUs when there are
  # two, unsharded and with a sharded optimizer in fp32 and bf16, then with sharded gradients and sharded
  # parameters in fp32, the latter also read ahead on the copy stream (issue 16: step time and bytes per GPU
  # per mode; sharded gradients and parameters and the NCCL statistics of batch norm never ran on a GPU
  # before). A layout the trainer refuses shows as a "refused" row with its message.
  for run in "fp32,bf16 none,optimizer 240 resnet18" "fp32 gradients,parameters,parameters-ahead 210 resnet18-zero23"; do
    read -r precisions shards limit name <<<"$run"
    if DPTRAIN_BACKEND_PATH="$build/lib" timeout "$limit" "$build/bin/dptrain_gpu_bench" --models resnet18 \
      --batch 256 --steps 20 --max-mib 0 --precision "$precisions" --shard "$shards" >"$out/gpu-bench-$name.txt" 2>&1; then
      cat "$out/gpu-bench-$name.txt"
      while read -r model devices rate rest; do
        if [ "$rate" = "refused:" ]; then
          row "$model images/s, $devices" "refused" "$rest"
        else
          row "$model images/s, $devices" "$rate" "batch 256, $(echo "$rest" | awk '{print $1 " of the 1-replica rate, " $NF " MiB per GPU"}')"
        fi
      done < <(awk '$1 ~ /^resnet18(\/bf16)?(\/optimizer|\/gradients|\/parameters|\/parameters-ahead)?$/ && ($3 ~ /^[0-9]+$/ || $3 == "refused:")' "$out/gpu-bench-$name.txt")
    else
      tail -n 20 "$out/gpu-bench-$name.txt"
      row "dptrain_gpu_bench $name" "FAILED" "see $out/gpu-bench-$name.txt"
      status=1
    fi
  done
  # ResNet-18 as a pipeline of 2 stages, a GPU each (issue 16: peer-copy hand-offs; never run on a GPU
  # before): on one GPU (cuda:0x2) and on two. A refused layout shows as a "refused" row, as above.
  if DPTRAIN_BACKEND_PATH="$build/lib" timeout 120 "$build/bin/dptrain_gpu_bench" --models resnet18 --batch 256 \
    --steps 20 --max-mib 0 --pipeline 2 >"$out/gpu-bench-resnet18-pipeline.txt" 2>&1; then
    cat "$out/gpu-bench-resnet18-pipeline.txt"
    while read -r model devices rate rest; do
      if [ "$rate" = "refused:" ]; then
        row "$model images/s, $devices" "refused" "$rest"
      else
        row "$model images/s, $devices" "$rate" "batch 256, 2 stages, $(echo "$rest" | awk '{print $NF " MiB on the fuller GPU"}')"
      fi
    done < <(awk '$1 == "resnet18/pipe2" && ($3 ~ /^[0-9]+$/ || $3 == "refused:")' "$out/gpu-bench-resnet18-pipeline.txt")
  else
    tail -n 20 "$out/gpu-bench-resnet18-pipeline.txt"
    row "dptrain_gpu_bench resnet18 --pipeline 2" "FAILED" "see $out/gpu-bench-resnet18-pipeline.txt"
    status=1
  fi
  # The same with DPT_GPU_DETERMINISTIC (cuDNN's heuristics, GEMM-family convolution algorithms): what
  # reproducible bits cost against the timed choice above.
  if DPTRAIN_BACKEND_PATH="$build/lib" timeout 180 "$build/bin/dptrain_gpu_bench" --models resnet18 --batch 256 \
    --steps 20 --max-mib 0 --precision fp32,bf16 --deterministic >"$out/gpu-bench-resnet18-det.txt" 2>&1; then
    cat "$out/gpu-bench-resnet18-det.txt"
    while read -r model devices rate rest; do
      row "$model images/s, $devices" "$rate" "batch 256, deterministic algorithms"
    done < <(awk '$1 ~ /^resnet18(\/bf16)?\/det$/ && $3 ~ /^[0-9]+$/' "$out/gpu-bench-resnet18-det.txt")
  else
    tail -n 20 "$out/gpu-bench-resnet18-det.txt"
    row "dptrain_gpu_bench resnet18 --deterministic" "FAILED" "see $out/gpu-bench-resnet18-det.txt"
    status=1
  fi
  # gpt-mini (batch 16 x 128 tokens, SGD; synthetic tokens): tokens/s on cuda:0 and cuda:0x2, and the model
  # FLOPs utilisation as llm.c reports it (6N + 6TC FLOPs per token) against the GPU's FP32 peak (H200: 67
  # TFLOP/s without tensor cores; float32 runs FP32 SGEMMs; the bf16 rows run tensor cores, whose dense
  # bf16 peak is 989 TFLOP/s: their MFU against 67 only compares them with float32's).
  if DPTRAIN_BACKEND_PATH="$build/lib" timeout 240 "$build/bin/dptrain_gpu_bench" --models gpt-mini --batch 16 \
    --steps 20 --max-mib 0 --precision fp32,bf16 >"$out/gpu-bench-gpt-mini.txt" 2>&1; then
    cat "$out/gpu-bench-gpt-mini.txt"
    while read -r model devices rate rest; do
      if [ "$rate" = "refused:" ]; then
        row "$model tokens/s, $devices" "refused" "$rest"
      else
        tokens=$(echo "$rest" | sed -nE 's/.*tokens\/s ([0-9]+), ([0-9.]+) TFLOP\/s.*/\1/p')
        tflops=$(echo "$rest" | sed -nE 's/.*tokens\/s ([0-9]+), ([0-9.]+) TFLOP\/s.*/\2/p')
        row "$model tokens/s, $devices" "$tokens" "batch 16 x 128; $tflops TFLOP/s = $(awk -v t="$tflops" 'BEGIN {printf "%.1f", 100 * t / 67}')% MFU of 67 FP32 TFLOP/s"
      fi
    done < <(awk '$1 ~ /^gpt-mini(\/bf16)?$/ && ($3 ~ /^[0-9]+$/ || $3 == "refused:")' "$out/gpu-bench-gpt-mini.txt")
  else
    tail -n 20 "$out/gpu-bench-gpt-mini.txt"
    row "dptrain_gpu_bench gpt-mini" "FAILED" "see $out/gpu-bench-gpt-mini.txt"
    status=1
  fi
  # The peer, side by side: PyTorch on the same GPU, the same models, batches and optimizer (its image's
  # python3 holds PyTorch on the device machines; skipped where it has no CUDA).
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    if timeout 180 python3 tests/bench/pytorch_gpu_peer.py >"$out/pytorch-peer.txt" 2>&1; then
      cat "$out/pytorch-peer.txt"
      while read -r _ model device rate _ tokens _; do
        row "PyTorch $model images/s, $device" "$rate" \
          "${tokens:+tokens/s $tokens; }tests/bench/pytorch_gpu_peer.py, the peer of dptrain's row"
      done < <(grep -E '^pytorch [a-z].* images/s' "$out/pytorch-peer.txt")
    else
      tail -n 20 "$out/pytorch-peer.txt"
      row "pytorch_gpu_peer.py" "FAILED" "see $out/pytorch-peer.txt"
    fi
  else
    row "PyTorch peer" "SKIPPED" "no python3 with CUDA PyTorch here"
  fi
  # Where a step's time goes: three recorded steps of ResNet-18 and gpt-mini on one replica, fp32 and bf16,
  # each op synchronised (its device time), summed per op kind by scripts/trace-summary.py.
  mkdir -p "$out/traces"
  if DPTRAIN_BACKEND_PATH="$build/lib" timeout 180 "$build/bin/dptrain_gpu_bench" --models resnet18 --batch 256 \
    --steps 1 --max-mib 0 --precision fp32,bf16 --trace "$out/traces" >"$out/gpu-traces.txt" 2>&1 &&
    DPTRAIN_BACKEND_PATH="$build/lib" timeout 120 "$build/bin/dptrain_gpu_bench" --models gpt-mini --batch 16 \
      --steps 1 --max-mib 0 --precision fp32,bf16 --trace "$out/traces" >>"$out/gpu-traces.txt" 2>&1; then
    for f in "$out"/traces/*.json; do
      python3 scripts/trace-summary.py "$f" | tee -a "$out/trace-summary.txt"
      line=$(python3 scripts/trace-summary.py "$f" --brief | head -n 1)
      row "$(basename "$f" .json) timeline, cuda:0" "$(echo "$line" | sed -E 's/.*busy ([0-9.]+) of.*/\1 ms/')" \
        "$(echo "$line" | sed -E 's/^.* compute: //')"
    done
  else
    tail -n 20 "$out/gpu-traces.txt"
    row "dptrain_gpu_bench --trace" "FAILED" "see $out/gpu-traces.txt"
    status=1
  fi
  # Accuracy on real data (issue 13: the textbook's ResNet-18 recipe on GPUs, 10 epochs; LeNet's for scale):
  # d2l's 2-GPU recipe on two replicas of the GPU (batch 512, lr 0.2), the test accuracy after each epoch;
  # ResNet-18's also on batch norm's statistics recomputed over 20,480 training samples (--recompute-bn).
  if [ -e "$data_dir/train-images-idx3-ubyte.gz" ]; then
    for run in "lenet|--model lenet --devices cuda:0x2" \
      "resnet18|--model resnet18 --devices cuda:0x2 --batch 512 --lr 0.2 --recompute-bn 20480"; do
      name=${run%%|*}
      # shellcheck disable=SC2086
      if DPTRAIN_BACKEND_PATH="$build/lib" timeout 300 "$build/bin/dptrain" train ${run#*|} --data "$data_dir" \
        --json >"$out/train-$name.json" 2>"$out/train-$name.log"; then
        summary=$(python3 -c "import json; d = json.load(open('$out/train-$name.json')); print('%.4f|%s epochs in %.0f s, %.0f images/s; per epoch: %s%s' % (d['test_accuracy'], d['epochs_completed'], d['seconds'], d['images_per_second'], ' '.join('%.3f' % e['test_accuracy'] for e in d['epochs_detail']), '; recomputed batch-norm statistics: %.4f' % d['recomputed_test_accuracy'] if d.get('recompute_bn_samples') else ''))")
        echo "$name: $summary"
        row "$name 10 epochs, test accuracy" "${summary%%|*}" "${summary#*|}"
      else
        tail -n 20 "$out/train-$name.log"
        row "$name 10 epochs" "FAILED" "see $out/train-$name.log"
        status=1
      fi
    done
  else
    row "training on Fashion-MNIST" "SKIPPED" "no data: tests/gpu/fetch-deps.sh carries dataset-fashion-mnist"
  fi
else
  echo "no CUDA device: benchmarks not run"
  row "benchmarks" "SKIPPED" "no CUDA device"
fi

if [ "$cuda_count" = "0" ]; then
  row "GPU coverage" "NONE" "no CUDA device: every GPU case above was skipped, nothing ran on a GPU"
fi
print_table
exit "$status"
