// The frame every HTML page of the reports shares: the stylesheet, the
// Content-Security-Policy that lets no script run, the verdict badge.
// Internal to fl::reports (html_report.cc, suite_html.cc).
#pragma once

#include <string>

#include "harness/model/verdict.h"

namespace faultline::reports {

// A whole page: `title` is escaped; `content` is markup the caller built (and
// escaped). `extra_style` is CSS appended to the page's stylesheet: it must
// be built from the renderer's own text only, never from a report's (the CSP
// allows inline style, so a report's text there could restyle the page).
std::string htmlPage(const std::string& title, const std::string& content, const std::string& extra_style = "");

// <span class="verdict v-NAME">NAME</span>, coloured by the shared stylesheet.
std::string verdictBadge(Verdict v);

}  // namespace faultline::reports
