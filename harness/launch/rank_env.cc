// Building rank and launcher environments.
#include "harness/launch/rank_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace faultline::launch {

Environment currentEnvironment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

Environment rankEnvironment(const Environment& base, const RunLayout& layout, const RankEnvParams& p) {
  Environment env = base;
  env.erase("FAULTLINE_EVENTS_DIR");
  env["RANK"] = std::to_string(p.rank);
  env["LOCAL_RANK"] = std::to_string(p.rank);
  env["WORLD_SIZE"] = std::to_string(p.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(p.world_size);
  env["GROUP_RANK"] = "0";
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(p.master_port);
  env["TORCHELASTIC_ERROR_FILE"] = layout.rankErrorFile(p.rank);
  env["FAULTLINE_RUN_DIR"] = layout.outDir();
  env["FAULTLINE_EVENTS"] = layout.rankEvents(p.rank);
  env[kRunIdVar] = p.run_id;
  return env;
}

Environment launcherEnvironment(const Environment& base, const RunLayout& layout, const std::string& run_id) {
  Environment env = base;
  for (const char* k : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "FAULTLINE_EVENTS",
                        "TORCHELASTIC_ERROR_FILE"}) {
    env.erase(k);
  }
  env["FAULTLINE_RUN_DIR"] = layout.outDir();
  env["FAULTLINE_EVENTS_DIR"] = layout.ranksDir();
  env[kRunIdVar] = run_id;
  return env;
}

namespace {

// "first" before the entries of a ':'-separated list, unless it leads already.
std::string prependToList(const std::string& first, const std::string& list) {
  if (list.empty()) return first;
  if (list == first || list.rfind(first + ":", 0) == 0) return list;
  return first + ":" + list;
}

}  // namespace

Environment withInstruments(Environment env, const Instruments& instruments) {
  if (!instruments.python_shim_dir.empty()) {
    env["PYTHONPATH"] = prependToList(instruments.python_shim_dir, env["PYTHONPATH"]);
  }
  // ld.so takes ':' or ' ' between LD_PRELOAD entries; a user's list of
  // either kind reads the same after "ours:".
  if (!instruments.preload_library.empty()) {
    env["LD_PRELOAD"] = prependToList(instruments.preload_library, env["LD_PRELOAD"]);
  }
  return env;
}

std::vector<std::string> toEnvStrings(const Environment& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Result<int> findFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ErrorCode::kSystem, std::string("socket failed: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return fail(ErrorCode::kSystem, std::string("bind 127.0.0.1:0 failed: ") + std::strerror(err));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace faultline::launch
