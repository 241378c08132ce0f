# Cross-compiling dptrain for 64-bit Windows with Debian's mingw-w64 (g++-mingw-w64-x86-64-posix: the
# POSIX-threads flavour, which has std::thread): cmake -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake.
# scripts/build-windows.sh configures and builds with it; tests/windows runs the results under Wine.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(triple x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${triple}-gcc-posix)
set(CMAKE_CXX_COMPILER ${triple}-g++-posix)
set(CMAKE_RC_COMPILER ${triple}-windres)
# x86-64-v3 (AVX2, FMA: Intel Haswell, AMD Zen and later): PE has no ifunc, so the per-CPU copies that
# DPT_CLONES makes on Linux cannot be chosen at load time; without FMA in the baseline, std::fma in the
# portable GEMM kernel is a library call emulated in software (50 times slower). -ffp-contract=off: no
# multiply-add that the Linux build rounds twice may be fused into one FMA here, or the bits would differ
# (they are the same as Linux's, tests/windows). docs/windows.md.
set(CMAKE_C_FLAGS_INIT "-march=x86-64-v3 -ffp-contract=off")
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64-v3 -ffp-contract=off")
# Programs link the GCC, C++ and threads runtimes statically, as dptrain.dll does (capi/CMakeLists.txt): they
# need dptrain.dll and Windows' own DLLs only.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/${triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Run cross-built test programs under Wine (CTest's CROSSCOMPILING_EMULATOR).
find_program(DPTRAIN_WINE NAMES wine wine64)
if(DPTRAIN_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DPTRAIN_WINE})
endif()
