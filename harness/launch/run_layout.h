// Making the run directory tree (its layout: harness/model/run_layout.h).
#pragma once

#include <string>

#include "harness/model/error.h"
#include "harness/model/run_layout.h"

namespace faultline::launch {

// mkdir -p of OUT, OUT/ranks and, if given, OUT/ranks/0..nranks-1.
Result<void> createRunDirs(const RunLayout& layout, int nranks);
Result<void> createLauncherDir(const RunLayout& layout);
// Removes what an earlier run left in OUT (RunLayout::previousRunDirs and
// previousRunFiles). Nothing else in OUT is touched.
Result<void> clearPreviousRun(const RunLayout& layout);

// mkdir -p; fails with kIo naming the path.
Result<void> makeDirs(const std::string& path);
// Makes a path absolute against the current directory (ranks may chdir).
std::string absolutePath(const std::string& path);

}  // namespace faultline::launch
