// `faultline explain`'s text: the root cause and its layers, each rank's role,
// the findings and the teardown of a run, for a terminal.
#pragma once

#include <string>

#include "harness/model/report.h"

namespace faultline::reports {

std::string explainText(const Report& r, const std::string& run_dir);

}  // namespace faultline::reports
