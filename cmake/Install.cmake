# Install rules, CMake package config (find_package(dptrain)) and pkg-config file.
# Every install() names its component: runtime (libdptrain.so.N and the MPI module), dev (headers, the
# libdptrain.so link, CMake and pkg-config files), cli (bin/dptrain), cuda (the CUDA module), and for the
# bindings java, csharp, go, for the API reference doc. cmake/Packaging.cmake makes a Debian package of
# each of runtime, dev, cli and cuda.
include(CMakePackageConfigHelpers)
install(TARGETS dptrain EXPORT dptrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY capi/include/dptrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT dptrainTargets NAMESPACE dptrain:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain
  COMPONENT dev)
configure_package_config_file(cmake/dptrainConfig.cmake.in ${PROJECT_BINARY_DIR}/dptrainConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dptrainConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dptrainConfig.cmake ${PROJECT_BINARY_DIR}/dptrainConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain COMPONENT dev)
file(RELATIVE_PATH DPT_PC_INCLUDE_FROM_PC "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r/${CMAKE_INSTALL_INCLUDEDIR}")
configure_file(cmake/dptrain.pc.in ${PROJECT_BINARY_DIR}/dptrain.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dptrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
