// Text made safe for XML and HTML: escaped, and stripped of the characters
// XML 1.0 forbids (Jenkins and GitLab reject a JUnit file that has them).
#pragma once

#include <string>

namespace faultline::reports {

// Removes C0 controls other than tab/newline/CR, U+FFFE/U+FFFF and invalid
// UTF-8 (replaced by U+FFFD).
std::string stripForbidden(const std::string& in);
// stripForbidden, then & < > " ' escaped: safe in element text and attributes.
std::string escapeXml(const std::string& in);

}  // namespace faultline::reports
