// XML/HTML escaping.
#include "reports/xml_text.h"

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
    const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xc2);
    for (size_t k = 1; ok && k < len; ++k) ok = (s[i + k] & 0xc0) == 0x80;
    // U+FFFE and U+FFFF are not XML characters.
    if (ok && len == 3 && c == 0xef && s[i + 1] == 0xbf && (s[i + 2] == 0xbe || s[i + 2] == 0xbf)) {
      i += 3;
      continue;
    }
    if (ok) {
      out.append(in, i, len);
      i += len;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
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
  for (char c : s.substr(0, s.find('\n'))) {
    if (c == '|') {
      out += "\\|";
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

}  // namespace faultline::reports
