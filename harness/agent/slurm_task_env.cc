// Maps a Slurm task's variables to torch.distributed's.
#include "harness/agent/slurm_task_env.h"

#include <charconv>

namespace faultline::agent {

namespace {

std::optional<int> parseCount(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::optional<std::string> numberVar(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end() || !parseCount(it->second)) return std::nullopt;
  return it->second;
}

}  // namespace

std::optional<int> tasksOnNode(const std::string& tasks_per_node, int node_index) {
  if (node_index < 0) return std::nullopt;
  std::string_view rest = tasks_per_node;
  int index = 0;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    int repeat = 1;
    const size_t paren = entry.find("(x");
    if (paren != std::string_view::npos) {
      if (entry.back() != ')') return std::nullopt;
      const auto r = parseCount(entry.substr(paren + 2, entry.size() - paren - 3));
      if (!r || *r == 0) return std::nullopt;
      repeat = *r;
      entry = entry.substr(0, paren);
    }
    const auto count = parseCount(entry);
    if (!count) return std::nullopt;
    if (node_index < index + repeat) return *count;
    index += repeat;
  }
  return std::nullopt;
}

Result<std::vector<std::pair<std::string, std::string>>> slurmTaskEnv(const EnvMap& env) {
  const auto need = [&](const std::string& name) -> Result<std::string> {
    if (auto v = numberVar(env, name)) return *v;
    return fail(ErrorCode::kBadUsage,
                env.count(name) ? "--slurm-task: " + name + "='" + env.at(name) + "' is not a number"
                                : "--slurm-task: " + name + " is not set (not inside a Slurm step?)");
  };
  auto procid = need("SLURM_PROCID");
  if (!procid) return tl::unexpected(procid.error());
  auto localid = need("SLURM_LOCALID");
  if (!localid) return tl::unexpected(localid.error());
  auto nodeid = need("SLURM_NODEID");
  if (!nodeid) return tl::unexpected(nodeid.error());
  auto ntasks = numberVar(env, "SLURM_NTASKS");
  if (!ntasks) ntasks = numberVar(env, "SLURM_NPROCS");
  if (!ntasks) {
    auto err = need("SLURM_NTASKS");
    return tl::unexpected(err.error());
  }
  std::optional<std::string> local_world = numberVar(env, "SLURM_NTASKS_PER_NODE");
  if (!local_world) {
    const auto it = env.find("SLURM_TASKS_PER_NODE");
    if (it != env.end()) {
      if (const auto n = tasksOnNode(it->second, *parseCount(*nodeid))) local_world = std::to_string(*n);
    }
  }
  std::vector<std::pair<std::string, std::string>> out = {
      {"RANK", *procid}, {"LOCAL_RANK", *localid}, {"WORLD_SIZE", *ntasks}, {"GROUP_RANK", *nodeid}};
  if (local_world) out.emplace_back("LOCAL_WORLD_SIZE", *local_world);
  return out;
}

}  // namespace faultline::agent
