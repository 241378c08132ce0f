# The NuGet package with both platforms' natives (bindings/csharp/windows): the Linux build's staged tree
# (lib/net45/, runtimes/linux-x64/native/) copied to STAGE, the Windows DLLs added under
# runtimes/win-x64/native/, packed with NUSPEC:
#   cmake -DLINUX_STAGE=<dir> -DSTAGE=<dir> "-DNATIVES=<a.dll;b.dll>" -DNUSPEC=<file> -DNUGET=<nuget>
#         -DOUTPUT=<.nupkg> -P add_windows_natives.cmake
foreach(var LINUX_STAGE STAGE NATIVES NUSPEC NUGET OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "add_windows_natives.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT IS_DIRECTORY ${LINUX_STAGE}/runtimes/linux-x64/native)
  message(FATAL_ERROR "add_windows_natives.cmake: ${LINUX_STAGE} holds no Linux package tree")
endif()
file(REMOVE_RECURSE ${STAGE})
file(COPY ${LINUX_STAGE}/ DESTINATION ${STAGE})
file(MAKE_DIRECTORY ${STAGE}/runtimes/win-x64/native)
file(COPY ${NATIVES} DESTINATION ${STAGE}/runtimes/win-x64/native)
include(${CMAKE_CURRENT_LIST_DIR}/nuget_pack.cmake)
