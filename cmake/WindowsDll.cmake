# dptrain_windows_dll(TARGET): a DLL of the mingw-w64 cross build, named as Windows names DLLs (no "lib"
# prefix: dptrain.dll, dptrain_java.dll, dptrain_csharp.dll, as zlib's and zstd's), with the GCC, C++ and
# threads runtimes linked in, so that it needs nothing but Windows' own DLLs (and dptrain.dll).
function(dptrain_windows_dll target)
  set_target_properties(${target} PROPERTIES PREFIX "")
  target_link_options(${target} PRIVATE -static-libgcc -static-libstdc++
    -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic)
endfunction()
