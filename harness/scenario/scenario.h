// A scenario (CONTRACT.md section 5): which stack to run, which fault to
// inject, the limits, and what the report must say. Parsed strictly: anything
// unknown or impossible is an error naming file:line:col.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/model/error.h"
#include "harness/model/torch_version.h"
#include "harness/probe/fault_spec.h"

namespace faultline::scenario {

struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;
  std::string str() const;  // "file:line:col"
};

// The helper programs a scenario may need on the machine (stack.tools): the
// supervisor's stack dumpers.
inline constexpr const char* kHelperTools[] = {"eu-stack", "gdb", "py-spy"};

struct Stack {
  std::string launcher = "builtin";  // builtin | torchrun | launch | spawn | external
  std::string trainer = "reference";  // reference | command
  std::vector<std::string> command;   // the trainer command (trainer = "command") or the launcher command (external)
  // The trainer command on one launcher's stacks instead of `command`
  // ([stack.command_on] lightning = [...]): a framework's launcher runs a
  // trainer written for that framework, doing what `command` does.
  std::map<std::string, std::vector<std::string>> command_on;
  const std::vector<std::string>& commandOn(const std::string& launcher) const {
    auto it = command_on.find(launcher);
    return it == command_on.end() ? command : it->second;
  }
  std::vector<std::string> args;      // extra trainer arguments
  // The trainer arguments on one launcher's stacks instead of `args`
  // ([stack.args_on] lightning = [...]): what that launcher's own trainer
  // (command_on) takes to do what `args` asks of `command`.
  std::map<std::string, std::vector<std::string>> args_on;
  const std::vector<std::string>& argsOn(const std::string& launcher) const {
    auto it = args_on.find(launcher);
    return it == args_on.end() ? args : it->second;
  }
  // [stack.env]: variables set for the whole job (the launcher and every
  // rank), as a user sets them on the command line: TORCH_SHOW_CPP_STACKTRACES,
  // NCCL_DEBUG. faultline's own variables are set after them.
  std::map<std::string, std::string> env;
  std::optional<std::vector<std::string>> launcher_args;  // replaces faultline's default launcher flags
  int world_size = 2;
  // The restarts the launcher may make after a failure (torchrun's
  // --max-restarts); 0: none. Each restart is a new attempt of every rank
  // (docs/DIAGNOSIS.md, "Attempts and recovery").
  int max_restarts = 0;
  // torchelastic's rendezvous for torchrun and torch.distributed.launch:
  // "static" (the default: --master_port) or "c10d" (--rdzv_backend=c10d, as
  // --standalone and elastic jobs run; docs/SCENARIOS.md "Recovery").
  std::string rendezvous = "static";
  // Multi-node stacks (slurm): the nodes the world is spread over, world_size
  // / nodes ranks on each (world_size a multiple of it). 1: one node.
  int nodes = 1;
  int gpus = 0;                       // GPUs the scenario needs on the machine (one per rank for NCCL); 0: none
  std::vector<std::string> stacks;    // launchers this scenario applies to ("torchrun", "spawn@2.13"); empty: its own only
  // The stacks it applies to: `stacks`, or its own launcher when it lists none.
  std::vector<std::string> entries() const { return stacks.empty() ? std::vector<std::string>{launcher} : stacks; }
  // [stack.unsupported_on]: launchers where the fault cannot happen as
  // written, and why in a few words (the cell's reason in the catalog).
  std::map<std::string, std::string> unsupported_on;
  std::string torch;                  // the torch versions it applies to (">=2.0", "<2"); "" any
  std::vector<VersionBound> torch_bounds;  // `torch`, parsed
  // false: run as faultline cannot instrument it, as --no-instrument does (no
  // Python shim, no LD_PRELOAD interposer).
  bool instrument = true;
  // Helper programs it needs (kHelperTools), each a list of alternatives
  // ("eu-stack|gdb"): without one, its stacks cannot be read and it is
  // unsupported on the machine, never failed.
  std::vector<std::vector<std::string>> tools;
};

// [fault]: a scripted fault (the probe's own FaultSpec: its kind, ranks or
// node, point, arg, and who strikes it, resolved when the file is read), a
// system-call fault for the interposer, or both.
struct Fault : probe::FaultSpec {
  // System-call faults for the LD_PRELOAD interposer, in the FAULTLINE_INJECT
  // grammar ("write:ENOSPC:rank=1:after=100"); given to every process of the
  // run as FAULTLINE_INJECT. Empty: none.
  std::string inject;
  // Whether it has a kind (kind = ...): false for a fault that is only `inject`.
  bool scripted() const { return kind != probe::FaultKind::kNone; }
  // The --fault-rank value: "1", "0,2" or "all".
  std::string rankList() const;
};

struct Limits {
  double hang_timeout_s = 10;  // the fixed hang timeout: the upper bound
  double deadline_s = 120;
  double grace_s = 3;
  // Adaptive hang detection (harness/supervise/adaptive_hang.h): a wait past
  // hang_factor x the learned p99 of its collective, never below hang_floor_s.
  double hang_factor = 10;  // 0: off
  double hang_floor_s = 0.5;
  // The idle rule: a missing rank idle this long while its peers wait is a
  // hang, no rhythm needed (2.5x this at the rendezvous). 0: off.
  double hang_idle_s = 1.0;
};

enum class MatchOp { kEquals, kRegex, kMax, kMin, kContains, kNull, kIn };

struct Expect {
  std::string path;      // into report.json: "root_cause.rank", "ranks[1].role", "findings.kind"
  MatchOp op = MatchOp::kEquals;
  nlohmann::json value;  // the expected value, regex (without "~"), bound, element, null-ness, or the allowed values (kIn)
  SourcePos pos;
  // What the scenario file said, for the report: "collateral", "~NameError", {"max": 3000}.
  nlohmann::json asWritten() const;
};

struct Scenario {
  std::string name;
  std::string description;
  std::vector<std::string> tags;
  std::string file;
  Stack stack;
  std::optional<Fault> fault;
  Limits limits;
  // [diagnose] library_paths: path prefixes counted as library code beside the
  // built-in policy (docs/DIAGNOSIS.md section 8), relative ones to the file.
  std::vector<std::string> library_paths;
  std::vector<Expect> expect;
  // [expect_on.LAUNCHER] and [expect_on."LAUNCHER@SERIES"]: what differs on
  // that launcher's stacks, or on one of them, path by path (a framework's
  // own teardown leaves what torchrun's does not; torch 1.13's agent waits
  // where 2.x's does not).
  std::map<std::string, std::vector<Expect>> expect_on;

  bool hasTag(const std::string& tag) const;
  // The expectations on `stack` ("torchrun-multinode@1.13", or a launcher
  // alone): [expect], each path that [expect_on.LAUNCHER] names replaced by
  // its entry there and its other entries added, then the same for
  // [expect_on."LAUNCHER@SERIES"].
  std::vector<Expect> expectationsOn(const std::string& stack) const;
};

// Parses one file. Errors are kBadInput with message "file:line:col: what, expected ...".
Result<Scenario> parseScenarioFile(const std::string& path);
Result<Scenario> parseScenarioText(const std::string& text, const std::string& path);

// Every *.toml under each path (a file is taken as is), sorted, parsed; the first error stops.
Result<std::vector<Scenario>> loadScenarios(const std::vector<std::string>& paths);

// The same, for a suite: a file that does not parse (or repeats a name) is
// kept aside with its error, and the others load. Errors only for a path
// that does not exist.
struct BadScenarioFile {
  std::string file;
  Error error;  // message "file:line:col: what, expected ..."
};
struct Catalog {
  std::vector<Scenario> scenarios;
  std::vector<BadScenarioFile> bad;
};
Result<Catalog> loadCatalog(const std::vector<std::string>& paths);

// Whether `path` names a field of report.json (CONTRACT.md section 4):
// `a.b`, `ranks[1].role` (an index), `findings[seed_mismatch].ranks` (the
// findings of one kind). reportPathProblem says why not ("unknown report
// path ..., expected ..."), nullopt when it does.
bool isReportPath(const std::string& path);
std::optional<std::string> reportPathProblem(const std::string& path);

}  // namespace faultline::scenario
