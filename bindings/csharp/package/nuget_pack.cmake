# Packs the staged tree STAGE into OUTPUT with NUSPEC and NUGET (Debian's nuget 2.8, a Mono program);
# included by pack.cmake (the Linux package) and add_windows_natives.cmake (the package with both platforms).
# nuget 2.8 keeps its configuration and machine cache under HOME: a private one leaves the user's alone.
get_filename_component(output_dir ${OUTPUT} DIRECTORY)
file(REMOVE_RECURSE ${output_dir})
file(MAKE_DIRECTORY ${output_dir} ${STAGE}-home)
set(ENV{HOME} ${STAGE}-home)
execute_process(
  COMMAND ${NUGET} pack ${NUSPEC} -BasePath ${STAGE} -OutputDirectory ${output_dir} -NoPackageAnalysis
          -NonInteractive
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT result EQUAL 0 OR NOT EXISTS ${OUTPUT})
  message(FATAL_ERROR "nuget pack failed (${result}), ${OUTPUT} not written:\n${out}")
endif()
