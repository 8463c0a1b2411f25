# The installed CMake package: `cmake --install BUILD --prefix P` gives
# P/bin/faultline, P/lib/libfaultline_probe.a, P/lib/libfaultline_gtest.a,
# P/include/faultline/{probe,gtest}.h, P/lib/faultline/libfaultline_preload.so,
# P/share/faultline/python (the shim) and P/lib/cmake/faultline, so that
# find_package(faultline) gives faultline::probe and faultline::gtest.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(fl_cmake_dir lib/cmake/faultline)
install(EXPORT faultlineTargets NAMESPACE faultline:: DESTINATION ${fl_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/faultlineConfig.cmake.in
  ${PROJECT_BINARY_DIR}/faultlineConfig.cmake
  INSTALL_DESTINATION ${fl_cmake_dir}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/faultlineConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/faultlineConfig.cmake ${PROJECT_BINARY_DIR}/faultlineConfigVersion.cmake
  DESTINATION ${fl_cmake_dir})
