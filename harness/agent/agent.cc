// The agent's loop: start the child, forward stop signals, watch /proc for
// ranks and the link for changes, then check for survivors.
#include "harness/agent/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "harness/agent/agent_event.h"
#include "harness/agent/node_procs.h"
#include "harness/agent/slurm_task_env.h"
#include "harness/model/outcome.h"
#include "harness/model/run_layout.h"

extern char** environ;

namespace faultline::agent {

namespace {

constexpr int kPollMs = 50;
// How long a process of the run may take to finish dying after the child ends.
constexpr int64_t kSurvivorSettleMs = 1000;

int64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t monotonicMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

EnvMap currentEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env.emplace(std::string(*e, static_cast<size_t>(eq - *e)), std::string(eq + 1));
  }
  return env;
}

std::optional<std::string> envVar(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// One event, one write(2) to a file opened O_APPEND: lines never interleave.
class EventFile {
 public:
  EventFile(int fd, AgentIdentity id) : fd_(fd), id_(std::move(id)) {}
  ~EventFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  void write(const std::string& event, const nlohmann::json& fields) {
    const std::string line = agentEventLine(id_, nowNs(), event, fields);
    ssize_t n;
    do {
      n = ::write(fd_, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
  }

 private:
  int fd_;
  AgentIdentity id_;
};

std::string readOperstate(const std::string& ifname) {
  const int fd = ::open(("/sys/class/net/" + ifname + "/operstate").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "absent";
  char buf[64] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}

bool validNodeName(const std::string& node) {
  return !node.empty() && node != "." && node != ".." && node.find('/') == std::string::npos &&
         node.find('\0') == std::string::npos;
}

struct TrackedRank {
  int rank = 0;
  bool ended = false;
};

}  // namespace

std::string resolveNode(const AgentOptions& opts, const char* slurmd_nodename) {
  if (!opts.node.empty()) return opts.node;
  if (opts.slurm_task && slurmd_nodename) return slurmd_nodename;
  return {};
}

int runAgent(const AgentOptions& opts, std::ostream& err) {
  const EnvMap env = currentEnv();
  const std::string node = resolveNode(opts, std::getenv("SLURMD_NODENAME"));
  if (node.empty()) {
    err << "faultline agent: no node name (--node NAME, or SLURMD_NODENAME with --slurm-task)\n";
    return 2;
  }
  if (!validNodeName(node)) {
    err << "faultline agent: --node '" << node << "' is not a valid node name (no '/', not '.' or '..')\n";
    return 2;
  }
  std::string out = opts.out_dir;
  if (out.empty()) out = envVar(env, "FAULTLINE_RUN_DIR").value_or("");
  if (out.empty()) {
    err << "faultline agent: no run directory (--out OUT, or FAULTLINE_RUN_DIR)\n";
    return 2;
  }
  if (opts.command.empty()) {
    err << "faultline agent: no command given (faultline agent --node NAME [options] -- COMMAND [ARGS...])\n";
    return 2;
  }
  std::vector<std::pair<std::string, std::string>> overrides;
  std::optional<int> slurm_rank;
  std::optional<int> slurm_local_rank;
  if (opts.slurm_task) {
    auto mapped = slurmTaskEnv(env);
    if (!mapped) {
      err << "faultline agent: " << mapped.error().str() << "\n";
      return 2;
    }
    overrides = *mapped;
    slurm_rank = std::stoi(env.at("SLURM_PROCID"));
    slurm_local_rank = std::stoi(env.at("SLURM_LOCALID"));
  }
  const pid_t self = ::getpid();
  overrides.emplace_back("FAULTLINE_NODE", node);
  overrides.emplace_back("FAULTLINE_AGENT_PID", std::to_string(self));

  const RunLayout layout(out);
  std::error_code ec;
  std::filesystem::create_directories(layout.nodeDir(node), ec);
  if (ec) {
    err << "faultline agent: cannot create " << layout.nodeDir(node) << ": " << ec.message() << "\n";
    return 3;
  }
  const std::string events_path = layout.nodeAgentEvents(node, self);
  const int fd = ::open(events_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    err << "faultline agent: cannot open " << events_path << ": " << std::strerror(errno) << "\n";
    return 3;
  }
  EventFile events(fd, AgentIdentity{node, hostName(), self});

  nlohmann::json start = {{"command", opts.command}};
  if (!opts.link.empty()) start["link"] = opts.link;
  if (const auto job = envVar(env, "SLURM_JOB_ID")) start["slurm_job"] = *job;
  if (const auto step = envVar(env, "SLURM_STEP_ID")) start["slurm_step"] = *step;
  events.write("agent_start", start);

  // The stop signals and SIGCHLD arrive on a signalfd; the child gets the
  // mask and dispositions back before it runs COMMAND.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
  const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

  std::vector<std::string> child_env;
  EnvMap merged = env;
  for (const auto& [k, v] : overrides) merged[k] = v;
  for (const auto& [k, v] : merged) child_env.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : opts.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : child_env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const pid_t child = ::fork();
  if (child < 0) {
    const int e = errno;
    err << "faultline agent: fork failed: " << std::strerror(e) << "\n";
    events.write("agent_exit", {{"exit_code", 3}});
    return 3;
  }
  if (child == 0) {
    ::setpgid(0, 0);
    // The CLI ignores SIGPIPE (cli/main.cc); COMMAND gets the default, as
    // from a shell.
    ::signal(SIGPIPE, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    const std::string msg = "faultline agent: cannot run " + opts.command[0] + ": " + std::strerror(e) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(e == EACCES ? 126 : 127);
  }
  ::setpgid(child, child);  // also in the parent, so a signal forwarded at once reaches the group

  std::map<pid_t, TrackedRank> ranks;
  if (slurm_rank) {
    ranks[child] = {*slurm_rank, false};
    nlohmann::json f = {{"rank", *slurm_rank}, {"pid", child}};
    if (slurm_local_rank) f["local_rank"] = *slurm_local_rank;
    events.write("rank_start", f);
  }
  const std::set<std::string> rank_vars = {"RANK", "LOCAL_RANK"};
  // Descendants are found by polling: a rank seen once keeps its pid; a
  // process that has not exec'd yet (no RANK) is read again next time.
  const auto scanRanks = [&](bool final_pass) {
    auto procs = scanProcesses();
    std::set<pid_t> alive;
    for (const auto& p : procs) {
      if (p.state != 'Z') alive.insert(p.pid);
    }
    if (!opts.slurm_task && !final_pass) {
      // Only what is below the agent is read further.
      std::map<pid_t, pid_t> parent;
      for (const auto& p : procs) parent[p.pid] = p.ppid;
      std::vector<ProcInfo> below;
      for (auto& p : procs) {
        pid_t up = p.ppid;
        for (int depth = 0; depth < 4096 && up > 0 && up != self; ++depth) {
          const auto it = parent.find(up);
          up = it == parent.end() ? 0 : it->second;
        }
        if (up == self && p.state != 'Z' && readEnviron(p, rank_vars)) below.push_back(p);
        else if (up == self) below.push_back(p);
      }
      for (const auto& r : ranksBelow(below, self)) {
        if (ranks.count(r.pid)) continue;
        ranks[r.pid] = {r.rank, false};
        nlohmann::json f = {{"rank", r.rank}, {"pid", r.pid}};
        if (r.local_rank) f["local_rank"] = *r.local_rank;
        events.write("rank_start", f);
      }
    }
    for (auto& [pid, r] : ranks) {
      if (r.ended || pid == child || alive.count(pid)) continue;
      r.ended = true;
      events.write("rank_exit", {{"rank", r.rank}, {"pid", pid}, {"gone", true}});
    }
  };

  std::string link_state;
  const auto sampleLink = [&] {
    if (opts.link.empty()) return;
    const std::string now = readOperstate(opts.link);
    if (now == link_state) return;
    nlohmann::json f = {{"ifname", opts.link}, {"state", now}};
    if (!link_state.empty()) f["previous"] = link_state;
    events.write("link", f);
    link_state = now;
  };

  std::optional<int> child_status;
  int64_t next_tick = 0;
  while (!child_status) {
    const int64_t now = monotonicMs();
    if (now >= next_tick) {
      sampleLink();
      scanRanks(false);
      next_tick = now + kPollMs;
    }
    pollfd pfd{sfd, POLLIN, 0};
    const int timeout = static_cast<int>(std::max<int64_t>(0, next_tick - monotonicMs()));
    if (sfd >= 0) {
      ::poll(&pfd, 1, timeout);
    } else {
      ::usleep(static_cast<useconds_t>(timeout) * 1000);
    }
    signalfd_siginfo si{};
    while (sfd >= 0 && ::read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      const int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      // The whole group, as a terminal's Ctrl-C reaches every process of a job.
      if (::kill(-child, sig) != 0) ::kill(child, sig);
      events.write("signal", {{"signal", signalName(sig)}, {"forwarded_to", child}});
    }
    int status = 0;
    pid_t w;
    do {
      w = ::waitpid(child, &status, WNOHANG);
    } while (w < 0 && errno == EINTR);
    if (w == child) child_status = status;
    if (w < 0 && errno == ECHILD) child_status = 0;  // cannot happen: it is ours
  }

  nlohmann::json exit_fields = waitStatusFields(*child_status);
  if (const auto it = ranks.find(child); it != ranks.end()) {
    it->second.ended = true;
    nlohmann::json f = {{"rank", it->second.rank}, {"pid", child}};
    f.update(exit_fields);
    events.write("rank_exit", f);
  }
  nlohmann::json cf = {{"pid", child}};
  cf.update(exit_fields);
  events.write("child_exit", cf);
  sampleLink();
  scanRanks(true);

  // The node's own teardown proof: what of this run and node is still there.
  // The child's group got the stop signal with the child; a member still in its
  // exit path when the child is reaped is not a survivor, so one that is still
  // there is looked at again until kSurvivorSettleMs have passed.
  const std::set<std::string> run_vars = {"FAULTLINE_RUN_ID", "FAULTLINE_NODE", "FAULTLINE_AGENT_PID"};
  const auto scanSurvivors = [&] {
    std::vector<ProcInfo> readable;
    for (auto& p : scanProcesses()) {
      if (p.pid != self && p.state != 'Z' && readEnviron(p, run_vars)) readable.push_back(std::move(p));
    }
    return survivorsAmong(readable, envVar(env, "FAULTLINE_RUN_ID"), node, self);
  };
  const int64_t settle_until = monotonicMs() + kSurvivorSettleMs;
  std::vector<ProcInfo> left = scanSurvivors();
  while (!left.empty() && monotonicMs() < settle_until) {
    ::usleep(static_cast<useconds_t>(kPollMs) * 1000 / 5);
    left = scanSurvivors();
  }
  nlohmann::json survivors = nlohmann::json::array();
  for (const auto& p : left) survivors.push_back({{"pid", p.pid}, {"cmdline", readCmdline(p.pid)}});
  events.write("survivors", {{"processes", survivors}});

  const int code = exitStatusFor(*child_status);
  events.write("agent_exit", {{"exit_code", code}});
  // The stop signals stay blocked: one still pending (Slurm sends SIGTERM to
  // every task process) must not turn the child's status into the agent's death.
  if (sfd >= 0) ::close(sfd);
  return code;
}

}  // namespace faultline::agent
