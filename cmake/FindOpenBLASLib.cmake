# The interface target dptrain::openblas: OpenBLAS (Debian's libopenblas-dev) with DPTRAIN_HAVE_OPENBLAS=1,
# or, with DPTRAIN_OPENBLAS=OFF (the default for Windows, where Debian has no OpenBLAS), nothing but
# DPTRAIN_HAVE_OPENBLAS=0: the GEMM then runs dptrain's own kernels only (src/backend/cpu/gemm), AVX-512
# where the CPU has it and the portable kernel elsewhere.
if(WIN32)
  set(dpt_openblas_default OFF)
else()
  set(dpt_openblas_default ON)
endif()
option(DPTRAIN_OPENBLAS "Use OpenBLAS's sgemm on CPUs without AVX-512" ${dpt_openblas_default})
add_library(dptrain_openblas INTERFACE)
add_library(dptrain::openblas ALIAS dptrain_openblas)
if(NOT DPTRAIN_OPENBLAS)
  target_compile_definitions(dptrain_openblas INTERFACE DPTRAIN_HAVE_OPENBLAS=0)
  message(STATUS "OpenBLAS: not used (DPTRAIN_OPENBLAS=OFF): dptrain's own GEMM kernels only")
  return()
endif()
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu
  NO_DEFAULT_PATH)
find_path(OPENBLAS_INCLUDE_DIR cblas.h)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: apt-get install libopenblas-dev (or -DDPTRAIN_OPENBLAS=OFF)")
endif()
target_link_libraries(dptrain_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(dptrain_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_compile_definitions(dptrain_openblas INTERFACE DPTRAIN_HAVE_OPENBLAS=1)
message(STATUS "OpenBLAS: ${OPENBLAS_LIBRARY} (headers ${OPENBLAS_INCLUDE_DIR})")
