# Finds OpenBLAS (Debian's libopenblas-dev) and defines the imported target dptrain::openblas.
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu
  NO_DEFAULT_PATH)
find_path(OPENBLAS_INCLUDE_DIR cblas.h)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: apt-get install libopenblas-dev")
endif()
add_library(dptrain::openblas UNKNOWN IMPORTED)
set_target_properties(dptrain::openblas PROPERTIES
  IMPORTED_LOCATION "${OPENBLAS_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${OPENBLAS_INCLUDE_DIR}")
message(STATUS "OpenBLAS: ${OPENBLAS_LIBRARY} (headers ${OPENBLAS_INCLUDE_DIR})")
