#!/usr/bin/env bash
# libdptrain.so links no CUDA library, neither directly (readelf NEEDED) nor through a dependency (ldd):
# it must load on machines without CUDA. With a second argument, the CUDA module libdptrain_cuda.so:
# it exports its entry function only and does link the CUDA libraries (so it is a real module).
# Usage: check_no_cuda.sh LIBDPTRAIN [LIBDPTRAIN_CUDA]
set -euo pipefail
lib=$1
module=${2:-}
cuda='lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc|nvidia)[^ ]*'
needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $5}' | tr -d '[]')
if echo "$needed" | grep -Eq "^$cuda"; then
  echo "$lib needs CUDA directly:"; echo "$needed" | grep -E "^$cuda"; exit 1
fi
if ldd "$lib" | grep -Eq "$cuda"; then
  echo "$lib pulls in CUDA through a dependency:"; ldd "$lib" | grep -E "$cuda"; exit 1
fi
echo "$(basename "$lib"): no CUDA library among: $(echo "$needed" | tr '\n' ' ')"
if [ -n "$module" ]; then
  exports=$(nm -D --defined-only "$module" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//')
  if [ "$exports" != "dptrain_cuda_backend_v2" ]; then
    echo "$module exports more than its entry function:"; echo "$exports"; exit 1
  fi
  for l in libcudart libcublas libcudnn libnccl; do
    readelf -d "$module" | grep -q "NEEDED.*\[$l" || { echo "$module does not link $l"; exit 1; }
  done
  echo "$(basename "$module"): exports dptrain_cuda_backend_v2 only; links cudart, cuBLAS, cuDNN, NCCL"
fi
