#!/usr/bin/env bash
# Cross-builds dptrain for 64-bit Windows with Debian's mingw-w64 into build-windows/: dptrain.dll with its
# import library libdptrain.dll.a and dptrain.def, dptrain.exe, the C quick start and the C API tests
# (CMocka cross-built first, scripts/cmocka-mingw.sh), the Java and C# bindings' Windows natives and, from the
# Linux build (build/, built first: scripts/build.sh), build-windows/packages/: the jar and the NuGet package
# with both platforms' natives. ctest --test-dir build-windows runs the tests under Wine, the bindings' with a
# Windows JVM and .NET runtime (scripts/windows-runtimes.sh). docs/windows.md. Extra arguments go to the CMake
# configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/cmocka-mingw.sh build-windows/cmocka
scripts/windows-runtimes.sh build-windows/runtimes
cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DCMAKE_BUILD_TYPE=Release \
  -DDPTRAIN_BUILD_BENCH=OFF -DDPTRAIN_BUILD_BINDINGS=ON -DDPTRAIN_CMOCKA_PREFIX="$PWD/build-windows/cmocka" \
  -DDPTRAIN_LINUX_BUILD="$PWD/build" -DDPTRAIN_WINDOWS_RUNTIMES="$PWD/build-windows/runtimes" "$@" >/dev/null
cmake --build build-windows -j"$(nproc)"
