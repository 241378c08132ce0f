# Compiles C, C++ and CUDA through ccache when it is installed (DPTRAIN_CCACHE=OFF: never; a launcher given on
# the command line wins). scripts/test.sh builds the library four times (Release, ASan, TSan, Windows): on a
# machine that built it before, the cache turns most of those compilations into copies. base_dir and
# no hash_dir make a clone in another folder hit the same entries (relative paths in the hash; the debug
# information of the sanitizer builds then names the folder of the first compilation).
option(DPTRAIN_CCACHE "Compile through ccache when it is installed" ON)
if(DPTRAIN_CCACHE AND NOT CMAKE_C_COMPILER_LAUNCHER AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(DPTRAIN_CCACHE_PROGRAM ccache)
  if(DPTRAIN_CCACHE_PROGRAM)
    set(dpt_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1
                     ${DPTRAIN_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${dpt_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${dpt_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${dpt_launcher})
    message(STATUS "Compiler cache: ${DPTRAIN_CCACHE_PROGRAM}")
  endif()
endif()
