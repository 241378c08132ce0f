#!/usr/bin/env bash
# `dptrain devices --kind cpu`: the table and the JSON list of CPU devices follow DPTRAIN_CPU_DEVICES (the
# same on machines with and without GPUs).
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

run_cli json devices --kind cpu --json
[ "$RC" -eq 0 ] || fail "devices --json exited with $RC: $(cat "$WORK/json.err")"
json_check "$WORK/json.out" "len(d['devices']) == 2" "two devices with DPTRAIN_CPU_DEVICES=2"
json_check "$WORK/json.out" "[x['index'] for x in d['devices']] == [0, 1]" "indices 0 and 1"
json_check "$WORK/json.out" "[x['name'] for x in d['devices']] == ['cpu:0', 'cpu:1']" "names cpu:0 and cpu:1"
json_check "$WORK/json.out" "all(x['kind'] == 'cpu' and x['memory'] > 0 for x in d['devices'])" \
  "cpu devices with memory"
if [ "$(wc -l <"$WORK/json.out")" -eq 1 ]; then pass "one line of JSON"; else fail "JSON is not one line"; fi

DPTRAIN_CPU_DEVICES=3 run_cli json3 devices --kind cpu --json
json_check "$WORK/json3.out" "len(d['devices']) == 3" "three devices with DPTRAIN_CPU_DEVICES=3"

run_cli table devices --kind cpu
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$WORK/table.out")" -eq 3 ] && grep -q '^1 .*cpu:1 .*cpu' "$WORK/table.out"; then
  pass "table: a header and two rows"
else
  fail "table (status $RC): $(cat "$WORK/table.out" "$WORK/table.err")"
fi

# Without --kind, CUDA devices are asked for too: the CPU part of the table is unchanged (the CUDA part is
# checked by cli_devices_cuda).
run_cli all devices
if [ "$RC" -eq 0 ] && [ "$(head -n 3 "$WORK/all.out")" = "$(cat "$WORK/table.out")" ]; then
  pass "default table starts with the CPU table"
else
  fail "default table (status $RC): $(cat "$WORK/all.out" "$WORK/all.err")"
fi

finish
