// Fault specifications: names, parsing and validation.
#include "harness/probe/fault_spec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

namespace faultline::probe {
namespace {

constexpr std::array<std::pair<FaultKind, std::string_view>, 17> kNames{{
    {FaultKind::kNone, "none"},
    {FaultKind::kUndefinedSymbol, "undefined_symbol"},
    {FaultKind::kCppException, "cpp_exception"},
    {FaultKind::kExceptionInThread, "exception_in_thread"},
    {FaultKind::kSegfault, "segfault"},
    {FaultKind::kAbort, "abort"},
    {FaultKind::kSigkill, "sigkill"},
    {FaultKind::kExit, "exit"},
    {FaultKind::kOom, "oom"},
    {FaultKind::kHungCollective, "hung_collective"},
    {FaultKind::kCollectiveMismatch, "collective_mismatch"},
    {FaultKind::kSeedMismatch, "seed_mismatch"},
    {FaultKind::kUnshardedData, "unsharded_data"},
    {FaultKind::kUnsyncedMetrics, "unsynced_metrics"},
    {FaultKind::kConcurrentWrites, "concurrent_writes"},
    {FaultKind::kStraggler, "straggler"},
    {FaultKind::kRendezvousFailure, "rendezvous_failure"},
}};

template <class T>
bool parseNumber(std::string_view s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool isNumber(const std::string& s) {
  long v = 0;
  return !s.empty() && parseNumber(std::string_view(s), v);
}

}  // namespace

std::string_view faultKindName(FaultKind k) {
  for (const auto& [kind, name] : kNames) {
    if (kind == k) return name;
  }
  return "none";
}

std::optional<FaultKind> faultKindFromName(std::string_view name) {
  for (const auto& [kind, n] : kNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

std::vector<std::string_view> faultKindNames() {
  std::vector<std::string_view> out;
  for (const auto& [kind, name] : kNames) out.push_back(name);
  return out;
}

tl::expected<FaultSpec, std::string> parseFaultSpec(std::string_view text) {
  FaultSpec spec;
  size_t pos = 0;
  bool first = true;
  while (pos <= text.size()) {
    size_t colon = text.find(':', pos);
    std::string_view part = text.substr(pos, colon == std::string_view::npos ? std::string_view::npos : colon - pos);
    if (first) {
      auto kind = faultKindFromName(part);
      if (!kind) {
        std::string known;
        for (auto n : faultKindNames()) known += (known.empty() ? "" : ", ") + std::string(n);
        return tl::unexpected("unknown fault kind '" + std::string(part) + "', expected one of: " + known);
      }
      spec.kind = *kind;
      first = false;
    } else {
      size_t eq = part.find('=');
      if (eq == std::string_view::npos) {
        return tl::unexpected("bad fault option '" + std::string(part) + "', expected key=value (rank, step, arg)");
      }
      std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
      if (key == "rank") {
        spec.ranks.clear();
        if (value != "all" && value != "*") {
          // R or R,R,...: the same fault on each of them.
          size_t from = 0;
          while (true) {
            const size_t comma = value.find(',', from);
            const std::string_view one = value.substr(from, comma == std::string_view::npos ? comma : comma - from);
            int r = -1;
            if (!parseNumber(one, r) || r < 0) {
              return tl::unexpected("bad fault rank '" + std::string(value) +
                                    "', expected a rank >= 0, ranks such as 0,2, or 'all'");
            }
            if (std::find(spec.ranks.begin(), spec.ranks.end(), r) != spec.ranks.end()) {
              return tl::unexpected("bad fault rank '" + std::string(value) + "': rank " + std::to_string(r) +
                                    " is listed twice, expected distinct ranks such as 0,2");
            }
            spec.ranks.push_back(r);
            if (comma == std::string_view::npos) break;
            from = comma + 1;
          }
          std::sort(spec.ranks.begin(), spec.ranks.end());
        }
      } else if (key == "step") {
        if (!parseNumber(value, spec.step) || spec.step < 1) {
          return tl::unexpected("bad fault step '" + std::string(value) + "', expected an integer >= 1");
        }
      } else if (key == "arg") {
        spec.arg = std::string(value);
      } else {
        return tl::unexpected("unknown fault option '" + std::string(key) + "', expected rank, step or arg");
      }
    }
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  return spec;
}

bool FaultSpec::targets(int r) const {
  return kind != FaultKind::kNone && (ranks.empty() || std::find(ranks.begin(), ranks.end(), r) != ranks.end());
}

std::string rankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "all";
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

tl::expected<void, std::string> validateFaultSpec(const FaultSpec& spec, int world_size) {
  for (int r : spec.ranks) {
    if (r >= world_size) {
      return tl::unexpected("fault rank " + std::to_string(r) + " is out of range for world size " +
                            std::to_string(world_size));
    }
  }
  auto oneOf = [&](std::initializer_list<std::string_view> variants) -> tl::expected<void, std::string> {
    if (spec.arg.empty()) return {};
    std::string list;
    for (auto v : variants) {
      if (spec.arg == v) return {};
      list += (list.empty() ? "" : ", ") + std::string(v);
    }
    return tl::unexpected("bad --fault-arg '" + spec.arg + "' for " + std::string(faultKindName(spec.kind)) +
                          ", expected one of: " + list);
  };
  switch (spec.kind) {
    case FaultKind::kUndefinedSymbol:
      return oneOf({"lazy", "now"});
    case FaultKind::kHungCollective:
      return oneOf({"sleep", "skip"});
    case FaultKind::kCollectiveMismatch:
      return oneOf({"size", "op"});
    case FaultKind::kRendezvousFailure:
      return oneOf({"exit", "wrong_port"});
    case FaultKind::kExit:
    case FaultKind::kStraggler:
    case FaultKind::kOom:
      if (!spec.arg.empty() && !isNumber(spec.arg)) {
        return tl::unexpected("bad --fault-arg '" + spec.arg + "' for " + std::string(faultKindName(spec.kind)) +
                              ", expected an integer (" +
                              (spec.kind == FaultKind::kExit        ? "exit code"
                               : spec.kind == FaultKind::kStraggler ? "milliseconds per step"
                                                                    : "address-space headroom in MiB") +
                              ")");
      }
      return {};
    default:
      return {};
  }
}

}  // namespace faultline::probe
