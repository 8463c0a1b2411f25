// Building rank and launcher environments.
#include "harness/launch/rank_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "harness/os/sys.h"

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

namespace {

// torch 2.x's Flight Recorder, pointed into the run directory (CONTRACT.md
// section 2.3): a recorder of the last 2000 collectives unless the user sized
// it, NCCL's dump on a watchdog timeout and its dump pipe, and the dumps'
// file prefix (torch appends the rank). What the user set stays. torch 1.13
// reads none of them.
void addFlightRecorder(Environment& env, const RunLayout& layout) {
  // A value an enclosing faultline run set points into that run: replaced.
  const auto outer = env.find("FAULTLINE_FLIGHT_RECORDER_DIR");
  const std::string outer_dir = outer == env.end() ? "" : outer->second;
  auto setDefault = [&](const char* key, const std::string& value) {
    auto it = env.find(key);
    if (it == env.end() || (!outer_dir.empty() && it->second.rfind(outer_dir, 0) == 0)) env[key] = value;
  };
  if (!env.count("TORCH_FR_BUFFER_SIZE") && !env.count("TORCH_NCCL_TRACE_BUFFER_SIZE")) env["TORCH_FR_BUFFER_SIZE"] = "2000";
  setDefault("TORCH_FR_DUMP_TEMP_FILE", layout.flightRecorderPrefix());
  setDefault("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", layout.flightRecorderPrefix());
  env.try_emplace("TORCH_NCCL_DUMP_ON_TIMEOUT", "1");
  setDefault("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", layout.flightRecorderPipePrefix());
  env["FAULTLINE_FLIGHT_RECORDER_DIR"] = layout.flightRecorderDir();
}

}  // namespace

Environment rankEnvironment(const Environment& base, const RunLayout& layout, const RankEnvParams& p) {
  Environment env = base;
  env.erase("FAULTLINE_EVENTS_DIR");
  // The interposer reads FAULTLINE_RANK before RANK: one inherited from a
  // nested run would give every rank's events one rank.
  env.erase("FAULTLINE_RANK");
  env["RANK"] = std::to_string(p.rank);
  env["LOCAL_RANK"] = std::to_string(p.rank);
  env["WORLD_SIZE"] = std::to_string(p.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(p.world_size);
  env["GROUP_RANK"] = "0";
  env["GROUP_WORLD_SIZE"] = "1";
  // One role, as torchrun's default ("default"): role rank and size are the global ones.
  env["ROLE_NAME"] = "default";
  env["ROLE_RANK"] = std::to_string(p.rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(p.world_size);
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(p.master_port);
  env["TORCHELASTIC_ERROR_FILE"] = layout.rankErrorFile(p.rank, p.restart_count);
  env["TORCHELASTIC_RUN_ID"] = p.run_id;
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(p.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(p.max_restarts);
  // No agent hosts a store here: rank 0's TCPStore is the store. torch 2.x
  // reads "True" as "connect to the agent's store as a client" and would wait
  // for a server nobody starts.
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  // torchrun 2.x and 1.13 default these to 1 unless the user set them.
  env.try_emplace("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  env.try_emplace("NCCL_ASYNC_ERROR_HANDLING", "1");
  // torchrun 2.x exports the signals its agent turns into a clean shutdown;
  // they are the ones the harness tears a run down on, too.
  env.try_emplace("TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  // torchrun sets one OpenMP thread per rank when several share a node and the
  // user chose nothing (run.py); ranks that each spawn a thread per core would
  // oversubscribe the machine.
  if (p.world_size > 1) env.try_emplace("OMP_NUM_THREADS", "1");
  env["FAULTLINE_RUN_DIR"] = layout.outDir();
  env["FAULTLINE_EVENTS"] = layout.rankEvents(p.rank);
  env[kRunIdVar] = p.run_id;
  addFlightRecorder(env, layout);
  return env;
}

Environment launcherEnvironment(const Environment& base, const RunLayout& layout, const std::string& run_id) {
  Environment env = base;
  for (const char* k : {"RANK", "FAULTLINE_RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                        "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "FAULTLINE_EVENTS", "TORCHELASTIC_ERROR_FILE",
                        "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
                        "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_SIGNALS_TO_HANDLE"}) {
    env.erase(k);
  }
  env["FAULTLINE_RUN_DIR"] = layout.outDir();
  env["FAULTLINE_EVENTS_DIR"] = layout.ranksDir();
  env[kRunIdVar] = run_id;
  env[kSupervisorPidVar] = std::to_string(::getpid());
  addFlightRecorder(env, layout);
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

namespace {

// Whether a TCP listener could bind 127.0.0.1:port now; with port 0 the
// kernel picks one, and *bound says which.
Result<bool> canBind(int port, int* bound) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ErrorCode::kSystem, std::string("socket failed: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok && port == 0) return fail(ErrorCode::kSystem, std::string("bind 127.0.0.1:0 failed: ") + std::strerror(err));
  if (ok && bound) *bound = ntohs(addr.sin_port);
  return ok;
}

// The first port of the kernel's ephemeral range (net.ipv4.ip_local_port_range).
int ephemeralLow() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (in >> low >> high && low > 0) return low;
  return 32768;
}

}  // namespace

namespace {

// The pid a reservation file names; 0 when it names none.
pid_t ownerOf(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  return in >> pid && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

bool reservePort(int port) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / "faultline-ports";
  if (fs::create_directories(dir, ec)) {
    fs::permissions(dir, fs::perms::all | fs::perms::sticky_bit, ec);  // every user's runs share it, as /tmp
  }
  const std::string path = (dir / std::to_string(port)).string();
  // The file appears whole or not at all: written beside it, then linked in
  // place (link fails on an existing name, as O_EXCL would).
  const std::string me = std::to_string(::getpid());
  const std::string tmp = path + "." + me;
  const int fd = os::sys().open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return true;  // no reservation directory: the bind check alone decides
  const std::string line = me + "\n";
  const bool written = os::sys().write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  os::sys().close(fd);
  bool reserved = !written;  // unwritten: nowhere to reserve, the bind check alone decides
  // Two tries: the second after removing a file whose process has ended.
  for (int attempt = 0; written && attempt < 2; ++attempt) {
    if (::link(tmp.c_str(), path.c_str()) == 0) {
      reserved = true;
      break;
    }
    if (errno != EEXIST) {
      reserved = true;
      break;
    }
    const pid_t owner = ownerOf(path);
    if (owner > 0 && alive(owner)) break;  // this run's, or another live run's
    (void)os::sys().unlink(path.c_str());
  }
  (void)os::sys().unlink(tmp.c_str());
  return reserved;
}

// A port the kernel would hand out for bind(0) is free only until the next
// bind(0) or connect(): Gloo's pairs and every client socket of the tests and
// ranks running beside this one draw from that range, and one took a
// master port between our check and the TCPStore's listen (EADDRINUSE).
// A port below the ephemeral range is never handed out that way, so it stays
// free unless someone asks for it by number. Picked at random, two runs at
// once still met on one (two suites' slurm jobs on port 30754, each rank 0
// seeing the other's store): so the port is also reserved (reservePort)
// before its bind check, and no faultline run on this machine picks it again
// while this one lives.
Result<int> findFreePort() {
  constexpr int kFirst = 20000;  // above the well-known services (Slurm 6817-6819, ...)
  const int last = ephemeralLow() - 1;
  if (last - kFirst >= 1000) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> port(kFirst, last);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int p = port(pick);
      if (!reservePort(p)) continue;
      auto free = canBind(p, nullptr);
      if (free && *free) return p;
    }
  }
  int bound = 0;
  auto ok = canBind(0, &bound);
  if (!ok) return tl::unexpected(ok.error());
  return bound;
}

}  // namespace faultline::launch
