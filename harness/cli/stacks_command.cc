// The stacks table.
#include "harness/cli/stacks_command.h"

#include <algorithm>
#include <iomanip>
#include <ostream>

#include <nlohmann/json.hpp>

#include "harness/cli/scenario_command.h"
#include "harness/launch/stacks.h"
#include "harness/model/stack_name.h"

namespace faultline::cli {

int stacksCommand(const std::string& self_exe, bool json, std::ostream& out, std::ostream& err) {
  const auto tools = findTools(self_exe);
  const auto stacks = launch::availableStacks(tools.torches, /*check=*/true);
  int working = 0;
  // A stack that is the user's own command (external) works wherever there is one.
  for (const auto& s : stacks) {
    const LauncherTraits* t = stackTraits(s.name);
    working += s.problem.empty() && !(t && t->is_the_command);
  }
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : stacks) {
      list.push_back({{"stack", s.name},
                      {"torch", s.torch.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.torch)},
                      {"program", s.program},
                      {"works", s.problem.empty()},
                      {"problem", s.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.problem)}});
    }
    out << list.dump(2) << "\n";
  } else {
    size_t name_w = 8, torch_w = 7;
    for (const auto& s : stacks) {
      name_w = std::max(name_w, s.name.size());
      torch_w = std::max(torch_w, s.torch.size());
    }
    out << std::left << std::setw(static_cast<int>(name_w) + 2) << "stack" << std::setw(static_cast<int>(torch_w) + 2)
        << "torch" << std::setw(7) << "works" << "program\n";
    for (const auto& s : stacks) {
      out << std::setw(static_cast<int>(name_w) + 2) << s.name << std::setw(static_cast<int>(torch_w) + 2)
          << (s.torch.empty() ? "-" : s.torch) << std::setw(7) << (s.problem.empty() ? "yes" : "no") << s.program << "\n";
      if (!s.problem.empty()) out << std::string(name_w + torch_w + 4, ' ') << "  why: " << s.problem << "\n";
    }
    for (const auto& t : tools.torches) {
      if (!t.usable()) err << "faultline stacks: " << t.python << ": " << t.problem << "\n";
    }
  }
  return working > 0 ? 0 : 1;
}

}  // namespace faultline::cli
