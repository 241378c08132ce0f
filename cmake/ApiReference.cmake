# The C API reference (docs/Doxyfile.in over capi/include/dptrain): the target api_reference writes
# build/docs/api/html, installed as the component `doc` under share/doc/dptrain/html; the test
# api_reference_warnings (label docs) runs Doxygen again with every warning an error.
find_package(Doxygen)
if(NOT DOXYGEN_FOUND)
  message(WARNING "doxygen not found: the API reference is not built (apt-get install doxygen)")
  return()
endif()

file(GLOB dpt_public_headers ${PROJECT_SOURCE_DIR}/capi/include/dptrain/*.h)
set(dpt_api_dir ${PROJECT_BINARY_DIR}/docs/api)

# The build's configuration: warnings are printed, never fatal (the test makes them fatal).
set(DPT_DOXYGEN_OUTPUT ${dpt_api_dir})
set(DPT_DOXYGEN_WARN_AS_ERROR NO)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${dpt_api_dir}/Doxyfile @ONLY)
add_custom_command(
  OUTPUT ${dpt_api_dir}/html/index.html
  COMMAND ${DOXYGEN_EXECUTABLE} ${dpt_api_dir}/Doxyfile
  DEPENDS ${dpt_public_headers} ${dpt_api_dir}/Doxyfile
  COMMENT "doxygen: the C API reference"
  VERBATIM)
add_custom_target(api_reference ALL DEPENDS ${dpt_api_dir}/html/index.html)
install(DIRECTORY ${dpt_api_dir}/html/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/html COMPONENT doc)

if(DPTRAIN_BUILD_TESTS)
  set(DPT_DOXYGEN_OUTPUT ${PROJECT_BINARY_DIR}/docs/api-check)
  set(DPT_DOXYGEN_WARN_AS_ERROR FAIL_ON_WARNINGS)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/api-check/Doxyfile @ONLY)
  add_test(NAME api_reference_warnings
           COMMAND ${CMAKE_COMMAND} -DDOXYGEN=${DOXYGEN_EXECUTABLE}
                   -DDOXYFILE=${PROJECT_BINARY_DIR}/docs/api-check/Doxyfile
                   -DOUTPUT=${PROJECT_BINARY_DIR}/docs/api-check -DVERSION=${PROJECT_VERSION}
                   -DHEADER_DIR=${PROJECT_SOURCE_DIR}/capi/include/dptrain
                   -P ${PROJECT_SOURCE_DIR}/tests/docs/check_api_reference.cmake)
  set_tests_properties(api_reference_warnings PROPERTIES LABELS docs TIMEOUT 120)
endif()
