# Install rules, CMake package config (find_package(dptrain)) and pkg-config file.
include(CMakePackageConfigHelpers)
install(TARGETS dptrain EXPORT dptrainTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY capi/include/dptrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT dptrainTargets NAMESPACE dptrain:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain)
configure_package_config_file(cmake/dptrainConfig.cmake.in ${PROJECT_BINARY_DIR}/dptrainConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dptrainConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dptrainConfig.cmake ${PROJECT_BINARY_DIR}/dptrainConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dptrain)
file(RELATIVE_PATH DPT_PC_INCLUDE_FROM_PC "/r/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/r/${CMAKE_INSTALL_INCLUDEDIR}")
configure_file(cmake/dptrain.pc.in ${PROJECT_BINARY_DIR}/dptrain.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dptrain.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
