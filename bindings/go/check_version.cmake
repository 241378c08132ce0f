# ctest go_module_version: the module's BindingVersion (version.go) must be the project version, the one its
# release tag bindings/go/v<version> carries (README.md, "Versions and tags").
# Usage: cmake -DVERSION_GO=bindings/go/version.go -DPROJECT_VERSION=0.2.0 -P check_version.cmake
file(STRINGS ${VERSION_GO} line REGEX "^const BindingVersion = \"[^\"]*\"$")
if(NOT line MATCHES "\"([^\"]*)\"")
  message(FATAL_ERROR "no `const BindingVersion = \"...\"` line in ${VERSION_GO}")
endif()
set(binding_version "${CMAKE_MATCH_1}")
if(NOT binding_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "BindingVersion is \"${binding_version}\" in ${VERSION_GO}, the project version is "
                      "${PROJECT_VERSION} (top CMakeLists.txt): update version.go")
endif()
message(STATUS "BindingVersion ${binding_version} == project version; release tag bindings/go/v${binding_version}")
