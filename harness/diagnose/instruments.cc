// The shim's patch table per rank, from `instrument` events.
#include "harness/diagnose/instruments.h"

namespace faultline::diagnose {

std::optional<RankInstruments> rankInstruments(const EventLog& log) {
  std::optional<RankInstruments> out;
  for (const Event& e : log.events) {
    if (e.ev != "instrument" || e.patch.empty() || !e.applied) continue;
    if (!out) out.emplace();
    if (!e.torch.empty()) out->torch = e.torch;
    PatchOutcome& p = out->patches[e.patch];
    p.applied = *e.applied;
    p.error = p.applied ? std::string() : (e.error.empty() ? std::string("no reason given") : e.error);
  }
  return out;
}

std::optional<std::string> missingEvidence(const RankInstruments& ri, ShimEvidence what) {
  for (const auto& [name, p] : ri.patches) {
    if (!p.applied && patchFeeds(name, what)) return "patch " + name + " failed: " + p.error;
  }
  return std::nullopt;
}

nlohmann::json instrumentsJson(const std::map<int, RankInstruments>& ranks) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [r, ri] : ranks) {
    nlohmann::json patches = nlohmann::json::object(), failed = nlohmann::json::object();
    for (const auto& [name, p] : ri.patches) {
      patches[name] = p.applied;
      if (!p.applied) failed[name] = p.error;
    }
    out[std::to_string(r)] = {{"torch", ri.torch.empty() ? nlohmann::json(nullptr) : nlohmann::json(ri.torch)},
                              {"patches", std::move(patches)},
                              {"failed", std::move(failed)}};
  }
  return out;
}

}  // namespace faultline::diagnose
