# The reference trainer again, against other LibTorch 2.x builds: the CPU
# wheel in the torch-2.13 venv (variant "torch2"), and the CUDA wheel in the
# cuda/torch-2.14 venv (variant "cuda": the NCCL path, compiled and linked on
# every build, with or without a GPU). ci/deps creates both venvs. Two
# find_package(Torch) of different versions cannot share one CMake project,
# so each is a sub-build of this same source tree with FAULTLINE_TRAINER_ONLY
# (fl::probe and the trainer) and its LibTorch first on CMAKE_PREFIX_PATH;
# one `cmake --build` of the top-level tree builds them all.
#
# Where a variant's LibTorch is not found, it is skipped with a message saying
# why, and its tests report themselves skipped with the same reason.
#
# Sets, in the scope that includes it (reference-trainer/) and its parent (the
# top level, which adds tests/):
#   FAULTLINE_TRAINER_VARIANTS       the variants tried: torch2 cuda
# and for each variant V of them:
#   FAULTLINE_TRAINER_<V>_SUFFIX       torch<MAJOR>.<MINOR>[-cuda], or V when not built
#   FAULTLINE_TRAINER_<V>_BIN          build/reference-trainer/faultline-trainer-<suffix>
#   FAULTLINE_TRAINER_<V>_UNAVAILABLE  why it is not built; empty when it is
#   FAULTLINE_TRAINER_<V>_HAVE_NCCL    1 when that LibTorch has CUDA (libtorch_cuda), else 0
#   FAULTLINE_TRAINER_<V>_TORCHRUN     the torchrun of the same PyTorch, when there is one
#   FAULTLINE_TRAINER_<V>_TARGET       the sub-build's target
# (V upper-case: TORCH2, CUDA.)

option(FAULTLINE_TRAINER_TORCH2 "Also build the reference trainer against a LibTorch 2.x (CPU)" ON)
set(FAULTLINE_TORCH2_PREFIX "" CACHE PATH
  "LibTorch 2.x for the second trainer: its install prefix (a libtorch/ or a wheel's torch/ folder) or the wheel's torch.utils.cmake_prefix_path; empty: ask the torch-2.13 venv's python")
option(FAULTLINE_TRAINER_CUDA "Also build the reference trainer against a CUDA LibTorch 2.x (the NCCL path)" ON)
set(FAULTLINE_CUDA_TORCH_PREFIX "" CACHE PATH
  "CUDA LibTorch 2.x for the NCCL trainer, as FAULTLINE_TORCH2_PREFIX; empty: ask the cuda/torch-2.14 venv's python")
set(FAULTLINE_CUDA_TOOLKIT "/usr/local/cuda" CACHE PATH "the CUDA toolkit the CUDA LibTorch's CMake config looks for (nvcc, cudart)")
# Caffe2's cuda.cmake otherwise compiles and runs a program to ask the GPUs
# present for their architecture, which fails on a machine without one. The
# trainer has no kernels of its own; 9.0 is the H200 of the nightly GPU job.
set(FAULTLINE_TORCH_CUDA_ARCH_LIST "9.0" CACHE STRING "TORCH_CUDA_ARCH_LIST for the CUDA trainer")


include(FaultlineTorchLocate)

# fl_trainer_variant(<V> ENABLED <bool> PREFIX <prefix> PYTHON <venv python> [CUDA] [AFTER <target>])
function(fl_trainer_variant v)
  cmake_parse_arguments(ARG "CUDA" "ENABLED;PREFIX;PYTHON;AFTER" "" ${ARGN})
  string(TOUPPER "${v}" V)
  set(why "")
  set(root "")
  set(python "")
  if(NOT ARG_ENABLED)
    set(why "FAULTLINE_TRAINER_${V} is OFF")
  else()
    fl_find_torch2("${ARG_PREFIX}" "${ARG_PYTHON}" root why python)
  endif()
  set(suffix ${v})
  set(nccl 0)
  if(root AND EXISTS "${root}/lib/libtorch_cuda.so")
    set(nccl 1)
  endif()
  if(root)
    fl_torch_version("${root}" version)
    if(NOT version MATCHES "^([0-9]+)\\.([0-9]+)")
      set(why "cannot read the version of the LibTorch in ${root} from share/cmake/Torch/TorchConfigVersion.cmake")
    elseif(NOT CMAKE_MATCH_1 EQUAL 2)
      set(why "the LibTorch in ${root} is ${version}, not 2.x")
    else()
      set(suffix "torch${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
      if(nccl)
        string(APPEND suffix "-cuda")
      endif()
      if(suffix STREQUAL FAULTLINE_TORCH_SUFFIX)
        set(why "the LibTorch in ${root} is ${version}, the version the main trainer is built against")
      elseif(ARG_CUDA AND NOT nccl)
        set(why "the LibTorch in ${root} has no CUDA (lib/libtorch_cuda.so)")
      elseif(NOT ARG_CUDA AND nccl)
        set(why "the LibTorch in ${root} is a CUDA build; the CPU variant wants a CPU one")
      endif()
    endif()
  endif()
  if(NOT why AND NOT FAULTLINE_GLOO_INCLUDE_DIR)
    set(why "gloo's headers (gloo/rendezvous/store.h, Debian's libgloo-dev) are missing; the LibTorch 2.x c10d headers include them")
  endif()
  set(extra_args "")
  if(NOT why AND ARG_CUDA)
    fl_cuda_args("${root}" extra_args why)
  endif()

  set(bin "${CMAKE_CURRENT_BINARY_DIR}/faultline-trainer-${suffix}")
  # The reason travels in a test's ENVIRONMENT, a ;-list.
  string(REPLACE ";" "," why_env "${why}")
  # A wheel's torchrun is in its venv's bin/, beside the python that found it
  # (site-packages/torch is <venv>/lib/pythonX.Y/site-packages/torch).
  set(torchrun "")
  if(root)
    set(venv_bin "${root}/../../../../bin")
    if(python)
      get_filename_component(venv_bin "${python}" DIRECTORY)
    endif()
    if(EXISTS "${venv_bin}/torchrun")
      get_filename_component(torchrun "${venv_bin}/torchrun" ABSOLUTE)
    endif()
  endif()
  set(target faultline-trainer-${v})
  set(FAULTLINE_TRAINER_${V}_SUFFIX "${suffix}" PARENT_SCOPE)
  set(FAULTLINE_TRAINER_${V}_BIN "${bin}" PARENT_SCOPE)
  set(FAULTLINE_TRAINER_${V}_UNAVAILABLE "${why_env}" PARENT_SCOPE)
  set(FAULTLINE_TRAINER_${V}_HAVE_NCCL "${nccl}" PARENT_SCOPE)
  set(FAULTLINE_TRAINER_${V}_TORCHRUN "${torchrun}" PARENT_SCOPE)
  set(FAULTLINE_TRAINER_${V}_TARGET "" PARENT_SCOPE)
  if(why)
    message(STATUS "Reference trainer variant ${v}: skipped: ${why}")
    return()
  endif()
  message(STATUS "Reference trainer variant ${v}: faultline-trainer-${suffix} against LibTorch ${version} (${root}), a sub-build in ${CMAKE_CURRENT_BINARY_DIR}/${suffix}")

  include(ExternalProject)
  fl_trainer_subbuild_args("${root}" ${suffix} "${CMAKE_CURRENT_BINARY_DIR}" args)
  list(APPEND args
    -DCMAKE_BUILD_TYPE:STRING=${CMAKE_BUILD_TYPE}
    -DCMAKE_C_COMPILER:FILEPATH=${CMAKE_C_COMPILER}
    -DCMAKE_CXX_COMPILER:FILEPATH=${CMAKE_CXX_COMPILER}
    -DFAULTLINE_WERROR:BOOL=${FAULTLINE_WERROR}
    -DFAULTLINE_SANITIZE:STRING=${FAULTLINE_SANITIZE}
    ${extra_args})
  if(FAULTLINE_CCACHE)
    list(APPEND args -DFAULTLINE_CCACHE:FILEPATH=${FAULTLINE_CCACHE})
  endif()
  ExternalProject_Add(${target}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR}/${suffix}
    CMAKE_CACHE_ARGS ${args}
    # The sub-build's own ninja decides what is out of date.
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    USES_TERMINAL_CONFIGURE ON
    USES_TERMINAL_BUILD ON
    BUILD_BYPRODUCTS ${bin})
  # One after the other: the LibTorch translation units are the heaviest of
  # the tree, and several at once do not fit a small machine.
  add_dependencies(${target} ${ARG_AFTER})
  set(FAULTLINE_TRAINER_${V}_TARGET "${target}" PARENT_SCOPE)
endfunction()

fl_trainer_variant(torch2 ENABLED ${FAULTLINE_TRAINER_TORCH2} PREFIX "${FAULTLINE_TORCH2_PREFIX}"
  PYTHON "${fl_opt}/torch-2.13/bin/python" AFTER faultline-trainer)
set(fl_after faultline-trainer)
if(FAULTLINE_TRAINER_TORCH2_TARGET)
  set(fl_after ${FAULTLINE_TRAINER_TORCH2_TARGET})
endif()
fl_trainer_variant(cuda ENABLED ${FAULTLINE_TRAINER_CUDA} PREFIX "${FAULTLINE_CUDA_TORCH_PREFIX}"
  PYTHON "${fl_opt}/cuda/torch-2.14/bin/python" CUDA AFTER ${fl_after})

set(FAULTLINE_TRAINER_VARIANTS torch2 cuda)
set(FAULTLINE_TRAINER_VARIANTS ${FAULTLINE_TRAINER_VARIANTS} PARENT_SCOPE)
foreach(v IN ITEMS TORCH2 CUDA)
  foreach(field SUFFIX BIN UNAVAILABLE HAVE_NCCL TORCHRUN TARGET)
    set(FAULTLINE_TRAINER_${v}_${field} "${FAULTLINE_TRAINER_${v}_${field}}" PARENT_SCOPE)
  endforeach()
endforeach()
