# Helpers that create every faultline target the same way: warnings, include root, alias.

# Warnings for first-party code; third-party headers come in as SYSTEM includes.
function(fl_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(FAULTLINE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# fl_add_library(<folder-name> SOURCES ... [DEPS ...] [PUBLIC_INCLUDE dir])
# Creates fl_<name> with alias fl::<name>; includes resolve from the repo root.
function(fl_add_library name)
  cmake_parse_arguments(ARG "SHARED" "PUBLIC_INCLUDE" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(ARG_SHARED)
    add_library(fl_${name} SHARED ${ARG_SOURCES})
  else()
    add_library(fl_${name} STATIC ${ARG_SOURCES})
  endif()
  add_library(fl::${name} ALIAS fl_${name})
  target_include_directories(fl_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  if(ARG_PUBLIC_INCLUDE)
    target_include_directories(fl_${name} PUBLIC ${ARG_PUBLIC_INCLUDE})
  endif()
  target_link_libraries(fl_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  fl_target_warnings(fl_${name})
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
