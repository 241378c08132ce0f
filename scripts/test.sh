#!/usr/bin/env bash
# The whole test command: installs what is needed, builds, and runs every test suite through CTest: the
# Release build (C API, C++ core, CLI, ABI, install, bindings), then the C API and core tests under
# ASan+UBSan, then the threaded tests under TSan, then the Windows build (mingw-w64 cross build,
# scripts/build-windows.sh) under Wine. Ends with one line "N passed, N failed" over all runs.
# DPTRAIN_SKIP_SANITIZERS=1 leaves the sanitizer runs out, DPTRAIN_SKIP_WINDOWS=1 the Windows one. Tests CTest
# reports as skipped (GPU cases on a machine without a GPU) count as neither passed nor failed; their number
# and the seconds of each phase are printed before the last line. The Linux suites run two tests at a
# time on two cores (ctest -j; a test that keeps every core busy says so with PROCESSORS and runs alone);
# compilations go through ccache (cmake/CompilerCache.cmake), so a machine that built dptrain before
# rebuilds in minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
# Mono, Java and Go want a home directory for their caches; CI environments may have none.
if [ -z "${HOME:-}" ] || [ ! -w "${HOME:-/nonexistent}" ]; then
  HOME=$(mktemp -d)
  export HOME
fi
# phase NAME: ends the phase before (its seconds go to the summary) and starts NAME.
phases=""
phase_name=""
phase_start=$SECONDS
phase() {
  [ -z "$phase_name" ] || phases="$phases $phase_name $((SECONDS - phase_start))s,"
  phase_name=$1
  phase_start=$SECONDS
}
jobs=$(nproc)

phase install
scripts/install-deps.sh
phase build
scripts/build.sh

passed=0
failed=0
skipped=0
status=0
# run_ctest BUILD_DIR [CTEST ARGS...]: runs the tests, adds their counts to the totals.
run_ctest() {
  local dir=$1
  shift
  echo "== ctest in $dir $*"
  set +e
  ctest --test-dir "$dir" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$dir/ctest.log"
  local rc=${PIPESTATUS[0]}
  set -e
  local line
  line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$dir/ctest.log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    local f t
    f=$(echo "$line" | sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    t=$(echo "$line" | sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/')
    local s
    s=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$dir/ctest.log" || true)
    passed=$((passed + t - f - s))
    failed=$((failed + f))
    skipped=$((skipped + s))
  else
    failed=$((failed + 1))
  fi
  [ "$rc" -eq 0 ] || status=1
}

phase tests
run_ctest build -j"$jobs"

if [ "${DPTRAIN_SKIP_SANITIZERS:-0}" != "1" ]; then
  # (no CUDA module: sanitizing CUDA's libraries costs time and finds nothing of ours)
  sanitized=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPTRAIN_BUILD_BINDINGS=OFF -DDPTRAIN_BUILD_BENCH=OFF
    -DDPTRAIN_CUDA=OFF)
  phase asan-build
  cmake -S . -B build-asan "${sanitized[@]}" -DDPTRAIN_SANITIZE=address,undefined >/dev/null
  cmake --build build-asan -j"$jobs" >/dev/null
  phase asan-tests
  run_ctest build-asan -j"$jobs" -L 'capi|core' -E 'install_consumer|public_headers|exported_symbols|readme_quick_start'
  # The core's GPU path against the simulated CUDA module: its use-after-free checks need ASan.
  run_ctest build-asan -R '^(test_gpu_training_sim|test_cuda_backend_sim)$'
  phase tsan-build
  cmake -S . -B build-tsan "${sanitized[@]}" -DDPTRAIN_SANITIZE=thread >/dev/null
  cmake --build build-tsan -j"$jobs" --target test_allreduce test_threads test_determinism test_equivalence \
    test_device_faults test_buckets test_timeouts test_batch_norm test_transformer_equivalence \
    test_gpu_training test_sharding test_trace test_pipeline dptrain_sim_cuda >/dev/null
  # test_gpu_training_sim: replicas sharing a simulated GPU run on worker threads of their own (lanes).
  # test_sharding_threads: sharded gradients' staging slots and bucket reduce-scatters, parameter gathers;
  # test_trace: the timeline's rows, written by the device and communication threads;
  # test_pipeline: activations and gradients handed between the stages' threads, the stages' collectives.
  phase tsan-tests
  run_ctest build-tsan -j"$jobs" -R '^(test_allreduce|test_threads|test_determinism|test_equivalence|test_device_faults|test_buckets|test_timeouts|test_batch_norm|test_transformer_equivalence|test_gpu_training_sim|test_sharding_threads|test_trace|test_pipeline)$'
fi

if [ "${DPTRAIN_SKIP_WINDOWS:-0}" != "1" ]; then
  # dptrain.dll, dptrain.exe and the C API tests, cross-built and run under Wine (docs/windows.md).
  phase windows-build
  if scripts/build-windows.sh >/dev/null; then
    phase windows-tests
    run_ctest build-windows -L windows
  else
    echo "== the Windows build failed (scripts/build-windows.sh)"
    failed=$((failed + 1))
    status=1
  fi
fi

phase end
echo "$skipped skipped (tests that need a GPU or the CUDA module they lack)"
echo "seconds:${phases%,} (all: $SECONDS s)"
echo "$passed passed, $failed failed"
exit "$status"
