# Stages the NuGet package's tree and packs it: cmake -DSTAGE=<dir> -DOUTPUT=<.nupkg> -DNUSPEC=<file>
#   -DNUGET=<nuget> -DASSEMBLY=<DPTrain.dll> -DDOC=<DPTrain.xml> -DCONFIG=<DPTrain.dll.config>
#   -DCORE=<libdptrain.so.X.Y.Z> -DCORE_SONAME=<libdptrain.so.X> -DWRAPPER=<libdptrain_csharp.so>
#   "-DMODULES=<a.so;b.so>" -P pack.cmake
#
# libdptrain goes in under its SONAME, the name the wrapper's DT_NEEDED asks for (a zip keeps no symbolic
# links). The wrapper's RUNPATH, which points into the build tree, becomes $ORIGIN, so that the package's
# wrapper (which Mono opens through the dllmap of DPTrain.dll.config) finds the package's libdptrain and
# nothing of the build tree. The modules keep their RUNPATHs (system folders of CUDA and Open MPI);
# libdptrain finds them in its own folder.
foreach(var STAGE OUTPUT NUSPEC NUGET ASSEMBLY DOC CONFIG CORE CORE_SONAME WRAPPER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "pack.cmake: ${var} is not set")
  endif()
endforeach()

set(native ${STAGE}/runtimes/linux-x64/native)
file(REMOVE_RECURSE ${STAGE})
file(MAKE_DIRECTORY ${STAGE}/lib/net45 ${native})
file(COPY ${ASSEMBLY} ${DOC} ${CONFIG} DESTINATION ${STAGE}/lib/net45)
file(COPY_FILE ${CORE} ${native}/${CORE_SONAME})
file(COPY ${WRAPPER} ${MODULES} DESTINATION ${native})
get_filename_component(wrapper_name ${WRAPPER} NAME)
file(RPATH_SET FILE ${native}/${wrapper_name} NEW_RPATH "$ORIGIN")

include(${CMAKE_CURRENT_LIST_DIR}/nuget_pack.cmake)
