// The torchrun environment a rank starts with (RANK, WORLD_SIZE, MASTER_ADDR, ...). No LibTorch.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <tl/expected.hpp>

namespace faultline::trainer {

struct RankEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  // Ranks on this node (LOCAL_WORLD_SIZE; the whole world where unset).
  int local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  // torchrun's agent already hosts the store: workers join it as clients
  // under the attempt's prefix (TORCHELASTIC_USE_AGENT_STORE=True).
  bool use_agent_store = false;
  int restart_count = 0;
  // GLOO_SOCKET_IFNAME's first interface: Gloo binds there (torch.distributed
  // reads it the same way), so a rank on a node whose host name resolves to
  // loopback is still reached by the other nodes. "" unset.
  std::string gloo_ifname;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup processEnv();

// A missing or malformed variable is an error naming it and what was expected.
tl::expected<RankEnv, std::string> readRankEnv(const EnvLookup& env = processEnv());

}  // namespace faultline::trainer
