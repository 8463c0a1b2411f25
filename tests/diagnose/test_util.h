// Helpers shared by the diagnosis tests: fixture paths, file reading, and a
// run directory's diagnosis as report.json would show it.
#pragma once

#include <cstdlib>
#include <string>

#include "harness/assemble/assemble.h"
#include "harness/diagnose/diagnose.h"
#include "tests/support/files.h"

namespace faultline::diagnose::testing {

inline std::string sourceDir() {
  const char* s = std::getenv("FAULTLINE_SOURCE_DIR");
  return s ? s : FAULTLINE_TEST_SOURCE_DIR;
}

inline std::string fixtureDir() { return sourceDir() + "/tests/fixtures/diagnose"; }

inline std::string fixture(const std::string& rel) { return fixtureDir() + "/" + rel; }

// torch 1.13's ConnectionResetError when a DataLoader worker dies as the main
// process takes a tensor's fd from it (as recorded in a spawn@1.13 run).
inline constexpr const char* kLostWorkerTraceback =
    "Traceback (most recent call last):\n"
    "  File \"/w/train.py\", line 158, in main\n"
    "    for step, (xb, yb) in enumerate(loader):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1120, in _try_get_data\n"
    "    data = self._data_queue.get(timeout=timeout)\n"
    "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/reductions.py\", line 305, in rebuild_storage_fd\n"
    "    fd = df.detach()\n"
    "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 378, in _recv\n"
    "    chunk = read(handle, remaining)\n"
    "ConnectionResetError: [Errno 104] Connection reset by peer\n";

// The whole file (tests/support).
using faultline::testing::readFile;

// The diagnosis of DIR alone (no supervisor record, no scenario), assembled into a report.
inline Result<Report> diagnosedReport(const std::string& dir) {
  auto d = diagnoseRun(dir);
  if (!d) return tl::unexpected(d.error());
  assemble::RunValues values;
  values.diagnosis = std::move(*d);
  return assemble::assembleReport(values, {});
}

}  // namespace faultline::diagnose::testing
