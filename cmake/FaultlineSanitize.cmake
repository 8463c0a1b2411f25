# Sanitizer builds of the whole tree (ci/test --sanitize address|thread).
# The flags go on every target defined after this file is included, so the
# faultline binary, the hostile fixture and the reference trainer that tests
# start as child processes are instrumented like the tests themselves.

set(FAULTLINE_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan), or empty")
set_property(CACHE FAULTLINE_SANITIZE PROPERTY STRINGS "" address thread)

# A fuzz build (tests/fuzz) is an ASan+UBSan build of the whole tree, with
# libFuzzer's coverage instrumentation on every translation unit, so the
# harness code under a fuzz target is guided and checked, not only the target.
set(fl_sanitize "${FAULTLINE_SANITIZE}")
if(FAULTLINE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FAULTLINE_FUZZ needs clang (libFuzzer), the C++ compiler is ${CMAKE_CXX_COMPILER_ID}: "
      "configure with -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(fl_sanitize STREQUAL "")
    set(fl_sanitize address)
  elseif(NOT fl_sanitize STREQUAL "address")
    message(FATAL_ERROR "FAULTLINE_FUZZ runs under ASan+UBSan, expected FAULTLINE_SANITIZE empty or address, got '${fl_sanitize}'")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
set(fl_coverage_flags "")
if(FAULTLINE_FUZZ)
  set(fl_coverage_flags -fsanitize=fuzzer-no-link)
endif()

set(FAULTLINE_SANITIZE_FLAGS "")
if(fl_sanitize STREQUAL "address")
  # UBSan findings stop the process like ASan ones: a report that does not end
  # the run is easy to miss in a child's stderr. Not `null`: the segfault
  # faults (the trainer's, the hostile fixture's, the probe tests') store
  # through a null pointer on purpose and must die of SIGSEGV; an accidental
  # null dereference still crashes and fails its test.
  set(FAULTLINE_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize=null -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
elseif(fl_sanitize STREQUAL "thread")
  set(FAULTLINE_SANITIZE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT fl_sanitize STREQUAL "")
  message(FATAL_ERROR "FAULTLINE_SANITIZE is '${fl_sanitize}', expected address, thread or empty")
endif()

if(FAULTLINE_SANITIZE_FLAGS)
  add_compile_options(${FAULTLINE_SANITIZE_FLAGS})
  add_link_options(${FAULTLINE_SANITIZE_FLAGS})
  # GCC's manual: "sanitizers tend to increase the rate of false positive
  # warnings, most notably those around -Wmaybe-uninitialized"; GCC 12 reports
  # some inside <regex> under -fsanitize=address. The plain build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

# fl_no_sanitize(<target>): builds <target> without the sanitizer flags. For
# code that is loaded into processes faultline does not build (an LD_PRELOAD
# library in a python3 rank): an instrumented library there would need the
# sanitizer runtime loaded first, which only an instrumented executable does.
# <target> must not link instrumented static libraries.
function(fl_no_sanitize target)
  if(NOT FAULTLINE_SANITIZE_FLAGS)
    return()
  endif()
  foreach(prop COMPILE_OPTIONS LINK_OPTIONS)
    get_target_property(opts ${target} ${prop})
    if(opts)
      list(REMOVE_ITEM opts ${FAULTLINE_SANITIZE_FLAGS} ${fl_coverage_flags})
      set_target_properties(${target} PROPERTIES ${prop} "${opts}")
    endif()
  endforeach()
endfunction()
