// What to do about each finding kind: shown beside its evidence in report.md
// and report.html, and listed in docs/USING.md. Looked up by kind at render
// time, so a report written before a fix was worded shows it too.
#pragma once

#include <string_view>

#include "harness/model/report.h"

namespace faultline::reports {

// The fix for a finding of this kind; empty for a kind that is never a finding.
std::string_view findingFix(Kind k);
// This finding's own fix where it has one (an unsynced metric's, in its
// framework's words), else its kind's.
std::string_view findingFix(const Finding& f);

}  // namespace faultline::reports
