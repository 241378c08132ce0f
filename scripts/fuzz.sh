#!/usr/bin/env bash
# Fuzzes each target with libFuzzer under ASan+UBSan (clang-14, libclang-rt-14-dev) for SECONDS each
# (default 60), starting from the committed seed corpora; new inputs go to build-fuzz/corpus/<target>.
# Prints executions and findings per target. Crashes are saved as build-fuzz/crash-* files.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: checkpoint idx api safetensors
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(checkpoint idx api safetensors)

CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPTRAIN_FUZZ=ON \
  -DDPTRAIN_SANITIZE=address,undefined -DDPTRAIN_BUILD_BINDINGS=OFF -DDPTRAIN_BUILD_SAMPLES=OFF \
  -DDPTRAIN_BUILD_BENCH=OFF -DDPTRAIN_CUDA=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null

for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  cp -n "tests/fuzz/corpus/$t/"* "build-fuzz/corpus/$t/" 2>/dev/null || true
  log="build-fuzz/fuzz_$t.log"
  set +e
  (cd build-fuzz && ASAN_OPTIONS=detect_leaks=1 "./bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 "corpus/$t" >"fuzz_$t.log" 2>&1)
  rc=$?
  set -e
  execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  units=$(ls "build-fuzz/corpus/$t" | wc -l)
  if [ "$rc" -eq 0 ]; then finding="no findings"; else finding="FINDING (exit $rc): see $log"; fi
  echo "fuzz_$t: ${seconds}s, ${execs:-?} executions, corpus ${units} inputs, ${finding}"
done
