// Text made safe for XML, HTML and Markdown tables: escaped, and stripped of
// the characters XML 1.0 forbids (Jenkins and GitLab reject a JUnit file that has them).
#pragma once

#include <string>

namespace faultline::reports {

// Removes C0 controls other than tab/newline/CR, U+FFFE/U+FFFF and invalid
// UTF-8 (replaced by U+FFFD).
std::string stripForbidden(const std::string& in);
// stripForbidden, then & < > " ' escaped: safe in element text and attributes.
std::string escapeXml(const std::string& in);
// The first line of `s` as a Markdown table cell: | escaped, markup and
// backticks neutralised.
std::string markdownCell(const std::string& s);

}  // namespace faultline::reports
