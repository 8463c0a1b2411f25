# Builds the CUDA reference trainer alone, against the CUDA torch of a given
# Python, on a machine that has neither Debian's packages nor the venvs of
# ci/deps (an offline GPU runner whose image carries its own torch):
#
#   cmake -DPYTHON=<python with a CUDA torch> [-DBUILD_DIR=build] -P cmake/BuildCudaTrainer.cmake
#
# The trainer needs only fl::probe and header-only libraries beside LibTorch
# (nlohmann_json, tl-expected, gloo's headers); a machine without them in its
# system paths names a prefix holding them in the environment's
# CMAKE_PREFIX_PATH. The trainer lands in <BUILD_DIR>/reference-trainer as
# faultline-trainer-torch<MAJOR>.<MINOR>-cuda, the name the top-level build
# gives it; the path is written to <BUILD_DIR>/reference-trainer/cuda-trainer.path.
# Fails, saying why, where the torch has no CUDA or the build fails.
cmake_minimum_required(VERSION 3.25)
if(NOT PYTHON)
  message(FATAL_ERROR "BuildCudaTrainer: pass -DPYTHON=<a python whose torch is a CUDA build>")
endif()
if(NOT BUILD_DIR)
  set(BUILD_DIR build)
endif()
get_filename_component(src "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
get_filename_component(BUILD_DIR "${BUILD_DIR}" ABSOLUTE)
list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")
if(NOT FAULTLINE_CUDA_TOOLKIT)
  set(FAULTLINE_CUDA_TOOLKIT /usr/local/cuda)
endif()
if(NOT FAULTLINE_TORCH_CUDA_ARCH_LIST)
  set(FAULTLINE_TORCH_CUDA_ARCH_LIST "9.0")
endif()
include(FaultlineTorchLocate)

fl_find_torch2("" "${PYTHON}" root why python)
if(why)
  message(FATAL_ERROR "BuildCudaTrainer: ${why}")
endif()
if(NOT EXISTS "${root}/lib/libtorch_cuda.so")
  message(FATAL_ERROR "BuildCudaTrainer: the torch of ${PYTHON} (${root}) has no CUDA (lib/libtorch_cuda.so)")
endif()
if(NOT FAULTLINE_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "BuildCudaTrainer: gloo's headers (gloo/rendezvous/store.h) are in no system path nor under CMAKE_PREFIX_PATH")
endif()
fl_torch_version("${root}" version)
if(NOT version MATCHES "^2\\.([0-9]+)")
  message(FATAL_ERROR "BuildCudaTrainer: the LibTorch in ${root} is ${version}, not 2.x")
endif()
set(suffix "torch2.${CMAKE_MATCH_1}-cuda")
set(bin_dir "${BUILD_DIR}/reference-trainer/${suffix}")
file(MAKE_DIRECTORY "${BUILD_DIR}/reference-trainer")
set(args "")
fl_cuda_args("${root}" args why)
if(why)
  message(FATAL_ERROR "BuildCudaTrainer: ${why}")
endif()
# fl_cuda_args escapes the ;-list of include directories for ExternalProject's
# cache arguments. No command-line argument can carry a list through
# execute_process, so that one goes in an initial cache file.
set(init "${BUILD_DIR}/reference-trainer/${suffix}-init.cmake")
set(plain "")
file(WRITE "${init}" "")
foreach(arg IN LISTS args)
  if(arg MATCHES "^-DFAULTLINE_CUDA_INCLUDE_DIRS:STRING=(.*)$")
    string(REPLACE "\\;" ";" dirs "${CMAKE_MATCH_1}")
    file(APPEND "${init}" "set(FAULTLINE_CUDA_INCLUDE_DIRS \"${dirs}\" CACHE STRING \"\")\n")
  else()
    list(APPEND plain "${arg}")
  endif()
endforeach()
fl_trainer_subbuild_args("${root}" ${suffix} "${BUILD_DIR}/reference-trainer" common)
message(STATUS "BuildCudaTrainer: faultline-trainer-${suffix} against LibTorch ${version} (${root}) in ${bin_dir}")
set(generator "")
find_program(ninja ninja)
if(ninja)
  set(generator -G Ninja)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${src}" -B "${bin_dir}" ${generator}
    -C "${init}" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${common} ${plain}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "BuildCudaTrainer: configuring ${bin_dir} failed (${rc})")
endif()
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
execute_process(COMMAND ${CMAKE_COMMAND} --build "${bin_dir}" -j ${cores} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "BuildCudaTrainer: building ${bin_dir} failed (${rc})")
endif()
set(trainer "${BUILD_DIR}/reference-trainer/faultline-trainer-${suffix}")
if(NOT EXISTS "${trainer}")
  message(FATAL_ERROR "BuildCudaTrainer: the build left no ${trainer}")
endif()
file(WRITE "${BUILD_DIR}/reference-trainer/cuda-trainer.path" "${trainer}\n")
message(STATUS "BuildCudaTrainer: ${trainer}")
