// Where the trainer's code meets differences between LibTorch versions (1.13
// and 2.x), and a check that the headers compiled are the LibTorch linked.
#pragma once

// What comm.cc uses of c10d, read in 1.13's and 2.13's headers:
// - ProcessGroupGloo/NCCL derive from c10d::ProcessGroup in 1.13 and from
//   c10d::Backend in 2.x, with the same collective signatures: comm.cc is a
//   template over the class, so neither base is named.
// - ProcessGroupGloo::Options::create(timeout), ->devices, ->threads and
//   createDeviceForInterface/createDeviceForHostname/createDefaultDevice: the same.
// - TCPStoreOptions: port, isServer, numWorkers, waitWorkers, timeout are the
//   same. 2.x adds useLibUV, left at its default (true), as torch.distributed's
//   env:// does.
// - Work::wait() blocks and rethrows the collective's error in both.
// No #if is needed as of 2.13; a difference that appears goes here, on
// TORCH_VERSION_MAJOR/MINOR.
#include <torch/version.h>

// CMake passes FAULTLINE_TORCH_MAJOR/MINOR from find_package(Torch): another
// LibTorch's header found first on the include path (Debian's are in
// /usr/include) fails the build here, not the trainer at run time.
#if defined(FAULTLINE_TORCH_MAJOR) && \
    (TORCH_VERSION_MAJOR != FAULTLINE_TORCH_MAJOR || TORCH_VERSION_MINOR != FAULTLINE_TORCH_MINOR)
#error "torch/version.h is not the version of the LibTorch this trainer links: check the include order"
#endif
