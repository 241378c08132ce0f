#!/usr/bin/env bash
# dptrain.exe (the mingw-w64 build) under Wine, against the Linux build's dptrain:
#  0. dptrain.dll imports only Windows' own DLLs and exports only dpt_* functions;
#  1. `devices`: two CPU devices, and no CUDA module with the reason the Windows build gives;
#  2. the MLP (ReLU, softmax cross-entropy) trains to the same param_checksum as on Linux, bit for bit, with
#     the GEMM kernel pinned alike on both (DPTRAIN_GEMM_KERNEL=portable: Linux would otherwise use OpenBLAS
#     on a CPU without AVX-512, which the Windows build does not have);
#  3. LeNet (sigmoid) on 2 devices and on 1: Linux's checksums, bit for bit, and the same from run to run;
#  4. a checkpoint saved after every epoch (the second save replaces the first: MoveFileExW on Windows)
#     resumes to the same bits as the run that was not interrupted.
# Prints the images/s of both builds. Usage: check_cli.sh DPTRAIN_EXE LINUX_DPTRAIN DPTRAIN_DLL
set -euo pipefail
exe=$(realpath "$1") linux=$(realpath "$2") dll=$(realpath "$3")
wine=$(command -v wine || command -v wine64)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export DPTRAIN_GEMM_KERNEL=portable

windows() { "$wine" "$exe" "$@" 2>/dev/null | tr -d '\r'; }
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
fail() { echo "FAIL: $*"; exit 1; }

# 0. dptrain.dll needs only Windows' own DLLs (the GCC, C++ and threads runtimes and zlib are linked in), and
#    exports the C API and nothing else.
objdump=x86_64-w64-mingw32-objdump
imports=$("$objdump" -p "$dll" | sed -n 's/^\s*DLL Name: //p' | tr -d '\r' | sort | tr '\n' ' ')
[ "$imports" = "KERNEL32.dll msvcrt.dll " ] || fail "dptrain.dll imports $imports"
export_names=$("$objdump" -p "$dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -E '^\s*\[ *[0-9]+\] ')
exports=$(echo "$export_names" | grep -c . || true)
others=$(echo "$export_names" | grep -vc '\] dpt_' || true)
[ "$exports" -gt 80 ] && [ "$others" = 0 ] || fail "dptrain.dll exports $exports names, $others not dpt_*"
echo "dptrain.dll: imports $imports; exports $exports dpt_* functions"

# 1. devices
out=$(DPTRAIN_CPU_DEVICES=2 windows devices --json)
names=$(echo "$out" | python3 -c "import json, sys; print(' '.join(d['name'] for d in json.load(sys.stdin)['devices']))")
[ "$names" = "cpu:0 cpu:1" ] || fail "devices listed '$names': $out"
reason=$(echo "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['cuda']['reason'])")
[[ "$reason" == *"has no CUDA module"* ]] || fail "the CUDA reason does not say why: $reason"
echo "devices: $names; cuda: $reason"

# 2. the MLP, bit for bit
args=(train --model mlp --devices cpu:2 --epochs 1 --train-limit 2000 --test-limit 500 --seed 3 --json)
w=$(windows "${args[@]}") || fail "dptrain.exe ${args[*]}"
l=$("$linux" "${args[@]}" 2>/dev/null) || fail "dptrain ${args[*]}"
wsum=$(echo "$w" | field param_checksum) lsum=$(echo "$l" | field param_checksum)
echo "mlp: windows $wsum ($(echo "$w" | field images_per_second) images/s), linux $lsum ($(echo "$l" | field images_per_second) images/s)"
[ "$wsum" = "$lsum" ] || fail "the MLP's checksum differs from Linux's"

# 3. LeNet: Linux's bits on 2 devices and on 1, and the same bits from run to run
args=(train --model lenet --epochs 1 --train-limit 2000 --test-limit 500 --seed 3 --json)
w2=$(windows "${args[@]}" --devices cpu:2) || fail "dptrain.exe ${args[*]} --devices cpu:2"
w2b=$(windows "${args[@]}" --devices cpu:2) || fail "dptrain.exe (again)"
w1=$(windows "${args[@]}" --devices cpu:1) || fail "dptrain.exe ${args[*]} --devices cpu:1"
l2=$("$linux" "${args[@]}" --devices cpu:2 2>/dev/null) || fail "dptrain ${args[*]} --devices cpu:2"
l1=$("$linux" "${args[@]}" --devices cpu:1 2>/dev/null) || fail "dptrain ${args[*]} --devices cpu:1"
s2=$(echo "$w2" | field param_checksum) s2b=$(echo "$w2b" | field param_checksum)
s1=$(echo "$w1" | field param_checksum)
ls2=$(echo "$l2" | field param_checksum) ls1=$(echo "$l1" | field param_checksum)
echo "lenet: windows cpu:2 $s2 (again $s2b), cpu:1 $s1; linux cpu:2 $ls2, cpu:1 $ls1"
echo "lenet images/s (cpu:2): windows $(echo "$w2" | field images_per_second), linux $(echo "$l2" | field images_per_second)"
[ "$s2" = "$s2b" ] || fail "two runs on Windows differ"
[ "$s2" = "$ls2" ] || fail "LeNet on 2 devices: Windows's checksum differs from Linux's"
[ "$s1" = "$ls1" ] || fail "LeNet on 1 device: Windows's checksum differs from Linux's"

# 4. checkpoints: replaced after every epoch, resumed exactly
args=(train --model mlp --devices cpu:2 --train-limit 1000 --test-limit 100 --seed 5 --json)
whole=$(windows "${args[@]}" --epochs 2 --checkpoint whole.ckpt | field param_checksum)
windows "${args[@]}" --epochs 1 --checkpoint part.ckpt >/dev/null
[ -s part.ckpt ] || fail "no checkpoint written"
resumed=$(windows "${args[@]}" --epochs 2 --resume part.ckpt --checkpoint part.ckpt | field param_checksum)
echo "checkpoint: 2 epochs $whole, 1 + resumed 1 $resumed"
[ "$whole" = "$resumed" ] || fail "the resumed run differs from the whole one"
leftovers=$(ls | grep -c '\.tmp-' || true)
[ "$leftovers" = 0 ] || fail "temporary files left behind: $(ls)"
echo "PASS"
