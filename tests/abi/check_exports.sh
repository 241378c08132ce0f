#!/usr/bin/env bash
# The shared library exports dpt_* only, carries the major version in its SONAME, and links neither CUDA nor MPI.
set -euo pipefail
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^dpt_' || true)
if [ -n "$bad" ]; then echo "exported symbols outside dpt_*:"; echo "$bad"; exit 1; fi
count=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | grep -c '^dpt_')
[ "$count" -ge 40 ] || { echo "only $count dpt_ functions exported"; exit 1; }
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ "$soname" = "libdptrain.so.0" ] || { echo "unexpected SONAME '$soname'"; exit 1; }
if ldd "$lib" | grep -E 'libcuda|libcudart|libcublas|libcudnn|libnccl|libmpi'; then echo "links CUDA or MPI"; exit 1; fi
echo "exports: $count dpt_* functions, SONAME $soname"
