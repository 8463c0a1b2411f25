// A small, fast parser for the flat JSON objects of events.jsonl: a 64-rank run
// can carry millions of events, and a general JSON DOM per line is too slow.
#include "harness/diagnose/events.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  char peek() {
    ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool atEnd() {
    ws();
    return i_ >= s_.size();
  }

  bool string(std::string& out) {
    if (!eat('"')) return false;
    out.clear();
    // Fast path: no escapes before the closing quote.
    for (size_t j = i_; j < s_.size(); ++j) {
      if (s_[j] == '"') {
        out.assign(s_.data() + i_, j - i_);
        i_ = j + 1;
        return true;
      }
      if (s_[j] == '\\') break;
    }
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return true;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          unsigned cp = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= h - '0';
            else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
            else return false;
          }
          if (cp >= 0xD800 && cp <= 0xDBFF && i_ + 6 <= s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
            unsigned lo = 0;
            bool ok = true;
            for (int k = 0; k < 4; ++k) {
              const char h = s_[i_ + 2 + k];
              lo <<= 4;
              if (h >= '0' && h <= '9') lo |= h - '0';
              else if (h >= 'a' && h <= 'f') lo |= h - 'a' + 10;
              else if (h >= 'A' && h <= 'F') lo |= h - 'A' + 10;
              else ok = false;
            }
            if (ok && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i_ += 6;
            }
          }
          appendUtf8(out, cp);
          break;
        }
        default: out.push_back(e); break;  // \" \\ \/
      }
    }
    return false;
  }

  bool number(double& out, bool& integral, int64_t& iout) {
    ws();
    const size_t start = i_;
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
    integral = true;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c >= '0' && c <= '9') {
        ++i_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
        integral = false;
        ++i_;
      } else {
        break;
      }
    }
    if (i_ == start) return false;
    const std::string tok(s_.substr(start, i_ - start));
    char* end = nullptr;
    if (integral) {
      iout = std::strtoll(tok.c_str(), &end, 10);
      out = static_cast<double>(iout);
    } else {
      out = std::strtod(tok.c_str(), &end);
      // Saturate: converting a double outside int64's range is undefined.
      if (!std::isfinite(out)) iout = 0;
      else if (out >= 0x1p63) iout = INT64_MAX;
      else if (out < -0x1p63) iout = INT64_MIN;
      else iout = static_cast<int64_t>(out);
    }
    return end && *end == '\0';
  }

  bool literal(std::string_view word) {
    ws();
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  // Skips any JSON value (used for nested objects and unknown fields).
  bool skipValue(int depth = 0) {
    if (depth > 32) return false;
    const char c = peek();
    if (c == '"') {
      std::string tmp;
      return string(tmp);
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      if (eat(close)) return true;
      while (true) {
        if (c == '{') {
          std::string k;
          if (!string(k) || !eat(':')) return false;
        }
        if (!skipValue(depth + 1)) return false;
        if (eat(',')) continue;
        return eat(close);
      }
    }
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    double d;
    bool integral;
    int64_t iv;
    return number(d, integral, iv);
  }

 private:
  static void appendUtf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

std::string* stringField(Event& e, std::string_view key) {
  struct F {
    std::string_view key;
    std::string Event::*member;
  };
  static constexpr F kFields[] = {
      {"ev", &Event::ev},         {"op", &Event::op},         {"dtype", &Event::dtype},
      {"what", &Event::what},     {"hash", &Event::hash},     {"name", &Event::name},
      {"scope", &Event::scope},   {"path", &Event::path},     {"mode", &Event::mode},
      {"kind", &Event::kind},     {"type", &Event::type},     {"message", &Event::message},
      {"file", &Event::file},     {"backend", &Event::backend}, {"device", &Event::device},
      {"call", &Event::call},     {"errno", &Event::err},     {"rule", &Event::rule},
      {"addr", &Event::addr},     {"patch", &Event::patch},   {"error", &Event::error},
      {"torch", &Event::torch},   {"thread", &Event::thread}, {"traceback", &Event::traceback},
      {"site", &Event::site},     {"rank_cond", &Event::rank_cond}, {"at", &Event::at},
      {"key", &Event::key},     {"sink", &Event::sink},     {"stage", &Event::stage},
  };
  for (const auto& f : kFields) {
    if (f.key == key) return &(e.*f.member);
  }
  return nullptr;
}

int64_t* intField(Event& e, std::string_view key) {
  struct F {
    std::string_view key;
    int64_t Event::*member;
  };
  static constexpr F kFields[] = {
      {"t", &Event::t},       {"seq", &Event::seq},     {"numel", &Event::numel}, {"step", &Event::step},
      {"epoch", &Event::epoch}, {"count", &Event::count}, {"first", &Event::first}, {"last", &Event::last},
      {"line", &Event::line}, {"code", &Event::code},   {"world_size", &Event::world_size},
      {"n", &Event::n},       {"attempt", &Event::attempt},
  };
  for (const auto& f : kFields) {
    if (f.key == key) return &(e.*f.member);
  }
  return nullptr;
}

std::optional<bool>* boolField(Event& e, std::string_view key) {
  struct F {
    std::string_view key;
    std::optional<bool> Event::*member;
  };
  static constexpr F kFields[] = {
      {"applied", &Event::applied}, {"sync", &Event::sync},         {"collective", &Event::collective},
      {"monitored", &Event::monitored}, {"epoch_level", &Event::epoch_level}, {"shard", &Event::shard},
  };
  for (const auto& f : kFields) {
    if (f.key == key) return &(e.*f.member);
  }
  return nullptr;
}

}  // namespace

namespace {

bool isAscii(const std::string& s) {
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

// Parses into `e` (which must be default-constructed); false for a bad line.
bool parseInto(std::string_view line, Event& e) {
  Cursor c(line);
  if (!c.eat('{')) return false;
  bool has_ev = false;
  if (!c.eat('}')) {
    std::string key;
    std::string sval;
    while (true) {
      if (!c.string(key) || !c.eat(':')) return false;
      const char p = c.peek();
      if (p == '"') {
        if (!c.string(sval)) return false;
        if (std::string* f = stringField(e, key)) {
          *f = isAscii(sval) ? sval : sanitizeUtf8(sval);
          if (key == "ev") has_ev = true;
        }
      } else if (p == '[' && (key == "indices" || key == "stack" || key == "callers")) {
        c.eat('[');
        if (!c.eat(']')) {
          while (true) {
            if (key == "stack" || key == "callers") {
              if (c.peek() == '"') {
                if (!c.string(sval)) return false;
                (key == "stack" ? e.stack : e.callers).push_back(sanitizeUtf8(sval));
              } else if (!c.skipValue()) {
                return false;
              }
            } else {
              double d;
              bool integral;
              int64_t iv;
              if (!c.number(d, integral, iv)) return false;
              e.indices.push_back(iv);
            }
            if (c.eat(',')) continue;
            if (!c.eat(']')) return false;
            break;
          }
        }
      } else if (p == '-' || (p >= '0' && p <= '9')) {
        double d;
        bool integral;
        int64_t iv;
        if (!c.number(d, integral, iv)) return false;
        if (key == "value") e.value = d;
        else if (key == "rank") e.rank = static_cast<int>(iv);
        else if (key == "pid") e.pid = static_cast<int>(iv);
        else if (int64_t* f = intField(e, key)) *f = iv;
      } else if (std::optional<bool>* f = (p == 't' || p == 'f') ? boolField(e, key) : nullptr) {
        const bool v = p == 't';
        if (!c.literal(v ? "true" : "false")) return false;
        *f = v;
      } else {
        if (!c.skipValue()) return false;
      }
      if (c.eat(',')) continue;
      if (!c.eat('}')) return false;
      break;
    }
  }
  return c.atEnd() && has_ev && !e.ev.empty();
}

}  // namespace

std::optional<Event> parseEventLine(std::string_view line) {
  Event e;
  if (!parseInto(line, e)) return std::nullopt;
  return e;
}

EventLog parseEvents(std::string_view text) {
  EventLog log;
  log.events.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (trim(line).empty()) continue;
    log.events.emplace_back();
    if (!parseInto(line, log.events.back())) {
      log.events.pop_back();
      ++log.malformed;
    }
  }
  return log;
}

EventLog readEvents(const std::string& path) {
  auto text = readAll(path);
  if (!text) return {};
  return parseEvents(*text);
}

}  // namespace faultline::diagnose
