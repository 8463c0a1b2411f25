# The reference trainer a second time, against a LibTorch 2.x (by default the
# CPU wheel in the torch-2.13 venv that ci/deps creates). Two find_package(Torch)
# of different versions cannot share one CMake project, so this is a sub-build
# of this same source tree with FAULTLINE_TRAINER_ONLY (fl::probe and the
# trainer) and the other LibTorch first on CMAKE_PREFIX_PATH; one
# `cmake --build` of the top-level tree builds both.
#
# Where no LibTorch 2.x is found, the second trainer is skipped with a message
# saying why, and its tests report themselves skipped with the same reason.
#
# Sets, in the scope that includes it (reference-trainer/) and its parent (the
# top level, which adds tests/):
#   FAULTLINE_TRAINER2_SUFFIX       torch<MAJOR>.<MINOR>, or torch2 when not built
#   FAULTLINE_TRAINER2_BIN          build/reference-trainer/faultline-trainer-<suffix>
#   FAULTLINE_TRAINER2_UNAVAILABLE  why it is not built; empty when it is
#   FAULTLINE_TRAINER2_HAVE_NCCL    1 when that LibTorch has CUDA (libtorch_cuda), else 0
#   FAULTLINE_TRAINER2_TORCHRUN     the torchrun of the same PyTorch, when there is one

option(FAULTLINE_TRAINER_TORCH2 "Also build the reference trainer against a LibTorch 2.x" ON)
set(FAULTLINE_TORCH2_PREFIX "" CACHE PATH
  "LibTorch 2.x for the second trainer: its install prefix (a libtorch/ or a wheel's torch/ folder) or the wheel's torch.utils.cmake_prefix_path; empty: ask the torch-2.13 venv's python")

# Sets <out_root> to the LibTorch install prefix, or <out_why> to why there is none.
function(fl_find_torch2 out_root out_why)
  set(${out_root} "" PARENT_SCOPE)
  set(fl_python "" PARENT_SCOPE)
  set(prefix "${FAULTLINE_TORCH2_PREFIX}")
  if(NOT prefix)
    # ci/deps puts its venvs in $FAULTLINE_OPT, /opt/faultline by default.
    set(opt "/opt/faultline")
    if(DEFINED ENV{FAULTLINE_OPT})
      set(opt "$ENV{FAULTLINE_OPT}")
    endif()
    set(python "${opt}/torch-2.13/bin/python")
    if(NOT EXISTS "${python}")
      set(${out_why} "no torch venv: ${python} does not exist (ci/deps creates it, or pass -DFAULTLINE_TORCH2_PREFIX=<LibTorch 2.x>)" PARENT_SCOPE)
      return()
    endif()
    execute_process(COMMAND "${python}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      RESULT_VARIABLE rc OUTPUT_VARIABLE prefix ERROR_VARIABLE err
      OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 300)
    if(NOT rc EQUAL 0)
      string(REGEX REPLACE ".*\n([^\n]+)\n*$" "\\1" err "\n${err}")
      set(${out_why} "${python} cannot import torch (${rc}): ${err}" PARENT_SCOPE)
      return()
    endif()
    set(fl_python "${python}" PARENT_SCOPE)
  endif()
  # Either form names one install: <root>/share/cmake/Torch/TorchConfig.cmake.
  get_filename_component(prefix "${prefix}" ABSOLUTE)
  if(EXISTS "${prefix}/share/cmake/Torch/TorchConfig.cmake")
    set(root "${prefix}")
  elseif(EXISTS "${prefix}/Torch/TorchConfig.cmake")
    get_filename_component(root "${prefix}/../.." ABSOLUTE)
  else()
    set(${out_why} "no LibTorch in ${prefix}: neither share/cmake/Torch/TorchConfig.cmake nor Torch/TorchConfig.cmake" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${root}/include/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
    set(${out_why} "the LibTorch in ${root} has no c10d headers (include/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp)" PARENT_SCOPE)
    return()
  endif()
  set(${out_root} "${root}" PARENT_SCOPE)
endfunction()

# The version find_package(Torch) will report, from the same file it reads.
function(fl_torch_version root out_version)
  file(STRINGS "${root}/share/cmake/Torch/TorchConfigVersion.cmake" line REGEX "set\\(PACKAGE_VERSION \"")
  string(REGEX REPLACE ".*PACKAGE_VERSION \"([^\"]*)\".*" "\\1" version "${line}")
  set(${out_version} "${version}" PARENT_SCOPE)
endfunction()

set(fl_why "")
set(fl_root "")
if(NOT FAULTLINE_TRAINER_TORCH2)
  set(fl_why "FAULTLINE_TRAINER_TORCH2 is OFF")
else()
  fl_find_torch2(fl_root fl_why)
endif()
set(fl_suffix torch2)
if(fl_root)
  fl_torch_version("${fl_root}" fl_version)
  if(NOT fl_version MATCHES "^([0-9]+)\\.([0-9]+)")
    set(fl_why "cannot read the version of the LibTorch in ${fl_root} from share/cmake/Torch/TorchConfigVersion.cmake")
  elseif(NOT CMAKE_MATCH_1 EQUAL 2)
    set(fl_why "the LibTorch in ${fl_root} is ${fl_version}, not 2.x")
  elseif("torch${CMAKE_MATCH_1}.${CMAKE_MATCH_2}" STREQUAL FAULTLINE_TORCH_SUFFIX)
    set(fl_why "the LibTorch in ${fl_root} is ${fl_version}, the version the main trainer is built against")
  else()
    set(fl_suffix "torch${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  endif()
endif()
# The wheel ships c10d's headers but not gloo's, which ProcessGroupGloo.hpp
# includes. Gloo's own headers (Debian's libgloo-dev) serve for the types: only
# pointers and shared_ptrs to gloo objects cross into the wheel's libtorch_cpu,
# where gloo's code is. They go after LibTorch's include directories.
find_path(FAULTLINE_GLOO_INCLUDE_DIR gloo/rendezvous/store.h DOC "gloo's headers, for the LibTorch 2.x trainer")
if(NOT fl_why AND NOT FAULTLINE_GLOO_INCLUDE_DIR)
  set(fl_why "gloo's headers (gloo/rendezvous/store.h, Debian's libgloo-dev) are missing; the LibTorch 2.x c10d headers include them")
endif()

set(FAULTLINE_TRAINER2_SUFFIX "${fl_suffix}")
set(FAULTLINE_TRAINER2_BIN "${CMAKE_CURRENT_BINARY_DIR}/faultline-trainer-${fl_suffix}")
# The reason travels in a test's ENVIRONMENT, a ;-list.
string(REPLACE ";" "," FAULTLINE_TRAINER2_UNAVAILABLE "${fl_why}")
set(FAULTLINE_TRAINER2_HAVE_NCCL 0)
if(fl_root AND EXISTS "${fl_root}/lib/libtorch_cuda.so")
  set(FAULTLINE_TRAINER2_HAVE_NCCL 1)
endif()
# A wheel's torchrun is in its venv's bin/, beside the python that found it
# (site-packages/torch is <venv>/lib/pythonX.Y/site-packages/torch).
set(FAULTLINE_TRAINER2_TORCHRUN "")
if(fl_root)
  set(fl_bin "${fl_root}/../../../../bin")
  if(fl_python)
    get_filename_component(fl_bin "${fl_python}" DIRECTORY)
  endif()
  if(EXISTS "${fl_bin}/torchrun")
    get_filename_component(FAULTLINE_TRAINER2_TORCHRUN "${fl_bin}/torchrun" ABSOLUTE)
  endif()
endif()
foreach(v FAULTLINE_TRAINER2_SUFFIX FAULTLINE_TRAINER2_BIN FAULTLINE_TRAINER2_UNAVAILABLE FAULTLINE_TRAINER2_HAVE_NCCL
    FAULTLINE_TRAINER2_TORCHRUN)
  set(${v} "${${v}}" PARENT_SCOPE)
endforeach()

if(fl_why)
  message(STATUS "Reference trainer against LibTorch 2.x: skipped: ${fl_why}")
  return()
endif()
message(STATUS "Reference trainer against LibTorch 2.x: faultline-trainer-${fl_suffix} against LibTorch ${fl_version} (${fl_root}), a sub-build in ${CMAKE_CURRENT_BINARY_DIR}/${fl_suffix}")

include(ExternalProject)
# CMAKE_PREFIX_PATH, not only Torch_DIR: TorchConfig.cmake finds libc10 with
# find_library(... PATHS <root>/lib), which searches the system directories
# (Debian's libc10.so) first unless <root> is on the prefix path.
set(fl_args
  -DCMAKE_BUILD_TYPE:STRING=${CMAKE_BUILD_TYPE}
  -DCMAKE_C_COMPILER:FILEPATH=${CMAKE_C_COMPILER}
  -DCMAKE_CXX_COMPILER:FILEPATH=${CMAKE_CXX_COMPILER}
  -DCMAKE_EXPORT_COMPILE_COMMANDS:BOOL=ON
  -DCMAKE_PREFIX_PATH:PATH=${fl_root}
  -DTorch_DIR:PATH=${fl_root}/share/cmake/Torch
  -DFAULTLINE_TRAINER_ONLY:BOOL=ON
  -DFAULTLINE_TRAINER_EXPECT_SUFFIX:STRING=${fl_suffix}
  -DFAULTLINE_TRAINER_ALIAS_DIR:PATH=${CMAKE_CURRENT_BINARY_DIR}
  -DFAULTLINE_GLOO_INCLUDE_DIR:PATH=${FAULTLINE_GLOO_INCLUDE_DIR}
  -DFAULTLINE_WERROR:BOOL=${FAULTLINE_WERROR}
  -DFAULTLINE_SANITIZE:STRING=${FAULTLINE_SANITIZE})
if(FAULTLINE_CCACHE)
  list(APPEND fl_args -DFAULTLINE_CCACHE:FILEPATH=${FAULTLINE_CCACHE})
endif()
ExternalProject_Add(faultline-trainer-torch2
  SOURCE_DIR ${PROJECT_SOURCE_DIR}
  BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/${fl_suffix}
  CMAKE_CACHE_ARGS ${fl_args}
  # The sub-build's own ninja decides what is out of date.
  BUILD_ALWAYS ON
  INSTALL_COMMAND ""
  USES_TERMINAL_CONFIGURE ON
  USES_TERMINAL_BUILD ON
  BUILD_BYPRODUCTS ${FAULTLINE_TRAINER2_BIN})
# After the main trainer: its two LibTorch translation units and the
# sub-build's, the heaviest of the tree, then do not all compile at once on a
# small machine.
add_dependencies(faultline-trainer-torch2 faultline-trainer)
