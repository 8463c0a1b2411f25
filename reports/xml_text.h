// Text made safe for XML, HTML and Markdown tables: escaped, and stripped of
// the characters XML 1.0 forbids (Jenkins and GitLab reject a JUnit file that has them).
#pragma once

#include <string>
#include <vector>

namespace faultline::reports {

// Removes C0 controls other than tab/newline/CR, U+FFFE/U+FFFF and invalid
// UTF-8 (replaced by U+FFFD).
std::string stripForbidden(const std::string& in);
// stripForbidden, then & < > " ' escaped: safe in element text and attributes.
std::string escapeXml(const std::string& in);
// The first line of `s` as a Markdown table cell: stripForbidden, then | \ [ ]
// escaped (no cell break, no link or image), < > as entities (no HTML) and
// backticks neutralised (no code span that swallows the row).
std::string markdownCell(const std::string& s);
// A relative path as a URL (an href, a Markdown link target): every byte but
// [A-Za-z0-9._~/-] percent-encoded, so no scheme ("javascript:"), quote or
// parenthesis of a hostile run directory name survives as syntax.
std::string urlPath(const std::string& path);
// At most the last `max_bytes` of `s`, starting on a UTF-8 character boundary.
std::string utf8Tail(const std::string& s, size_t max_bytes);
// The first line of `s` (stripForbidden) cut to at most `max_chars`
// characters, "…" ending a cut one: a matrix cell's one line, never a
// paragraph and never half a UTF-8 character.
std::string shortLine(const std::string& s, size_t max_chars);
// Ranks as the reports list them, in the order given: "0,2,3" (`sep` ",").
std::string rankList(const std::vector<int>& ranks, const std::string& sep = ",");

}  // namespace faultline::reports
