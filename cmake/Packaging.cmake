# Debian packages made by CPack from this build tree (docs/packaging.md):
#   cpack -G DEB --config build/CPackConfig.cmake -B OUTDIR
# One package per install component (cmake/Install.cmake):
#   runtime -> libdptrain<SOVERSION>   libdptrain.so.N and the MPI module, in the multiarch library directory
#   dev     -> libdptrain-dev          headers, the libdptrain.so link, CMake package and pkg-config files
#   cli     -> dptrain                 the command /usr/bin/dptrain
#   cuda    -> libdptrain<SOVERSION>-cuda  the CUDA module (when built), next to libdptrain.so.N where the
#              library looks for it; a package of its own because it needs NVIDIA's CUDA 13 libraries, which
#              Debian does not ship (docs/decisions.md)
# The binding components (java, csharp, go) and the API reference (doc) are not packaged here.
set(dpt_deb_soversion ${PROJECT_VERSION_MAJOR})  # = the SOVERSION of libdptrain (capi/CMakeLists.txt)
set(dpt_deb_runtime libdptrain${dpt_deb_soversion})

set(DPTRAIN_PACKAGE_MAINTAINER "dptrain maintainers <maintainers@users.noreply.a-seed-896a0f55.example>"
    CACHE STRING "Maintainer field of the Debian packages")
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT CMAKE_INSTALL_LIBDIR MATCHES "^lib/${CMAKE_LIBRARY_ARCHITECTURE}$"
   AND EXISTS "/etc/debian_version")
  message(WARNING "The Debian packages would put libdptrain in /usr/${CMAKE_INSTALL_LIBDIR}, not in the multiarch "
                  "directory: configure afresh, or with -UCMAKE_INSTALL_LIBDIR (cmake/InstallDirs.cmake)")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dptrain)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev cli)
if(DPTRAIN_HAVE_CUDA_MODULE)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${DPTRAIN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Depends from the ELF files (libc6, libstdc++6, libopenblas0, zlib1g, libopenmpi3, ...). The CLI's
# libdptrain.so.N is in no installed package yet: dpkg-shlibdeps finds it in this build's library directory
# and, with no package information for it, leaves it to the explicit Depends below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
if(DPTRAIN_HAVE_CUDA_MODULE)
  # (NVIDIA's libraries need not be in the ld.so cache; found but in no Debian package, they add no Depends)
  get_filename_component(dpt_cudnn_dir "${DPTRAIN_CUDNN_LIBRARY}" DIRECTORY)
  get_filename_component(dpt_nccl_dir "${DPTRAIN_NCCL_LIBRARY}" DIRECTORY)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR} ${dpt_cudnn_dir} ${dpt_nccl_dir})
  list(REMOVE_DUPLICATES CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS)
endif()
# A shlibs file in the library package ("libdptrain 0 libdptrain0 (>= 0.2.0)"), so that packages built
# against it get their Depends from dpkg-shlibdeps. Written here rather than by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS,
# which warns about every shared object without a SONAME: the modules, dlopened and never linked, rightly have none.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/shlibs
     "libdptrain ${dpt_deb_soversion} ${dpt_deb_runtime} (>= ${PROJECT_VERSION})\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/shlibs)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${dpt_deb_runtime})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "The shared library libdptrain.so.${dpt_deb_soversion} (C API, CPU backend) and its MPI module.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdptrain-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# Headers and library from one build: exactly this version.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${dpt_deb_runtime} (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Development files: the C headers, the libdptrain.so link, the CMake package (find_package(dptrain)) and \
the pkg-config file dptrain.pc.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME dptrain)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
# The CLI uses the public C API only: any library of this SONAME at least as new as the CLI will do.
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${dpt_deb_runtime} (>= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "The dptrain command: lists devices, trains and evaluates models, writes metrics and plots.")

if(DPTRAIN_HAVE_CUDA_MODULE)
  set(CPACK_DEBIAN_CUDA_PACKAGE_NAME ${dpt_deb_runtime}-cuda)
  set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION libs)
  # The module and the library share an internal interface (checked at load): the same version only.
  set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "${dpt_deb_runtime} (= ${PROJECT_VERSION})")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS ${dpt_deb_runtime}-cuda)
  set(CPACK_COMPONENT_CUDA_DESCRIPTION
      "The CUDA backend module libdptrain_cuda.so, loaded by libdptrain when CUDA devices are asked for. It \
needs NVIDIA's CUDA ${CUDAToolkit_VERSION_MAJOR} runtime, cuBLAS, cuDNN 9 and NCCL 2 libraries and a driver; without \
them libdptrain reports zero CUDA devices and why.")
endif()

include(CPack)
