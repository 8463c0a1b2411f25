// Fault specifications: names, parsing and validation.
#include "harness/probe/fault_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <utility>

namespace faultline::probe {
namespace {

constexpr std::array<std::pair<FaultKind, std::string_view>, 26> kNames{{
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
    {FaultKind::kException, "exception"},
    {FaultKind::kSigterm, "sigterm"},
    {FaultKind::kSigstop, "sigstop"},
    {FaultKind::kFreeze, "freeze"},
    {FaultKind::kNodeLoss, "node_loss"},
    {FaultKind::kPartition, "partition"},
    {FaultKind::kSlowLink, "slow_link"},
    {FaultKind::kSlowNode, "slow_node"},
    {FaultKind::kAgentKill, "agent_kill"},
}};

using K = FaultKind;
// What each layer strikes (the table of docs/SCENARIOS.md).
constexpr K kTrainerKinds[] = {K::kUndefinedSymbol, K::kCppException, K::kExceptionInThread, K::kSegfault,
                               K::kAbort, K::kSigkill, K::kExit, K::kOom, K::kHungCollective,
                               K::kCollectiveMismatch, K::kSeedMismatch, K::kUnshardedData, K::kUnsyncedMetrics,
                               K::kConcurrentWrites, K::kStraggler, K::kRendezvousFailure};
constexpr K kShimKinds[] = {K::kException, K::kExit, K::kSigkill, K::kSegfault, K::kAbort, K::kSigterm,
                            K::kSigstop, K::kHungCollective, K::kCollectiveMismatch, K::kStraggler,
                            K::kSeedMismatch, K::kUnshardedData};
// The probe strikes from inside its own calls (step and collective events),
// so only what needs no framework: signals, exit, sleeping, never returning.
constexpr K kProbeKinds[] = {K::kExit, K::kSigkill, K::kSegfault, K::kAbort, K::kSigterm, K::kSigstop,
                             K::kHungCollective, K::kStraggler};
constexpr K kSupervisorKinds[] = {K::kSigkill, K::kSegfault, K::kAbort,    K::kSigterm,  K::kSigstop,  K::kFreeze,
                                  K::kNodeLoss, K::kPartition, K::kSlowLink, K::kSlowNode, K::kAgentKill};
constexpr K kNodeKinds[] = {K::kNodeLoss, K::kPartition, K::kSlowLink, K::kSlowNode, K::kAgentKill};

template <size_t N>
bool contains(const K (&kinds)[N], K k) {
  return std::find(std::begin(kinds), std::end(kinds), k) != std::end(kinds);
}

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

bool isNodeFault(FaultKind k) { return contains(kNodeKinds, k); }

int faultSignal(FaultKind k) {
  switch (k) {
    case FaultKind::kSigkill: return SIGKILL;
    case FaultKind::kSegfault: return SIGSEGV;
    case FaultKind::kAbort: return SIGABRT;
    case FaultKind::kSigterm: return SIGTERM;
    case FaultKind::kSigstop:
    case FaultKind::kFreeze: return SIGSTOP;
    default: return 0;
  }
}

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
  bool step_given = false;
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
        step_given = true;
        if (!parseNumber(value, spec.step) || spec.step < 1) {
          return tl::unexpected("bad fault step '" + std::string(value) + "', expected an integer >= 1");
        }
      } else if (key == "arg") {
        spec.arg = std::string(value);
      } else if (key == "collective") {
        long k = -1;
        if (!parseNumber(value, k) || k < 0) {
          return tl::unexpected("bad fault collective '" + std::string(value) + "', expected a collective number >= 0 (the seq of the rank's events)");
        }
        spec.collective = k;
      } else if (key == "op") {
        if (value.empty()) return tl::unexpected(std::string("bad fault op '', expected an op such as allreduce or broadcast"));
        spec.op = std::string(value);
      } else if (key == "nth") {
        if (!parseNumber(value, spec.nth) || spec.nth < 1) {
          return tl::unexpected("bad fault nth '" + std::string(value) + "', expected an integer >= 1");
        }
      } else if (key == "after") {
        double t = -1;
        if (!parseNumber(value, t) || !(t >= 0) || t > 1e9) {
          return tl::unexpected("bad fault time after='" + std::string(value) + "', expected seconds >= 0");
        }
        spec.after_s = t;
      } else if (key == "since") {
        if (value != "start" && value != "first_step") {
          return tl::unexpected("bad fault since='" + std::string(value) + "', expected start or first_step");
        }
        spec.since_first_step = value == "first_step";
      } else if (key == "node") {
        if (value.empty()) return tl::unexpected(std::string("bad fault node '', expected a node name such as n2"));
        spec.node = std::string(value);
      } else if (key == "point") {
        if (value != "rendezvous") {
          return tl::unexpected("bad fault point '" + std::string(value) + "', expected rendezvous");
        }
        spec.rendezvous = true;
      } else if (key == "attempt") {
        int a = -1;
        if (!parseNumber(value, a) || a < 0) {
          return tl::unexpected("bad fault attempt '" + std::string(value) + "', expected an attempt number >= 0 (0: the first)");
        }
        spec.attempt = a;
      } else if (key == "by") {
        if (value != "trainer" && value != "supervisor") {
          return tl::unexpected("bad fault by='" + std::string(value) + "', expected trainer or supervisor");
        }
        spec.by = std::string(value);
      } else {
        return tl::unexpected("unknown fault option '" + std::string(key) +
                              "', expected rank, node, step, collective, op, nth, after, since, point, attempt, arg or by");
      }
    }
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  const int points = step_given + spec.collective.has_value() + !spec.op.empty() + spec.after_s.has_value() + spec.rendezvous;
  if (points > 1) return tl::unexpected(std::string("a fault strikes at one point, expected one of step, collective, op or after"));
  if (spec.nth != 1 && spec.op.empty()) return tl::unexpected(std::string("nth counts the calls of an op, expected op=OP with it"));
  if (spec.since_first_step && !spec.after_s) {
    return tl::unexpected(std::string("since says where after's seconds count from, expected after=T with it"));
  }
  return spec;
}

std::string FaultSpec::text() const {
  std::string s = std::string(faultKindName(kind)) + (node.empty() ? ":rank=" + rankList(ranks) : ":node=" + node);
  if (rendezvous) {
    s += ":point=rendezvous";
  } else if (collective) {
    s += ":collective=" + std::to_string(*collective);
  } else if (!op.empty()) {
    s += ":op=" + op + (nth != 1 ? ":nth=" + std::to_string(nth) : "");
  } else if (after_s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *after_s);
    s += std::string(":after=") + buf + (since_first_step ? ":since=first_step" : "");
  } else {
    s += ":step=" + std::to_string(step);
  }
  if (attempt) s += ":attempt=" + std::to_string(*attempt);
  if (!arg.empty()) s += ":arg=" + arg;
  return s;
}

int launchAttempt() {
  const char* v = std::getenv("TORCHELASTIC_RESTART_COUNT");
  int a = 0;
  return v && parseNumber(std::string_view(v), a) && a >= 0 ? a : 0;
}

std::string FaultSpec::point() const {
  if (rendezvous) return "rendezvous";
  if (collective) return "collective #" + std::to_string(*collective);
  if (!op.empty()) return op + " call " + std::to_string(nth);
  if (after_s) {
    char buf[48];
    std::snprintf(buf, sizeof buf, since_first_step ? "%g s after the first step" : "%g s after start", *after_s);
    return buf;
  }
  return "step " + std::to_string(step);
}

std::string_view faultLayerName(FaultLayer l) {
  switch (l) {
    case FaultLayer::kReferenceTrainer: return "the reference trainer";
    case FaultLayer::kShim: return "the Python shim";
    case FaultLayer::kProbe: return "the probe";
    case FaultLayer::kSupervisor: return "the supervisor";
  }
  return "?";
}

bool layerStrikes(FaultLayer l, FaultKind k) {
  switch (l) {
    case FaultLayer::kReferenceTrainer: return contains(kTrainerKinds, k);
    case FaultLayer::kShim: return contains(kShimKinds, k);
    case FaultLayer::kProbe: return contains(kProbeKinds, k);
    case FaultLayer::kSupervisor: return contains(kSupervisorKinds, k);
  }
  return false;
}

std::string layersOf(FaultKind k) {
  std::string out;
  for (FaultLayer l : {FaultLayer::kReferenceTrainer, FaultLayer::kShim, FaultLayer::kProbe, FaultLayer::kSupervisor}) {
    if (layerStrikes(l, k)) out += (out.empty() ? "" : ", ") + std::string(faultLayerName(l));
  }
  return out.empty() ? "none" : out;
}

tl::expected<void, std::string> checkLayer(const FaultSpec& spec, FaultLayer layer) {
  const std::string kind(faultKindName(spec.kind));
  if (!layerStrikes(layer, spec.kind)) {
    return tl::unexpected(kind + " is not a fault " + std::string(faultLayerName(layer)) + " strikes (" + kind +
                          " is struck by: " + layersOf(spec.kind) + ")");
  }
  if (layer == FaultLayer::kReferenceTrainer && !spec.atStep()) {
    return tl::unexpected("the reference trainer strikes at a step, not at " + spec.point() + ", expected step = N");
  }
  if (layer == FaultLayer::kProbe && spec.kind == FaultKind::kHungCollective && !spec.arg.empty() &&
      spec.arg != "sleep") {
    return tl::unexpected("the probe hangs a collective by never returning from it (arg = \"sleep\"), not \"" +
                          spec.arg + "\": skipping a collective needs the trainer's own code");
  }
  if (isNodeFault(spec.kind) && spec.node.empty()) {
    return tl::unexpected(kind + " strikes a node, expected node = \"nK\" (docs/MULTINODE.md)");
  }
  if (!isNodeFault(spec.kind) && !spec.node.empty()) {
    return tl::unexpected(kind + " strikes a rank, not a node; the node faults are node_loss, partition, slow_link, "
                                 "slow_node and agent_kill, expected rank = R or one of them");
  }
  if (spec.rendezvous && spec.kind != FaultKind::kAgentKill) {
    return tl::unexpected("point \"rendezvous\" is agent_kill's (before the node's ranks exist), expected step, "
                          "collective or after_s for " + kind);
  }
  if (spec.since_first_step && layer != FaultLayer::kSupervisor) {
    return tl::unexpected(std::string(faultLayerName(layer)) + " counts after_s from the rank's start and strikes at its "
                          "next step after it; since = \"first_step\" is the supervisor's, expected by = \"supervisor\"");
  }
  if (layer == FaultLayer::kSupervisor && !spec.op.empty()) {
    return tl::unexpected("the supervisor sees a rank's collectives by number, not by op: expected collective = K, "
                          "step = N or after_s = T, not op = \"" + spec.op + "\"");
  }
  return {};
}

FaultLayer inRankLayer(bool reference_trainer, const std::vector<std::string>& command) {
  if (reference_trainer) return FaultLayer::kReferenceTrainer;
  auto base = [](const std::string& p) { return p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1); };
  auto endsWith = [](const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!command.empty()) {
    const std::string prog = base(command.front());
    if (prog.rfind("python", 0) == 0 || prog == "torchrun" || endsWith(prog, ".py")) return FaultLayer::kShim;
  }
  for (const std::string& arg : command) {
    if (endsWith(arg, ".py")) return FaultLayer::kShim;  // `srun python train.py`, `env X=1 train.py`
  }
  return FaultLayer::kProbe;
}

tl::expected<FaultLayer, std::string> chooseLayer(const FaultSpec& spec, FaultLayer own) {
  const auto in_trainer = checkLayer(spec, own);
  const auto outside = checkLayer(spec, FaultLayer::kSupervisor);
  std::string hint;
  if (own == FaultLayer::kShim) hint = "; a Python trainer is struck by the Python shim or by the supervisor (by=supervisor)";
  if (own == FaultLayer::kProbe) {
    hint = "; a native trainer is struck by the probe (when it links faultline::probe) or by the supervisor "
           "(by=supervisor)";
  }
  if (spec.by.empty() && !in_trainer && !outside) {
    return tl::unexpected(in_trainer.error() + "; and " + outside.error() + hint);
  }
  std::string by = spec.by;
  if (by.empty()) by = in_trainer ? "trainer" : "supervisor";
  const auto& ok = by == "trainer" ? in_trainer : outside;
  if (!ok) return tl::unexpected(ok.error() + hint);
  return by == "trainer" ? own : FaultLayer::kSupervisor;
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
    case FaultKind::kPartition: {
      double t = 0;
      if (!spec.arg.empty() && (!parseNumber(std::string_view(spec.arg), t) || !(t > 0) || t > 3600)) {
        return tl::unexpected("bad --fault-arg '" + spec.arg + "' for partition, expected seconds until the link comes "
                              "back up (0 < S <= 3600), or none: it stays down");
      }
      return {};
    }
    case FaultKind::kSlowNode: {
      int duty = 0;
      if (!spec.arg.empty() && (!parseNumber(std::string_view(spec.arg), duty) || duty < 1 || duty > 99)) {
        return tl::unexpected("bad --fault-arg '" + spec.arg + "' for slow_node, expected the percentage of time "
                              "stopped, 1..99 (default 80)");
      }
      return {};
    }
    case FaultKind::kSlowLink: {
      size_t digits = 0;
      while (digits < spec.arg.size() && std::isdigit(static_cast<unsigned char>(spec.arg[digits]))) ++digits;
      const std::string unit = spec.arg.substr(digits);
      const bool ok = spec.arg.empty() || (digits > 0 && (unit == "bit" || unit == "kbit" || unit == "mbit" ||
                                                          unit == "gbit" || unit == "bps" || unit == "kbps" || unit == "mbps"));
      if (!ok) {
        return tl::unexpected("bad --fault-arg '" + spec.arg + "' for slow_link, expected a tc rate such as 200kbit "
                              "(bit, kbit, mbit, gbit, bps, kbps, mbps)");
      }
      return {};
    }
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
