// libFuzzer target: the events.jsonl reader (harness/diagnose/events.*), the
// hand-written JSON parser that every rank's event lines go through.
// Invariants: nothing throws; every string it keeps is valid UTF-8; a parsed
// event written back as JSON parses to the same event (round trip); the file
// reader and the line parser agree line by line.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "harness/diagnose/events.h"
#include "harness/diagnose/text.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using faultline::diagnose::Event;
using faultline::fuzz::check;
using nlohmann::json;

// Every field of the event, so that an event written and parsed again can be
// compared with the original. A non-finite value has no JSON form: left out.
json toJson(const Event& e) {
  json j = {{"t", e.t}, {"rank", e.rank}, {"pid", e.pid}, {"ev", e.ev}, {"op", e.op}, {"dtype", e.dtype},
            {"what", e.what}, {"hash", e.hash}, {"name", e.name}, {"scope", e.scope}, {"path", e.path},
            {"mode", e.mode}, {"kind", e.kind}, {"type", e.type}, {"message", e.message}, {"file", e.file},
            {"backend", e.backend}, {"device", e.device}, {"call", e.call}, {"errno", e.err},
            {"rule", e.rule}, {"addr", e.addr}, {"seq", e.seq}, {"numel", e.numel}, {"step", e.step},
            {"epoch", e.epoch}, {"count", e.count}, {"first", e.first}, {"last", e.last}, {"line", e.line},
            {"code", e.code}, {"world_size", e.world_size}, {"indices", e.indices}, {"stack", e.stack}};
  if (e.value && std::isfinite(*e.value)) j["value"] = *e.value;
  return j;
}

// Field by field (cheaper than comparing JSON documents, which matters at a
// million runs); values compare by their finite part, as toJson writes them.
bool same(const Event& a, const Event& b) {
  auto finite = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? v : std::nullopt; };
  return std::tie(a.t, a.rank, a.pid, a.ev, a.op, a.dtype, a.what, a.hash, a.name, a.scope, a.path, a.mode, a.kind,
                  a.type, a.message, a.file, a.backend, a.device, a.call, a.err, a.rule, a.addr, a.seq, a.numel,
                  a.step, a.epoch, a.count, a.first, a.last, a.line, a.code, a.world_size, a.indices, a.stack) ==
             std::tie(b.t, b.rank, b.pid, b.ev, b.op, b.dtype, b.what, b.hash, b.name, b.scope, b.path, b.mode, b.kind,
                      b.type, b.message, b.file, b.backend, b.device, b.call, b.err, b.rule, b.addr, b.seq, b.numel,
                      b.step, b.epoch, b.count, b.first, b.last, b.line, b.code, b.world_size, b.indices, b.stack) &&
         finite(a.value) == finite(b.value);
}

void checkEvent(const Event& e) {
  check(!e.ev.empty(), "a parsed event has an empty \"ev\"");
  std::string line;
  try {
    line = toJson(e).dump();
  } catch (const json::type_error& err) {
    check(false, "an event string is not valid UTF-8", err.what());
  }
  const auto again = faultline::diagnose::parseEventLine(line);
  check(again.has_value(), "a parsed event written back does not parse", line);
  check(same(*again, e), "a parsed event written back parses differently", line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const faultline::diagnose::EventLog log = faultline::diagnose::parseEvents(text);
  // The same lines one at a time: parseEvents skips blank lines and counts bad ones.
  size_t k = 0, nonblank = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (faultline::diagnose::trim(line).empty()) continue;
    ++nonblank;
    const auto e = faultline::diagnose::parseEventLine(line);
    if (!e) continue;
    check(k < log.events.size(), "parseEvents kept fewer events than parseEventLine parses");
    check(same(*e, log.events[k]), "parseEvents and parseEventLine disagree on a line");
    checkEvent(*e);
    ++k;
  }
  check(k == log.events.size(), "parseEvents kept more events than parseEventLine parses");
  check(log.events.size() + log.malformed == nonblank, "events + malformed != non-blank lines");
  return 0;
}
