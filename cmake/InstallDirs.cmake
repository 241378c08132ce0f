# The install directories: GNUInstallDirs, except that on Debian and its derivatives the libraries go to the
# multiarch directory lib/<triplet> (lib/x86_64-linux-gnu) whatever the prefix. GNUInstallDirs picks it for
# the prefix /usr only, but install rules fix their paths when CMake configures, and the Debian packages
# (cmake/Packaging.cmake, prefix /usr) are made from the same build tree as `cmake --install` (prefix
# /usr/local): one layout for both. /usr/local/lib/<triplet> is on Debian's library, pkg-config and
# find_package search paths as well. A -DCMAKE_INSTALL_LIBDIR=... of the user's still wins.
if(NOT DEFINED CMAKE_INSTALL_LIBDIR AND CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT CMAKE_CROSSCOMPILING
   AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "/etc/debian_version")
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH "Object code libraries (LIBDIR)")
endif()
include(GNUInstallDirs)
