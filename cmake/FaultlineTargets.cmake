# Helpers that create every faultline target the same way: warnings, include root, alias.

# Warnings for first-party code; third-party headers come in as SYSTEM includes.
function(fl_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(FAULTLINE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# fl_add_library(<folder-name> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...]
#                [PUBLIC_INCLUDE dir] [FOLDER path])
# Creates fl_<name> with alias fl::<name>. Includes are written from the repo
# root ("harness/diagnose/x.h"), but a library's include path holds only its
# own folder (FOLDER, relative to the root; default: the folder of the
# CMakeLists.txt) at that path, through a link in the build tree: another
# stage's headers are found only through a library declared in DEPS, so an
# undeclared dependency fails to build.
function(fl_add_library name)
  cmake_parse_arguments(ARG "SHARED" "PUBLIC_INCLUDE;FOLDER" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(ARG_SHARED)
    add_library(fl_${name} SHARED ${ARG_SOURCES})
  else()
    add_library(fl_${name} STATIC ${ARG_SOURCES})
  endif()
  add_library(fl::${name} ALIAS fl_${name})
  if(NOT ARG_FOLDER)
    file(RELATIVE_PATH ARG_FOLDER ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  fl_own_include_root(root ${name} ${ARG_FOLDER})
  target_include_directories(fl_${name} PUBLIC $<BUILD_INTERFACE:${root}>)
  if(ARG_PUBLIC_INCLUDE)
    target_include_directories(fl_${name} PUBLIC ${ARG_PUBLIC_INCLUDE})
  endif()
  target_link_libraries(fl_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  fl_target_warnings(fl_${name})
endfunction()

# fl_own_include_root(<out-var> <name> <folder>): a directory in the build tree
# holding only <folder> (a link to the source folder, at its path from the repo
# root), for fl_<name>'s include path.
function(fl_own_include_root out name folder)
  set(root ${PROJECT_BINARY_DIR}/include-of/${name})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(REMOVE ${root}/${folder})  # a link left by a build of another checkout
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  set(${out} ${root} PARENT_SCOPE)
endfunction()

# fl_add_test(<name> SOURCES ... [DEPS ...] [LABELS ...] [TIMEOUT s] [ENV ...] [NO_RUN])
# One GoogleTest executable registered as one CTest test with labels; NO_RUN
# builds it only, for a test run several ways (fl_add_test_run).
function(fl_add_test name)
  cmake_parse_arguments(ARG "NO_RUN" "TIMEOUT" "SOURCES;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  fl_target_warnings(${name})
  if(NOT ARG_NO_RUN)
    fl_add_test_run(${name} ${name} LABELS ${ARG_LABELS} TIMEOUT "${ARG_TIMEOUT}" ENV ${ARG_ENV})
  endif()
endfunction()

# fl_add_test_run(<ctest-name> <executable> [ARGS ...] [LABELS ...] [TIMEOUT s] [ENV ...] [SKIP_REGEX re])
# One CTest test that runs a test executable, with the common environment.
function(fl_add_test_run test exe)
  cmake_parse_arguments(ARG "" "TIMEOUT;SKIP_REGEX" "ARGS;LABELS;ENV" ${ARGN})
  add_test(NAME ${test} COMMAND ${exe} ${ARG_ARGS})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${test} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "FAULTLINE_SOURCE_DIR=${PROJECT_SOURCE_DIR};FAULTLINE_BINARY_DIR=${PROJECT_BINARY_DIR};${ARG_ENV}")
  if(ARG_SKIP_REGEX)
    set_tests_properties(${test} PROPERTIES SKIP_REGULAR_EXPRESSION "${ARG_SKIP_REGEX}")
  endif()
endfunction()
