# dptrain_csharp_swig(GENERATED): SWIG generates the P/Invoke wrapper GENERATED/dptrain_csharp_wrap.cxx
# (+ .h) and the C# proxies GENERATED/cs/*.cs from bindings/swig/dptrain.i + csharp.i; the target
# dptrain_csharp_swig owns the generation (so that parallel builds never run SWIG twice), and
# GENERATED/cs.stamp marks it done. The Linux build (bindings/csharp) and the Windows cross build
# (bindings/csharp/windows) generate alike.
#
# SWIG 4.1 writes no XML documentation for C#: tools/add_xml_docs.py copies the C API's into the generated
# proxies (mcs then checks, CS1591, that every public member has some).
function(dptrain_csharp_swig generated)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(tools ${PROJECT_SOURCE_DIR}/bindings/csharp/tools)
  # Only the SWIG inputs that exist (the other languages' files may not be there yet).
  set(swig_inputs "")
  foreach(f IN LISTS DPTRAIN_SWIG_DEPENDS)
    if(EXISTS ${f})
      list(APPEND swig_inputs ${f})
    endif()
  endforeach()
  add_custom_command(
    OUTPUT ${generated}/dptrain_csharp_wrap.cxx ${generated}/dptrain_csharp_wrap.h ${generated}/cs.stamp
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${generated}/cs
    COMMAND ${CMAKE_COMMAND} -E make_directory ${generated}/cs
    COMMAND ${SWIG_EXECUTABLE} -c++ -csharp -namespace DPTrain -dllimport dptrain_csharp
            -I${PROJECT_SOURCE_DIR}/capi/include -I${DPTRAIN_SWIG_DIR}
            -outdir ${generated}/cs -o ${generated}/dptrain_csharp_wrap.cxx ${DPTRAIN_SWIG_INTERFACE}
    COMMAND ${Python3_EXECUTABLE} ${tools}/add_xml_docs.py
            ${PROJECT_SOURCE_DIR}/capi/include/dptrain ${DPTRAIN_SWIG_INTERFACE} ${DPTRAIN_SWIG_DIR}/csharp.i
            ${PROJECT_SOURCE_DIR}/bindings/csharp/src ${generated}/cs
    COMMAND ${CMAKE_COMMAND} -E touch ${generated}/cs.stamp
    DEPENDS ${swig_inputs} ${tools}/add_xml_docs.py
    COMMENT "SWIG: generating the C# binding"
    VERBATIM)
  add_custom_target(dptrain_csharp_swig DEPENDS ${generated}/dptrain_csharp_wrap.cxx ${generated}/cs.stamp)
endfunction()
