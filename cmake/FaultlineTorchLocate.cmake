# Where a LibTorch 2.x is and what building the reference trainer against it
# takes: shared by the sub-builds of FaultlineTorch2Trainer.cmake and by the
# script cmake/BuildCudaTrainer.cmake (a CUDA trainer built alone, against the
# torch of a machine that has no Debian packages: ci/nightly-gpu's
# FAULTLINE_CUDA_PYTHON). Uses FAULTLINE_CUDA_TOOLKIT and
# FAULTLINE_TORCH_CUDA_ARCH_LIST, which the includer sets.

# Sets <out_root> to the LibTorch install prefix, or <out_why> to why there is
# none; <out_python> to the venv python asked, if one was.
function(fl_find_torch2 prefix python out_root out_why out_python)
  set(${out_root} "" PARENT_SCOPE)
  set(${out_python} "" PARENT_SCOPE)
  if(NOT prefix)
    if(NOT EXISTS "${python}")
      set(${out_why} "no torch venv: ${python} does not exist (ci/deps creates it, or pass the LibTorch prefix)" PARENT_SCOPE)
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
    set(${out_python} "${python}" PARENT_SCOPE)
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

# The wheel ships c10d's headers but not gloo's, which ProcessGroupGloo.hpp
# includes. Gloo's own headers (Debian's libgloo-dev) serve for the types: only
# pointers and shared_ptrs to gloo objects cross into the wheel's libtorch_cpu,
# where gloo's code is. They go after LibTorch's include directories.
find_path(FAULTLINE_GLOO_INCLUDE_DIR gloo/rendezvous/store.h DOC "gloo's headers, for the LibTorch 2.x trainers")

# The CUDA wheel's LibTorch against a CUDA toolkit that has only the compiler
# and runtime (as /usr/local/cuda here): the CUDA libraries' headers and
# nvrtc come from the wheel's own nvidia-* packages, beside torch/ in
# site-packages (nvidia/cu13/{include,lib}, nvidia/nccl/include). Appends the
# sub-build's cache arguments to <args>, or sets <out_why>.
function(fl_cuda_args root args out_why)
  get_filename_component(site "${root}/.." ABSOLUTE)
  file(GLOB cu_dirs LIST_DIRECTORIES true "${site}/nvidia/cu[0-9]*")
  list(SORT cu_dirs)
  list(POP_BACK cu_dirs cu)
  if(NOT cu OR NOT EXISTS "${cu}/include/cusparse.h")
    set(${out_why} "the CUDA LibTorch in ${root} has no nvidia/cuNN/include/cusparse.h beside it (the nvidia-* wheels)" PARENT_SCOPE)
    return()
  endif()
  file(GLOB nvrtc "${cu}/lib/libnvrtc.so.[0-9]*")
  list(FILTER nvrtc EXCLUDE REGEX "builtins|alt")
  if(NOT nvrtc)
    set(${out_why} "no libnvrtc.so.N in ${cu}/lib" PARENT_SCOPE)
    return()
  endif()
  list(GET nvrtc 0 nvrtc)
  if(NOT EXISTS "${FAULTLINE_CUDA_TOOLKIT}/bin/nvcc")
    set(${out_why} "no CUDA toolkit: ${FAULTLINE_CUDA_TOOLKIT}/bin/nvcc does not exist (FAULTLINE_CUDA_TOOLKIT)" PARENT_SCOPE)
    return()
  endif()
  set(includes "${cu}/include")
  if(EXISTS "${site}/nvidia/nccl/include/nccl.h")
    list(APPEND includes "${site}/nvidia/nccl/include")
  endif()
  string(REPLACE ";" "\\;" includes "${includes}")
  set(${args} ${${args}}
    -DCUDA_TOOLKIT_ROOT_DIR:PATH=${FAULTLINE_CUDA_TOOLKIT}
    -DTORCH_CUDA_ARCH_LIST:STRING=${FAULTLINE_TORCH_CUDA_ARCH_LIST}
    -DCUDA_nvrtc_LIBRARY:FILEPATH=${nvrtc}
    "-DFAULTLINE_CUDA_INCLUDE_DIRS:STRING=${includes}" PARENT_SCOPE)
endfunction()


# Sets <out_args> to the cache arguments every trainer sub-build takes: the
# LibTorch in <root>, the <suffix> it must report, and the <alias_dir> its
# trainer is linked into. CMAKE_PREFIX_PATH, not only
# Torch_DIR: TorchConfig.cmake finds libc10 with find_library(... PATHS
# <root>/lib), which searches the system directories (Debian's libc10.so)
# first unless <root> is on the prefix path.
function(fl_trainer_subbuild_args root suffix alias_dir out_args)
  set(${out_args}
    -DCMAKE_EXPORT_COMPILE_COMMANDS:BOOL=ON
    -DCMAKE_PREFIX_PATH:PATH=${root}
    -DTorch_DIR:PATH=${root}/share/cmake/Torch
    -DFAULTLINE_TRAINER_ONLY:BOOL=ON
    -DFAULTLINE_TRAINER_EXPECT_SUFFIX:STRING=${suffix}
    -DFAULTLINE_TRAINER_ALIAS_DIR:PATH=${alias_dir}
    -DFAULTLINE_GLOO_INCLUDE_DIR:PATH=${FAULTLINE_GLOO_INCLUDE_DIR}
    PARENT_SCOPE)
endfunction()
