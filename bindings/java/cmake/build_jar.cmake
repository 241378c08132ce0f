# Compiles every .java file under SOURCE_DIRS (a ;-list; generated sources included, so the list is read
# at build time) with javac, then packs the classes into JAR.
#   cmake -DJAVAC=... -DJAR_TOOL=... -DSOURCE_DIRS="a;b" -DCLASSPATH="x.jar:y.jar" -DCLASSES_DIR=... -DJAR=...
#         [-DMAIN_CLASS=org.x.Main] [-DJAVAC_FLAGS="--release;11"] -P build_jar.cmake
foreach(var JAVAC JAR_TOOL SOURCE_DIRS CLASSES_DIR JAR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_jar.cmake: ${var} is not set")
  endif()
endforeach()

set(sources "")
foreach(dir IN LISTS SOURCE_DIRS)
  file(GLOB_RECURSE found "${dir}/*.java")
  list(APPEND sources ${found})
endforeach()
list(SORT sources)
if(NOT sources)
  message(FATAL_ERROR "build_jar.cmake: no .java files under ${SOURCE_DIRS}")
endif()

file(REMOVE_RECURSE "${CLASSES_DIR}")
file(MAKE_DIRECTORY "${CLASSES_DIR}")
get_filename_component(jar_name "${JAR}" NAME_WE)
set(argfile "${CLASSES_DIR}/../${jar_name}-sources.txt")
string(REPLACE ";" "\n" lines "${sources}")
file(WRITE "${argfile}" "${lines}\n")

set(cp_args "")
if(CLASSPATH)
  set(cp_args -classpath "${CLASSPATH}")
endif()
execute_process(
  COMMAND "${JAVAC}" ${JAVAC_FLAGS} -encoding UTF-8 ${cp_args} -d "${CLASSES_DIR}" "@${argfile}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "javac failed (${rc})")
endif()

if(MAIN_CLASS)
  set(jar_args cfe "${JAR}" "${MAIN_CLASS}")
else()
  set(jar_args cf "${JAR}")
endif()
execute_process(COMMAND "${JAR_TOOL}" ${jar_args} -C "${CLASSES_DIR}" . RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "jar failed (${rc})")
endif()
