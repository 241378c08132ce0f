# ctest go_module_consumer: a Go program adds dptrain the way a user's service does, away from this build.
#  1. `cmake --install` puts dptrain (library, headers, relocatable dptrain.pc, CLI) into WORK/prefix;
#  2. the module directory alone is copied out of the source tree to WORK/dptrain-go;
#  3. an empty WORK/consumer gets a go.mod that requires dptrain.org/dptrain v<project version> through a
#     `replace` to that copy, and the Go sample's main.go as its program;
#  4. `go build` runs offline (GOPROXY=off, GOFLAGS=-mod=mod) with its own GOCACHE and GOPATH, no CGO_*
#     variables, and only PKG_CONFIG_PATH at the prefix: `#cgo pkg-config: dptrain` finds everything;
#  5. the program runs with LD_LIBRARY_PATH at the prefix's lib (the installed dptrain.pc adds no rpath),
#     loads that prefix's libdptrain (checked with ldd) and must end with the param_checksum of the
#     installed C CLI trained with the same settings (samples/go/compare_checksum.cmake).
# Usage: cmake -DGO=go -DBUILD_DIR=build -DLIBDIR=lib -DMODULE_DIR=bindings/go -DSAMPLE_DIR=samples/go
#              -DBINDIR=bin -DVERSION=0.2.0 -DWORK=<scratch folder> -P consumer_test.cmake
set(prefix ${WORK}/prefix)
set(module_copy ${WORK}/dptrain-go)
set(consumer ${WORK}/consumer)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${consumer})

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
                OUTPUT_QUIET ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${prefix} failed (${rc}):\n${err}")
endif()
if(NOT EXISTS ${prefix}/${LIBDIR}/pkgconfig/dptrain.pc)
  message(FATAL_ERROR "the install has no ${LIBDIR}/pkgconfig/dptrain.pc")
endif()

file(COPY ${MODULE_DIR}/ DESTINATION ${module_copy})
file(COPY ${SAMPLE_DIR}/main.go DESTINATION ${consumer})
file(WRITE ${consumer}/go.mod "module example.com/trainer

go 1.19

require dptrain.org/dptrain v${VERSION}

replace dptrain.org/dptrain => ../dptrain-go
")

set(go_env ${CMAKE_COMMAND} -E env --unset=CGO_CFLAGS --unset=CGO_CPPFLAGS --unset=CGO_CXXFLAGS
    --unset=CGO_LDFLAGS --unset=LD_LIBRARY_PATH --unset=PKG_CONFIG_LIBDIR
    PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig GOCACHE=${WORK}/gocache GOPATH=${WORK}/gopath
    GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GOENV=off GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=1)

execute_process(COMMAND ${go_env} ${GO} list -m dptrain.org/dptrain WORKING_DIRECTORY ${consumer}
                OUTPUT_VARIABLE listed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT listed STREQUAL "dptrain.org/dptrain v${VERSION} => ../dptrain-go")
  message(FATAL_ERROR "go list -m: '${listed}' (${rc}), expected 'dptrain.org/dptrain v${VERSION} => "
                      "../dptrain-go'\n${err}")
endif()

string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${go_env} ${GO} build -o trainer . WORKING_DIRECTORY ${consumer}
                ERROR_VARIABLE err RESULT_VARIABLE rc)
string(TIMESTAMP t1 "%s")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go build in ${consumer} failed (${rc}):\n${err}")
endif()
math(EXPR seconds "${t1} - ${t0}")
message(STATUS "go build of the consumer (fresh GOCACHE): ${seconds} s")

set(run_env ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/${LIBDIR})
execute_process(COMMAND ${run_env} ldd ${consumer}/trainer OUTPUT_VARIABLE ldd_out RESULT_VARIABLE rc)
string(REGEX MATCH "libdptrain\\.so[^ ]* => [^ ]+" loaded "${ldd_out}")
string(REGEX REPLACE ".* => " "" loaded_path "${loaded}")
get_filename_component(loaded_dir "${loaded_path}" DIRECTORY)
get_filename_component(want_dir "${prefix}/${LIBDIR}" REALPATH)
get_filename_component(loaded_dir "${loaded_dir}" REALPATH)
if(NOT rc EQUAL 0 OR NOT loaded_dir STREQUAL want_dir)
  message(FATAL_ERROR "the consumer loads libdptrain from '${loaded_dir}', expected ${want_dir}:\n${ldd_out}")
endif()

execute_process(COMMAND ${run_env} ${CMAKE_COMMAND} -DCLI=${prefix}/${BINDIR}/dptrain
                        -DGO_SAMPLE=${consumer}/trainer -P ${SAMPLE_DIR}/compare_checksum.cmake
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer's param_checksum differs from the installed C CLI's (see above)")
endif()
