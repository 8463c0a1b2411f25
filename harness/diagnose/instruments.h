// What the Python shim could observe on each rank: the outcome of each of its
// patches (`instrument` events, docs/BLACKBOX.md), and which evidence a patch
// that did not apply leaves out, so the analysis can say "not observed"
// instead of reading a missing event as "did not happen".
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/diagnose/events.h"
#include "harness/model/shim_patch.h"

namespace faultline::diagnose {

struct PatchOutcome {
  bool applied = false;
  std::string error;  // why not, as the shim wrote it ("AttributeError: ...")
};

struct RankInstruments {
  std::string torch;                            // torch.__version__ the shim met; empty if none said
  std::map<std::string, PatchOutcome> patches;  // patch name -> its last outcome
};

// The rank's patch table, from its `instrument` events in file order (a later
// outcome of a patch replaces an earlier one: a patch that broke at run time
// reports itself again). nullopt when the rank wrote none (no shim, an older
// shim, a C++ trainer): nothing is known, and nothing is assumed missing.
// Events without a patch name or a boolean "applied" are ignored.
std::optional<RankInstruments> rankInstruments(const EventLog& log);

// "patch dist.all_reduce failed: TypeError: ..." for the first patch (by
// name) feeding `what` that did not apply; nullopt when each applied.
std::optional<std::string> missingEvidence(const RankInstruments& ri, ShimEvidence what);

// report.json's instruments.ranks:
//   {"R": {"torch": "2.13.0", "patches": {"dist.all_reduce": true, ...},
//          "failed": {"ddp.forward": "AttributeError: ..."}}}
// ("torch" is null when no event carried it; "failed" is {} when all applied).
nlohmann::json instrumentsJson(const std::map<int, RankInstruments>& ranks);

}  // namespace faultline::diagnose
