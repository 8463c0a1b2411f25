// Reading and checking the torchrun environment.
#include "reference-trainer/rank_env.h"

#include <charconv>
#include <cstdlib>

namespace faultline::trainer {
namespace {

tl::expected<int, std::string> readInt(const EnvLookup& env, const std::string& name, int min, int max,
                                       std::optional<int> fallback = std::nullopt) {
  auto value = env(name);
  if (!value) {
    if (fallback) return *fallback;
    return tl::unexpected(name + " is not set; run under torchrun or faultline, or set RANK, WORLD_SIZE, "
                                 "MASTER_ADDR and MASTER_PORT");
  }
  int out = 0;
  auto [ptr, ec] = std::from_chars(value->data(), value->data() + value->size(), out);
  if (value->empty() || ec != std::errc() || ptr != value->data() + value->size() || out < min || out > max) {
    return tl::unexpected(name + "='" + *value + "' is not valid, expected an integer in [" + std::to_string(min) +
                          ", " + std::to_string(max) + "]");
  }
  return out;
}

}  // namespace

EnvLookup processEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

tl::expected<RankEnv, std::string> readRankEnv(const EnvLookup& env) {
  RankEnv out;
  auto world = readInt(env, "WORLD_SIZE", 1, 1 << 20);
  if (!world) return tl::unexpected(world.error());
  out.world_size = *world;
  auto rank = readInt(env, "RANK", 0, out.world_size - 1);
  if (!rank) return tl::unexpected(rank.error());
  out.rank = *rank;
  auto local = readInt(env, "LOCAL_RANK", 0, out.world_size - 1, out.rank);
  if (!local) return tl::unexpected(local.error());
  out.local_rank = *local;
  auto local_world = readInt(env, "LOCAL_WORLD_SIZE", out.local_rank + 1, out.world_size, out.world_size);
  if (!local_world) return tl::unexpected(local_world.error());
  out.local_world_size = *local_world;
  auto addr = env("MASTER_ADDR");
  if (!addr || addr->empty()) return tl::unexpected(std::string("MASTER_ADDR is not set, expected a host name or address"));
  out.master_addr = *addr;
  auto port = readInt(env, "MASTER_PORT", 1, 65535);
  if (!port) return tl::unexpected(port.error());
  out.master_port = *port;
  out.use_agent_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  auto restarts = readInt(env, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 20, 0);
  if (!restarts) return tl::unexpected(restarts.error());
  out.restart_count = *restarts;
  const std::string ifnames = env("GLOO_SOCKET_IFNAME").value_or("");
  out.gloo_ifname = ifnames.substr(0, ifnames.find(','));
  return out;
}

}  // namespace faultline::trainer
