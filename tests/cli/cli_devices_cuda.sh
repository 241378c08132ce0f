#!/usr/bin/env bash
# `dptrain devices` and CUDA: the CUDA part of the table and of the JSON object. Without CUDA devices it
# prints one line "cuda: none: <reason>" (this machine: no driver; DPTRAIN_BACKEND_PATH naming an empty
# directory: module not found); with them, one row per GPU and the peer-access matrix. --kind cpu never
# mentions CUDA.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

run_cli json devices --json
[ "$RC" -eq 0 ] || fail "devices --json exited with $RC: $(cat "$WORK/json.err")"
json_check "$WORK/json.out" "set(d['cuda']) >= {'loaded', 'devices', 'reason', 'module', 'versions'}" \
  "JSON has the CUDA backend"
json_check "$WORK/json.out" "len(d['peer_access']) == d['cuda']['devices']" "peer matrix: one row per GPU"
json_check "$WORK/json.out" "len(d['devices']) == 2 + d['cuda']['devices']" "CPU devices, then the GPUs"
gpus=$(json_get "$WORK/json.out" "d['cuda']['devices']")
reason=$(json_get "$WORK/json.out" "d['cuda']['reason']")

run_cli table devices
[ "$RC" -eq 0 ] || fail "devices exited with $RC: $(cat "$WORK/table.err")"
cat "$WORK/table.out"
if [ "$gpus" -eq 0 ]; then
  if grep -qxF "cuda: none: $reason" "$WORK/table.out" && [ -n "$reason" ]; then
    pass "no GPU: the reason is printed ($reason)"
  else
    fail "no GPU, but no line 'cuda: none: $reason'"
  fi
  loaded=$(json_get "$WORK/json.out" "d['cuda']['loaded'] and d['cuda']['driver_version'] == 0")
  if [ "$loaded" = "True" ]; then
    if echo "$reason" | grep -q "driver"; then pass "no driver: the reason names the driver"; else fail "reason '$reason'"; fi
    if grep -q '^cuda: module .*libdptrain_cuda.so (CUDA runtime ' "$WORK/table.out"; then
      pass "module and versions printed"
    else
      fail "no 'cuda: module' line"
    fi
  fi
else
  rows=$(grep -c '^[0-9].* cuda:[0-9]' "$WORK/table.out" || true)
  # each GPU appears twice: in the device list and in the CUDA facts table
  if [ "$rows" -eq $((2 * gpus)) ]; then pass "$gpus GPU(s) listed"; else fail "expected $gpus GPU rows"; fi
  if grep -q '^peer access' "$WORK/table.out"; then pass "peer matrix printed"; else fail "no peer matrix"; fi
fi

mkdir "$WORK/empty"
DPTRAIN_BACKEND_PATH="$WORK/empty" run_cli missing devices
if [ "$RC" -eq 0 ] && grep -qF "cuda: none: libdptrain_cuda.so not found in $WORK/empty" "$WORK/missing.out"; then
  pass "DPTRAIN_BACKEND_PATH without the module: not found"
else
  fail "missing module (status $RC): $(cat "$WORK/missing.out" "$WORK/missing.err")"
fi

run_cli cpu devices --kind cpu --json
json_check "$WORK/cpu.out" "'cuda' not in d and len(d['devices']) == 2" "--kind cpu: no CUDA part"
run_cli cpuonly devices --kind=cpu
if grep -q cuda "$WORK/cpuonly.out"; then fail "--kind=cpu mentions CUDA"; else pass "--kind=cpu: no CUDA line"; fi

run_cli cuda devices --kind cuda --json
json_check "$WORK/cuda.out" "all(x['kind'] == 'cuda' for x in d['devices'])" "--kind cuda: GPUs only"

run_cli bad devices --kind tpu
if [ "$RC" -eq 2 ] && grep -q "^dptrain: error: devices: --kind expects cpu, cuda or all" "$WORK/bad.err"; then
  pass "--kind tpu is a usage error"
else
  fail "--kind tpu (status $RC): $(cat "$WORK/bad.err")"
fi

finish
