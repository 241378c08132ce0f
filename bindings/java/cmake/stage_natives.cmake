# Copies the native libraries of one platform into DIR (natives/<platform>/ of the versioned jar) and writes
# DIR/index.txt, which BundledNatives.java reads: one line per file, "<sha256> <size> <role> <name>", in load
# order. Role "load": System.load, in the listed order (libdptrain before the JNI library that needs it);
# role "module": only extracted, libdptrain dlopens it from its own directory.
#   cmake -DDIR=... -DLOAD="path>name|path>name" [-DMODULES="path|path"] -P stage_natives.cmake
# ("|" separates the entries: a ";" would be split by add_custom_command; "path>name" renames, e.g. the real
# file libdptrain.so.0.2.0 to its SONAME libdptrain.so.0, the name the JNI library's DT_NEEDED asks for.)
#
# The copies get the run paths of an install (the same rewriting cmake --install does): the JNI library
# $ORIGIN, so that it finds libdptrain in its own directory; the others none (no build-machine paths).
foreach(var DIR LOAD)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "stage_natives.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
set(index "# dptrain natives: <sha256> <size> <role> <name>, in load order (bindings/java/cmake/stage_natives.cmake)\n")

# stage(ROLE SOURCE NAME): copies SOURCE to DIR/NAME, fixes its run path, appends its index line.
function(stage role source name)
  if(NOT EXISTS "${source}")
    message(FATAL_ERROR "stage_natives.cmake: ${source} does not exist")
  endif()
  set(copy "${DIR}/${name}")
  file(COPY_FILE "${source}" "${copy}")
  if(name MATCHES "\\.so(\\.|$)") # ELF only: a DLL has no run path
    if(name MATCHES "^libdptrain_java\\.")
      file(RPATH_SET FILE "${copy}" NEW_RPATH "$ORIGIN")
    else()
      file(RPATH_REMOVE FILE "${copy}")
    endif()
  endif()
  file(SHA256 "${copy}" sha)
  file(SIZE "${copy}" size)
  set(index "${index}${sha} ${size} ${role} ${name}\n" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" load_entries "${LOAD}")
foreach(entry IN LISTS load_entries)
  if(entry MATCHES "^(.*)>([^>/]+)$")
    stage(load "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}")
  else()
    get_filename_component(name "${entry}" NAME)
    stage(load "${entry}" "${name}")
  endif()
endforeach()
string(REPLACE "|" ";" module_entries "${MODULES}")
foreach(entry IN LISTS module_entries)
  get_filename_component(name "${entry}" NAME)
  stage(module "${entry}" "${name}")
endforeach()
file(WRITE "${DIR}/index.txt" "${index}")
