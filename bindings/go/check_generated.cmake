# ctest go_swig_up_to_date: the committed raw package internal/swig must be exactly what SWIG generates from
# the current interface (bindings/swig/dptrain.i + go.i, the public headers), so that it cannot go stale.
# The build regenerates it into FRESH; `cmake --build build --target go_swig_update` copies it over.
# A SWIG of another version than the one named in the committed files writes other text for the same
# interface: then the comparison means nothing and the test reports itself skipped.
# Usage: cmake -DSWIG=swig -DFRESH=<build>/bindings/go/swig -DCOMMITTED=bindings/go/internal/swig -P ...
set(files dptrain.go dptrain_wrap.cxx dptrain_wrap.h dptrain_binding.hpp)

file(GLOB committed RELATIVE ${COMMITTED} ${COMMITTED}/*)
list(SORT committed)
set(expected ${files})
list(SORT expected)
if(NOT committed STREQUAL expected)
  message(FATAL_ERROR "${COMMITTED} holds [${committed}], expected exactly [${expected}]")
endif()

# The version SWIG writes into its header, " * Version 4.1.0".
function(swig_version_of file out)
  file(STRINGS ${file} line LIMIT_COUNT 1 REGEX "^ \\* Version [0-9.]+$")
  string(REGEX REPLACE "^ \\* Version " "" v "${line}")
  set(${out} "${v}" PARENT_SCOPE)
endfunction()
swig_version_of(${COMMITTED}/dptrain.go committed_version)
swig_version_of(${FRESH}/dptrain.go fresh_version)
if(committed_version STREQUAL "" OR fresh_version STREQUAL "")
  message(FATAL_ERROR "no SWIG version line in ${COMMITTED}/dptrain.go or ${FRESH}/dptrain.go")
endif()
if(NOT committed_version STREQUAL fresh_version)
  message(STATUS "go_swig_up_to_date: skipped (committed by SWIG ${committed_version}, this SWIG is "
                 "${fresh_version}; regenerate with that SWIG to compare)")
  return()
endif()

set(stale "")
foreach(f IN LISTS files)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${COMMITTED}/${f} ${FRESH}/${f} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(APPEND stale ${f})
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "bindings/go/internal/swig is stale (${stale} differ from SWIG ${fresh_version}'s output "
                      "in ${FRESH}): run `cmake --build <build> --target go_swig_update` and commit the result")
endif()
list(LENGTH files n)
message(STATUS "internal/swig: ${n} files equal to SWIG ${fresh_version}'s output")
