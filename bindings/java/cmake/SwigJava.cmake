# dptrain_java_swig(GEN): SWIG generates the JNI wrapper GEN/dptrain_java_wrap.cxx (+ .h) and the proxy
# classes GEN/java/org/dptrain/*.java from bindings/swig/dptrain.i + java.i; the target dptrain_java_swig owns
# the generation (every target that lists a generated file also gets its rule with Makefile generators:
# target-level dependencies make them run one after the other, so the rule never runs twice at once).
# The Linux build (bindings/java) and the Windows cross build (bindings/java/windows) generate alike.
function(dptrain_java_swig gen)
  file(GLOB public_headers ${PROJECT_SOURCE_DIR}/capi/include/dptrain/*.h)
  add_custom_command(
    OUTPUT ${gen}/dptrain_java_wrap.cxx ${gen}/dptrain_java_wrap.h
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${gen}/java
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}/java/org/dptrain
    COMMAND ${SWIG_EXECUTABLE} -c++ -java -package org.dptrain -module Dptrain
            -I${PROJECT_SOURCE_DIR}/capi/include -I${DPTRAIN_SWIG_DIR}
            -outdir ${gen}/java/org/dptrain -o ${gen}/dptrain_java_wrap.cxx ${DPTRAIN_SWIG_INTERFACE}
    DEPENDS ${DPTRAIN_SWIG_INTERFACE} ${DPTRAIN_SWIG_DIR}/dptrain_binding.hpp ${DPTRAIN_SWIG_DIR}/java.i
            ${public_headers}
    COMMENT "SWIG: generating the Java binding"
    VERBATIM)
  add_custom_target(dptrain_java_swig DEPENDS ${gen}/dptrain_java_wrap.cxx)
endfunction()
