// XML/HTML escaping.
#include "reports/xml_text.h"

#include <vector>

#include "harness/model/utf8.h"

namespace faultline::reports {

std::string stripForbidden(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    const size_t len = utf8SequenceLength(s + i, n - i);
    // U+FFFE and U+FFFF are not XML characters.
    if (len == 3 && c == 0xef && s[i + 1] == 0xbf && (s[i + 2] == 0xbe || s[i + 2] == 0xbf)) {
      i += 3;
      continue;
    }
    if (len > 0) {
      out.append(in, i, len);
      i += len;
    } else {
      out.append("\xef\xbf\xbd");  // one per maximal subpart, as sanitizeUtf8
      i += utf8InvalidLength(s + i, n - i);
    }
  }
  return out;
}

std::string escapeXml(const std::string& in) {
  const std::string clean = stripForbidden(in);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string markdownCell(const std::string& s) {
  std::string out;
  for (char c : stripForbidden(s.substr(0, s.find('\n')))) {
    if (c == '|' || c == '\\' || c == '[' || c == ']') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\r') {
      out.push_back(' ');
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '`') {
      out += "'";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string urlPath(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '~' || c == '/' || c == '-';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string utf8Tail(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t start = s.size() - max_bytes;
  // Skip continuation bytes (10xxxxxx): at most three belong to the cut character.
  for (int k = 0; k < 3 && start < s.size() && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80; ++k) ++start;
  return s.substr(start);
}

std::string shortLine(const std::string& s, size_t max_chars) {
  const std::string line = stripForbidden(s.substr(0, s.find('\n')));
  // stripForbidden leaves well-formed UTF-8: a character starts at each byte
  // that is not a continuation byte (10xxxxxx).
  std::vector<size_t> starts;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xc0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= max_chars) return line;
  if (max_chars == 0) return "";
  return line.substr(0, starts[max_chars - 1]) + "\u2026";
}

std::string rankList(const std::vector<int>& ranks, const std::string& sep) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : sep) + std::to_string(r);
  return out;
}

}  // namespace faultline::reports
