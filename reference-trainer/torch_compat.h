// The one place the trainer's code differs between LibTorch versions (1.13,
// 2.x), and a check that the headers compiled against are those of the
// LibTorch linked: CMake passes FAULTLINE_TORCH_MAJOR/MINOR from
// find_package(Torch), and a stray header from another LibTorch on the include
// path (Debian's sit in /usr/include) fails here, not at run time.
#pragma once

#include <torch/version.h>

#if defined(FAULTLINE_TORCH_MAJOR) && \
    (TORCH_VERSION_MAJOR != FAULTLINE_TORCH_MAJOR || TORCH_VERSION_MINOR != FAULTLINE_TORCH_MINOR)
#error "torch/version.h is not the version of the LibTorch this trainer links: check the include order"
#endif
