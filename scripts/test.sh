#!/usr/bin/env bash
# The whole test command: installs what is needed, builds, runs every test suite through CTest, and ends
# with one line "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
set +e
ctest --test-dir build --output-on-failure --no-tests=error 2>&1 | tee build/ctest.log
status=${PIPESTATUS[0]}
set -e
total=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' build/ctest.log | tail -n 1)
failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' build/ctest.log | tail -n 1)
if [ -n "$total" ]; then echo "$((total - failed)) passed, $failed failed"; fi
exit "$status"
